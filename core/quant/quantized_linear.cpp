#include "qs/quant/quantized_linear.h"

#include <array>
#include <string>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/quant/nf4.h"      // nf4Table()
#include "qs/quant/trellis.h"  // trellisDecode()

#include "fp4_blocks.h"  // dequantizeE2m1Blocks()

namespace qs::quant {

namespace {

// The element decoders of each code kind; value = decode(code) * scale (- zero * scale for ints).
template <typename Decode>
MatrixF decodeScaled(const QuantizedLinear& q, Decode decode) {
    MatrixF w(q.rows, q.cols);
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < q.rows; ++r) {
        const std::int64_t sr = r / q.blockRows;
        const std::uint8_t* codes = q.codes.data() + r * q.cols;
        for (std::int64_t c = 0; c < q.cols; ++c) w(r, c) = decode(codes[c], sr, q.groupOf(c));
    }
    return w;
}

MatrixF ggmlDecode(const QuantizedLinear& q) {
    if (!io::ggmlTypeTraits(q.ggmlType).decodes)  // checked here: the loop below must not throw
        throw Error("QuantizedLinear: ggml type " + std::string(io::ggmlTypeTraits(q.ggmlType).name) +
                    " is not decoded by QuantScope");
    const std::size_t rowBytes = q.rows > 0 ? io::ggmlRowBytes(q.ggmlType, q.cols) : 0;
    if (q.rows < 0 || q.blocks.size() != rowBytes * static_cast<std::size_t>(q.rows))
        throw Error("QuantizedLinear: " + std::to_string(q.blocks.size()) + " bytes of " +
                    std::string(io::ggmlTypeTraits(q.ggmlType).name) + " for a [" + std::to_string(q.rows) + ", " +
                    std::to_string(q.cols) + "] weight");
    MatrixF w(q.rows, q.cols);
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < q.rows; ++r)
        io::ggmlDecodeRow(q.ggmlType, q.blocks.data() + static_cast<std::size_t>(r) * rowBytes, w.data() + r * q.cols,
                          q.cols);
    return w;
}

void checkParts(const QuantizedLinear& q) {
    if (q.rows < 0 || q.cols < 0 || q.codes.size() != static_cast<std::size_t>(q.rows * q.cols))
        throw Error("QuantizedLinear: " + std::to_string(q.codes.size()) + " codes for a [" + std::to_string(q.rows) +
                    ", " + std::to_string(q.cols) + "] weight");
    if (q.blockRows <= 0 || (q.gIdx.empty() && q.blockCols <= 0)) throw Error("QuantizedLinear: bad block shape");
    if (!q.gIdx.empty() && q.gIdx.size() != static_cast<std::size_t>(q.cols))
        throw Error("QuantizedLinear: g_idx has " + std::to_string(q.gIdx.size()) + " entries for " +
                    std::to_string(q.cols) + " columns");
    const std::int64_t scaleRows = (q.rows + q.blockRows - 1) / q.blockRows;
    if (q.rows > 0 && q.scales.rows() != scaleRows)
        throw Error("QuantizedLinear: scales have the wrong number of rows");
    for (std::int64_t c = 0; c < q.cols; ++c) {
        const int g = q.groupOf(c);
        if (g < 0 || g >= q.scales.cols())
            throw Error("QuantizedLinear: column " + std::to_string(c) + " has no scale");
    }
    if (q.codeKind == CodeKind::UnsignedInt && (q.zeros.rows() != q.scales.rows() || q.zeros.cols() != q.scales.cols()))
        throw Error("QuantizedLinear: zeros and scales differ in shape");
}

}  // namespace

std::string_view methodName(Method m) {
    switch (m) {
        case Method::Rtn: return "rtn";
        case Method::Gptq: return "gptq";
        case Method::Awq: return "awq";
        case Method::Fp8: return "fp8";
        case Method::Mxfp4: return "mxfp4";
        case Method::Nvfp4: return "nvfp4";
        case Method::Nf4: return "nf4";
        case Method::Trellis: return "trellis";
        case Method::Ggml: return "ggml";
    }
    return "unknown";
}

