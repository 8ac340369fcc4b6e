#include "ct_pack_quantized.h"

#include <cmath>
#include <cstring>

#include "bit_fields.h"
#include "encoder_support.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

bool isIntMethod(quant::Method m) {
    return m == quant::Method::Rtn || m == quant::Method::Gptq || m == quant::Method::Awq;
}

float fixedZero(const quant::QuantizedLinear& q) { return static_cast<float>(1 << (q.bits - 1)); }

// Symmetric storage needs every zero at 2^(b-1); any other grid keeps its zero points.
bool storesSymmetric(const quant::QuantizedLinear& q) { return (q.zeros.array() == fixedZero(q)).all(); }

// One group per row is the channel strategy, whatever g_idx says (every column is in group 0).
bool perChannel(const quant::QuantizedLinear& q) { return q.scales.cols() == 1; }

std::int64_t wordsFor(std::int64_t count, int bits) { return (count * bits + 31) / 32; }

std::string gridProblem(const quant::QuantizedLinear& q) {
    const float maxCode = static_cast<float>((1 << q.bits) - 1);
    for (Eigen::Index i = 0; i < q.zeros.size(); ++i)
        if (const float z = q.zeros.data()[i]; z != std::nearbyint(z) || z < 0.0f || z > maxCode)
            return "zero point " + std::to_string(z) + " is not an integer in 0.." +
                   std::to_string(static_cast<int>(maxCode));
    for (Eigen::Index i = 0; i < q.scales.size(); ++i)
        if (!std::isfinite(q.scales.data()[i])) return "a scale is not finite";
    for (const std::uint8_t c : q.codes)
        if (c > maxCode) return "a code " + std::to_string(c) + " does not fit " + std::to_string(q.bits) + " bits";
    return "";
}

std::vector<std::uint32_t> packRows(const std::vector<std::uint8_t>& codes, std::int64_t rows, std::int64_t cols,
                                    int bits) {
    const std::int64_t stride = wordsFor(cols, bits);
    std::vector<std::uint32_t> words(static_cast<std::size_t>(rows * stride), 0u);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            setBitField(words.data() + r * stride, 1, static_cast<std::uint64_t>(c * bits), bits,
                        codes[static_cast<std::size_t>(r * cols + c)]);
    return words;
}

// Zero fields [rows, groups] packed along the rows: word w of column g holds rows [w*32/b, ...).
std::vector<std::uint32_t> packZeroColumns(const MatrixF& zeros, int bits) {
    const std::int64_t groups = zeros.cols();
    std::vector<std::uint32_t> words(static_cast<std::size_t>(wordsFor(zeros.rows(), bits) * groups), 0u);
    for (std::int64_t g = 0; g < groups; ++g)
        for (std::int64_t r = 0; r < zeros.rows(); ++r)
            setBitField(words.data() + g, static_cast<std::size_t>(groups), static_cast<std::uint64_t>(r * bits), bits,
                        static_cast<std::uint32_t>(zeros(r, g)));
    return words;
}

}  // namespace

std::string ctPackQuantizedProblem(const quant::QuantizedLinear& q) {
    if (!isIntMethod(q.method) || q.codeKind != quant::CodeKind::UnsignedInt)
        return "pack-quantized holds integer grids (RTN, GPTQ, AWQ), and this linear was quantized with " +
               std::string(quant::methodName(q.method));
    if (q.bits != 2 && q.bits != 4 && q.bits != 8)
        return std::to_string(q.bits) +
               "-bit codes are packed differently by different compressed-tensors releases; 2, 4 and 8 bits are not";
    if (q.rows <= 0 || q.cols <= 0) return "the weight " + shapeOf(q) + " is empty";
    if (q.blockRows != 1 || (q.gIdx.empty() && q.blockCols <= 0))
        return "its scales are not one per output row and group";
    const std::int64_t groups = q.gIdx.empty() ? (q.cols + q.blockCols - 1) / q.blockCols : q.scales.cols();
    if (q.codes.size() != static_cast<std::size_t>(q.rows * q.cols) || q.scales.rows() != q.rows ||
        q.scales.cols() != groups || q.zeros.rows() != q.rows || q.zeros.cols() != groups)
        return "its codes, scales and zeros do not fit the weight " + shapeOf(q);
    for (const std::int32_t g : q.gIdx)
        if (g < 0 || g >= groups) return "act-order group index " + std::to_string(g) + " has no scale";
    return gridProblem(q);
}

std::vector<EncodedTensor> encodeCtPackQuantized(const std::string& prefix, const quant::QuantizedLinear& q) {
    std::vector<EncodedTensor> out;
    out.push_back(wordTensor(prefix + ".weight_packed", {q.rows, wordsFor(q.cols, q.bits)},
                             packRows(q.codes, q.rows, q.cols, q.bits)));
    out.push_back(matrixTensor(prefix + ".weight_scale", io::DType::F32, {q.rows, q.scales.cols()}, q.scales));
    EncodedTensor shape{prefix + ".weight_shape", io::DType::I64, {2}, std::vector<std::byte>(16)};
    const std::int64_t dims[2] = {q.rows, q.cols};
    std::memcpy(shape.bytes.data(), dims, 16);  // little-endian host, as the readers assume
    out.push_back(std::move(shape));
    if (!storesSymmetric(q))
        out.push_back(wordTensor(prefix + ".weight_zero_point", {wordsFor(q.rows, q.bits), q.zeros.cols()},
                                 packZeroColumns(q.zeros, q.bits)));
    if (!q.gIdx.empty() && !perChannel(q)) out.push_back(int32Tensor(prefix + ".weight_g_idx", q.gIdx));
    return out;
}

nlohmann::json ctPackQuantizedArgs(const quant::QuantizedLinear& q) {
    const bool channel = perChannel(q);
    return {
        {"num_bits", q.bits},
        {"type", "int"},
        {"symmetric", storesSymmetric(q)},
        {"group_size", channel ? nlohmann::json(nullptr) : nlohmann::json(q.gIdx.empty() ? q.blockCols : q.groupSize)},
        {"strategy", channel ? "channel" : "group"},
        {"dynamic", false},
        {"actorder", q.gIdx.empty() || channel ? nlohmann::json(nullptr) : nlohmann::json("group")},
        {"block_structure", nullptr},
        {"observer", "minmax"},
        {"observer_kwargs", nlohmann::json::object()}};
}

}  // namespace qs::formats::detail
