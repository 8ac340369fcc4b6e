#pragma once
// QuantizedLinear: the result of quantizing one linear layer W [out_features, in_features], in
// unpacked form (one code per weight). Formats pack and unpack it at their edge (core/formats).
//
// Every method except the trellis stores value = decode(code) * scale (- zero * scale for integer
// codes), with one scale per block of the weight:
//   element (r, c) uses scales(r / blockRows, groupOf(c)),  groupOf(c) = gIdx[c] if gIdx is set,
//   else c / blockCols.
//   int groups:  blockRows 1, blockCols = group size (cols when per row)
//   FP8 blocks:  blockRows 128, blockCols 128; per channel: 1, cols; per tensor: rows, cols
//   MXFP4 1x32, NVFP4 1x16 (times globalScale), NF4 1x64 (absmax)
// The ggml types (GGUF methods) are the exception: they keep the encoded blocks themselves
// (CodeKind::GgmlBlocks), so what is measured is exactly what a GGUF file stores.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/ggml_type.h"
#include "qs/matrix.h"
#include "qs/quant/activation_quant.h"

namespace qs::quant {

enum class Method { Rtn, Gptq, Awq, Fp8, Mxfp4, Nvfp4, Nf4, Trellis, Ggml };
// "rtn", "gptq", "awq", "fp8", "mxfp4", "nvfp4", "nf4", "trellis", "ggml"
std::string_view methodName(Method m);

enum class CodeKind {
    UnsignedInt,  // value = scale * (code - zero); code in 0 .. 2^bits-1
    E4M3,         // value = e4m3(code) * scale
    E2M1,         // value = e2m1(code) * scale * globalScale (FP4: MXFP4, NVFP4)
    Nf4,          // value = NF4_TABLE[code] * absmax
    Trellis,      // see TrellisParts
    GgmlBlocks,   // `blocks` holds the rows in ggml type `ggmlType`, decoded by io::ggmlDecodeRow
};

// The trellis (QTIP-style bitshift) parts: per group of `groupSize` weights of the Hadamard-rotated
// row, an L-bit start state and one K-bit symbol per following weight; the state after each step is
// ((state << K) | symbol) & (2^L - 1) and the weight is scale * codebook(state).
struct TrellisParts {
    int L = 0;
    int K = 0;
    int groupSize = 256;
    std::uint64_t rotationSeed = 0;     // seeded random signs of the Hadamard rotation
    std::vector<std::uint32_t> starts;  // one per group, row-major over [rows, cols / groupSize]
};

struct QuantizedLinear {
    Method method = Method::Rtn;
    CodeKind codeKind = CodeKind::UnsignedInt;
    std::int64_t rows = 0;  // out_features
    std::int64_t cols = 0;  // in_features
    int bits = 4;           // bits per code
    int groupSize = -1;     // as configs say it: -1 = one group per row (int methods)
    bool symmetric = false;

    int blockRows = 1;
    int blockCols = 0;
    std::vector<std::uint8_t> codes;  // rows * cols, row-major; trellis: the K-bit symbols
    MatrixF scales;                   // [ceil(rows / blockRows), number of groups]
    MatrixF zeros;                    // integer-valued, same shape as scales; empty unless UnsignedInt
    std::vector<std::int32_t> gIdx;   // [cols]: act-order group of each input column; empty = c / blockCols
    float globalScale = 1.0f;         // NVFP4's per-tensor FP32 scale

    // AWQ: the layer computes x * diag(1/s) through W * diag(s); the effective weight is
    // dequantize() with column c divided by inputScales[c]. Empty = none.
    std::vector<float> inputScales;

    // NF4 double quantization: scales hold the dequantized absmax; these hold how they are stored
    // (8-bit codes into the dynamic map, one f32 scale per 256 blocks, and the subtracted mean).
    std::vector<std::uint8_t> scaleCodes;
    std::vector<float> scaleScales;
    float scaleOffset = 0.0f;

    TrellisParts trellis;