namespace {

// Every header field in one place; the named constructors differ only in what they pass.
QuantizedLinear header(Method method, CodeKind kind, std::int64_t rows, std::int64_t cols, int bits, bool symmetric,
                       int groupSize, int blockRows, int blockCols) {
    QuantizedLinear q;
    q.method = method;
    q.codeKind = kind;
    q.rows = rows;
    q.cols = cols;
    q.bits = bits;
    q.groupSize = groupSize;
    q.symmetric = symmetric;
    q.blockRows = blockRows;
    q.blockCols = blockCols;
    return q;
}

}  // namespace

QuantizedLinear QuantizedLinear::intBlocks(Method method, std::int64_t rows, std::int64_t cols, int bits,
                                           bool symmetric, int groupSize, int blockRows, int blockCols) {
    return header(method, CodeKind::UnsignedInt, rows, cols, bits, symmetric, groupSize, blockRows, blockCols);
}

QuantizedLinear QuantizedLinear::intGrid(Method method, std::int64_t rows, std::int64_t cols, int bits, int groupSize,
                                         bool symmetric) {
    return intBlocks(method, rows, cols, bits, symmetric, groupSize, 1,
                     groupSize < 0 ? static_cast<int>(cols) : groupSize);
}

QuantizedLinear QuantizedLinear::fp8(std::int64_t rows, std::int64_t cols, int blockRows, int blockCols,
                                     int groupSize) {
    return header(Method::Fp8, CodeKind::E4M3, rows, cols, 8, true, groupSize, blockRows, blockCols);
}

QuantizedLinear QuantizedLinear::fp4(Method method, std::int64_t rows, std::int64_t cols, int blockSize) {
    return header(method, CodeKind::E2M1, rows, cols, 4, true, blockSize, 1, blockSize);
}

QuantizedLinear QuantizedLinear::nf4(std::int64_t rows, std::int64_t cols, int blockSize) {
    return header(Method::Nf4, CodeKind::Nf4, rows, cols, 4, true, blockSize, 1, blockSize);
}

QuantizedLinear QuantizedLinear::trellisCodes(std::int64_t rows, std::int64_t cols, int L, int K, int groupSize,
                                              std::uint64_t rotationSeed) {
    QuantizedLinear q = header(Method::Trellis, CodeKind::Trellis, rows, cols, K, true, groupSize, 1, groupSize);
    q.trellis = {.L = L, .K = K, .groupSize = groupSize, .rotationSeed = rotationSeed, .starts = {}};
    return q;
}

void QuantizedLinear::allocateParts() {
    if (blockRows <= 0 || blockCols <= 0) throw Error("QuantizedLinear: bad block shape");
    codes.resize(static_cast<std::size_t>(rows * cols));
    scales.resize((rows + blockRows - 1) / blockRows, (cols + blockCols - 1) / blockCols);
    if (codeKind == CodeKind::UnsignedInt) zeros.resize(scales.rows(), scales.cols());
    if (codeKind == CodeKind::Trellis) trellis.starts.resize(static_cast<std::size_t>(scales.size()));
}

MatrixF QuantizedLinear::dequantize() const {
    if (codeKind == CodeKind::Trellis) return trellisDecode(*this);
    if (codeKind == CodeKind::GgmlBlocks) return ggmlDecode(*this);
    checkParts(*this);
    switch (codeKind) {
        case CodeKind::UnsignedInt:
            return decodeScaled(*this, [this](std::uint8_t code, std::int64_t sr, int g) {
                return (static_cast<float>(code) - zeros(sr, g)) * scales(sr, g);
            });
        case CodeKind::E4M3:
            return decodeScaled(*this, [this](std::uint8_t code, std::int64_t sr, int g) {
                return io::e4m3ToF32(code) * scales(sr, g);
            });
        case CodeKind::E2M1: {  // the one E2M1 decoder: the Job's weights and every FP4 reader's
            MatrixF w(rows, cols);
            detail::dequantizeE2m1Blocks(*this, w.data(), "QuantizedLinear");
            return w;
        }
        case CodeKind::Nf4: {
            const std::array<float, 16>& table = nf4Table();
            return decodeScaled(*this, [this, &table](std::uint8_t code, std::int64_t sr, int g) {
                return table[code & 0xF] * scales(sr, g);
            });
        }
        case CodeKind::Trellis:
        case CodeKind::GgmlBlocks: break;
    }
    throw Error("QuantizedLinear: unknown code kind");
}

