#pragma once
// EXL3 (exllamav3) quantized linears, read-only (docs/formats/exl3.md).
//
// A linear with K input and N output features stores, per 16x16 tile of the rotated weight
// W_hat [K, N], a tail-biting bit stream of 256 symbols of `bits` bits each: `trellis` I16
// [K/16, N/16, 16*bits]. Weight s of a tile (in stream order) is codebook(state_s), state_s being the
// 16 bits of the circular stream that end with symbol s; the tensor-core permutation places stream
// position s at row-major tile element perm[s]. The layer's weight is
//   W [K, N] = diag(suh) * H * W_hat * H * diag(svh),   H = blockdiag(Hadamard-128 / sqrt(128)),
// and QuantScope returns its transpose, [out, in] = [N, K].
//
// Upstream: turboderp-org/exllamav3 exllamav3/modules/quant/exl3.py (LinearEXL3.get_weight_tensor,
// unpack_bf), exllamav3_ext/quant/codebook.cuh (decode_3inst), exl3_dq.cuh (dq), pack.cu
// (pack_trellis, pack_signs), exl3_lib/quantize.py (tensor_core_perm, preapply_had_l/r).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/checkpoint.h"
#include "qs/matrix.h"

namespace qs::formats {

// The procedural codebooks; a `mcg` or `mul1` tensor beside `trellis` selects the last two.
enum class Exl3Codebook { ThreeInst, Mcg, Mul1 };
std::string_view exl3CodebookName(Exl3Codebook cb);  // "3inst", "mcg", "mul1"

inline constexpr std::uint32_t kExl3McgMultiplier = 0xCBAC1FEDu;   // the value of a `mcg` tensor
inline constexpr std::uint32_t kExl3Mul1Multiplier = 0x83DCD12Du;  // the value of a `mul1` tensor

// The f16 value (returned as f32) that the CUDA kernels compute for a 16-bit state: the sum of two
// f16 halves (3inst, mcg) or an f16 fused multiply-add (mul1), rounded to f16 once.
float exl3CodebookValue(Exl3Codebook cb, std::uint16_t state);
// exl3CodebookValue for all 65536 states, built once per codebook (thread-safe).
const std::vector<float>& exl3CodebookTable(Exl3Codebook cb);

// Stream position s of a tile holds row-major tile element perm[s] (row = K offset, col = N offset).
const std::array<std::uint16_t, 256>& exl3TensorCorePermutation();

// The states of one tile. `tile` holds its 16*bits stored I16 words (as little-endian u16 values).
struct Exl3TileStates {
    std::uint16_t start = 0;                  // the tail-biting start: the 16 bits before symbol 0
    std::array<std::uint16_t, 256> states{};  // state after each symbol, in stream order
};
Exl3TileStates exl3TileStates(const std::uint16_t* tile, int bits);

// One EXL3 linear as stored, with the sign/scale vectors expanded to f32.
struct Exl3Linear {
    std::int64_t inFeatures = 0;   // K
    std::int64_t outFeatures = 0;  // N
    int bits = 0;                  // 1..8 bits per weight
    Exl3Codebook codebook = Exl3Codebook::ThreeInst;
    bool packedSigns = false;            // suh/svh came from the older packed `su`/`sv` sign bits
    std::vector<std::uint16_t> trellis;  // [K/16, N/16, 16*bits] as stored
    std::vector<float> suh;              // [K] input sign x scale
    std::vector<float> svh;              // [N] output sign x scale
};

// Reads the linear "<prefix>.trellis" with its suh/svh (or su/sv), mcg/mul1; `quantConfig` is the
// normalised quantization config, whose optional `tensor_storage` entry for the prefix must agree with
// the tensors. Throws qs::Error naming the file and tensor for anything exllamav3 would not load.
Exl3Linear readExl3Linear(const io::Checkpoint& checkpoint, std::string_view prefix, const nlohmann::json& quantConfig);

// W_hat, the codebook values before the rotations, [K, N] as exllamav3's reconstruct kernel gives it.
MatrixF exl3InnerWeight(const Exl3Linear& linear);
// The layer's weight as QuantScope stores linears: f32 [out, in] = W^T. Throws qs::Error when the
// parts do not fit together (K or N not a multiple of 128, bits outside 1..8, vector lengths).
MatrixF exl3Dequantize(const Exl3Linear& linear);

}  // namespace qs::formats