    // What the serving engine quantizes beside the weight (activation_quant.h): this linear's input
    // (W8A8, W4A4; none for weight-only), and for k_proj / v_proj the FP8 KV cache's k_scale / v_scale
    // of their rotated output (0: the cache keeps the model's dtype).
    ActivationQuant input;
    float cacheScale = 0.0f;

    // GgmlBlocks: rows * io::ggmlRowBytes(ggmlType, cols) bytes, row after row, as a GGUF tensor
    // stores them; codes and scales stay empty.
    io::GgmlType ggmlType = io::GgmlType::F32;
    std::vector<std::uint8_t> blocks;
    // The importance the blocks were encoded with: the calibration inputs' Σx² per input column and
    // the number of inputs summed (llama.cpp's imatrix entry of this tensor). Empty without calibration.
    std::vector<float> inputSumSquares;
    std::int64_t inputCount = 0;

    // Measurements (NaN when not measured).
    double outputError = std::numeric_limits<double>::quiet_NaN();  // relative ||(W - Q) X|| / ||W X||
    double gptqLoss = std::numeric_limits<double>::quiet_NaN();     // GPTQModel's logged loss
    double outputMse = std::numeric_limits<double>::quiet_NaN();    // mean over tokens and outputs of ((W - Q) x)^2
    double dampPercent = std::numeric_limits<double>::quiet_NaN();  // GPTQ: damping used (after auto-increase)
    double seconds = 0.0;

    // Named constructors: the header of each kind of result (method, code kind, shape, bits, group size,
    // symmetry, scale blocks) set in one call, so that no field is forgotten. The parts (codes, scales,
    // zeros, ...) are the caller's to fill; allocateParts() sizes them from the header.
    //
    // Integer codes, one (scale, zero) per row and group of `groupSize` inputs (-1: one group per row).
    static QuantizedLinear intGrid(Method method, std::int64_t rows, std::int64_t cols, int bits, int groupSize,
                                   bool symmetric);
    // Integer codes, one (scale, zero) per blockRows x blockCols block; groupSize as the format's config
    // states it (compressed-tensors' tensor, channel, group and block strategies).
    static QuantizedLinear intBlocks(Method method, std::int64_t rows, std::int64_t cols, int bits, bool symmetric,
                                     int groupSize, int blockRows, int blockCols);
    // E4M3 codes, one scale per blockRows x blockCols block; groupSize: the block's width when scaled by
    // blocks or groups, -1 per channel or tensor.
    static QuantizedLinear fp8(std::int64_t rows, std::int64_t cols, int blockRows, int blockCols, int groupSize);
    // E2M1 codes, one scale per `blockSize` inputs of a row: MXFP4 (32), NVFP4 (16, times globalScale),
    // bitsandbytes FP4 (Method::Nf4, the family it belongs to).
    static QuantizedLinear fp4(Method method, std::int64_t rows, std::int64_t cols, int blockSize);
    // NF4 indices, one absmax per `blockSize` inputs of a row.
    static QuantizedLinear nf4(std::int64_t rows, std::int64_t cols, int blockSize);
    // Trellis symbols of K bits, L-bit start states and one scale per group of `groupSize` rotated inputs.
    static QuantizedLinear trellisCodes(std::int64_t rows, std::int64_t cols, int L, int K, int groupSize,
                                        std::uint64_t rotationSeed);
    // codes [rows * cols] (zero), scales [ceil(rows / blockRows), ceil(cols / blockCols)], zeros of the same
    // shape for integer codes, one trellis start state per scale for the trellis.
    void allocateParts();

    int groupOf(std::int64_t col) const {
        return gIdx.empty() ? static_cast<int>(col / blockCols) : gIdx[static_cast<std::size_t>(col)];
    }
    MatrixF dequantize() const;  // the f32 weight the parts decode to [rows, cols] (AWQ: of W * diag(s))
    MatrixF effectiveWeight()
        const;                     // dequantize() with column c divided by inputScales[c] (= dequantize() without them)
    double bitsPerWeight() const;  // codes + scales + zeros (+ trellis start states)
    std::uint64_t bytes() const;   // storage of the exported layer
};

}  // namespace qs::quant