MatrixF QuantizedLinear::effectiveWeight() const {
    MatrixF w = dequantize();
    if (inputScales.empty()) return w;
    if (inputScales.size() != static_cast<std::size_t>(cols))
        throw Error("QuantizedLinear: inputScales has " + std::to_string(inputScales.size()) + " entries for " +
                    std::to_string(cols) + " columns");
    const Eigen::Map<const Eigen::RowVectorXf> s(inputScales.data(), cols);
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) w.row(r).array() /= s.array();  // row-major: contiguous rows
    return w;
}

namespace {

// Every stored bit of the exported layer (codes and their scales; the per-weight view is this
// divided by rows * cols). Counted from the parts, so partial groups and blocks come out right.
double storedBits(const QuantizedLinear& q) {
    const double weights = static_cast<double>(q.rows) * static_cast<double>(q.cols);
    const double scaleCount = static_cast<double>(q.scales.size());
    switch (q.method) {
        case Method::Rtn:
        case Method::Gptq:
        case Method::Awq: {
            // bits per code, a 16-bit scale and (asymmetric) a bits-wide zero per group; act-order's
            // g_idx is 32 bits per input column.
            const double zeroBits = q.symmetric ? 0.0 : q.bits;
            const double gIdxBits = q.gIdx.empty() ? 0.0 : 32.0 * static_cast<double>(q.cols);
            return weights * q.bits + scaleCount * (16.0 + zeroBits) + gIdxBits;
        }
        case Method::Fp8: return weights * 8.0 + scaleCount * 32.0;          // f32 scale per block / channel / tensor
        case Method::Mxfp4: return weights * 4.0 + scaleCount * 8.0;         // E8M0 per 32
        case Method::Nvfp4: return weights * 4.0 + scaleCount * 8.0 + 32.0;  // E4M3 per 16, f32 per tensor
        case Method::Nf4:
            if (q.scaleCodes.empty()) return weights * 4.0 + scaleCount * 32.0;  // f32 absmax per 64
            // double quantization: 8-bit absmax codes, one f32 scale per 256 of them
            return weights * 4.0 + static_cast<double>(q.scaleCodes.size()) * 8.0 +
                   static_cast<double>(q.scaleScales.size()) * 32.0;
        case Method::Trellis: {
            // per group: an L-bit start state, K bits for each following weight, an f16 scale
            const TrellisParts& t = q.trellis;
            const double groups = static_cast<double>(t.starts.size());
            return groups * (t.L + static_cast<double>(t.K) * (t.groupSize - 1) + 16.0);
        }
        case Method::
            Ggml:  // the blocks hold their scales; sized from the header, as they may be on disk (a header alone)
            return 8.0 * static_cast<double>(q.rows) * static_cast<double>(io::ggmlRowBytes(q.ggmlType, q.cols));
    }
    return 0.0;
}

}  // namespace

double QuantizedLinear::bitsPerWeight() const {
    const double weights = static_cast<double>(rows) * static_cast<double>(cols);
    return weights > 0 ? storedBits(*this) / weights : 0.0;
}

std::uint64_t QuantizedLinear::bytes() const { return static_cast<std::uint64_t>((storedBits(*this) + 7.0) / 8.0); }

}  // namespace qs::quant
