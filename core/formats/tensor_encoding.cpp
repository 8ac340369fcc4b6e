#include "tensor_encoding.h"

#include <cstring>

#include "qs/error.h"

namespace qs::formats::detail {

namespace {

std::int64_t elementCount(const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

EncodedTensor emptyTensor(std::string name, io::DType dtype, std::vector<std::int64_t> shape) {
    EncodedTensor t;
    t.name = std::move(name);
    t.dtype = dtype;
    t.bytes.resize(static_cast<std::size_t>(elementCount(shape)) * io::dtypeSize(dtype));
    t.shape = std::move(shape);
    return t;
}

}  // namespace

EncodedTensor wordTensor(std::string name, std::vector<std::int64_t> shape, const std::vector<std::uint32_t>& words) {
    auto t = emptyTensor(std::move(name), io::DType::I32, std::move(shape));
    if (t.bytes.size() != words.size() * 4) throw Error(t.name + ": packed words do not fill the tensor's shape");
    std::memcpy(t.bytes.data(), words.data(), t.bytes.size());  // little-endian host, as the readers assume
    return t;
}

EncodedTensor floatTensor(std::string name, io::DType dtype, std::vector<std::int64_t> shape, const float* values) {
    auto t = emptyTensor(std::move(name), dtype, std::move(shape));
    io::convertFromF32(dtype, values, static_cast<std::size_t>(elementCount(t.shape)), t.bytes.data());
    return t;
}

EncodedTensor matrixTensor(std::string name, io::DType dtype, std::vector<std::int64_t> shape, const MatrixF& m) {
    if (elementCount(shape) != m.size()) throw Error(name + ": " + std::to_string(m.size()) + " values for its shape");
    return floatTensor(std::move(name), dtype, std::move(shape), m.data());
}

EncodedTensor byteTensor(std::string name, io::DType dtype, std::vector<std::int64_t> shape,
                         const std::vector<std::uint8_t>& bytes) {
    auto t = emptyTensor(std::move(name), dtype, std::move(shape));
    if (t.bytes.size() != bytes.size())
        throw Error(t.name + ": " + std::to_string(bytes.size()) + " bytes for its shape");
    std::memcpy(t.bytes.data(), bytes.data(), bytes.size());
    return t;
}

EncodedTensor int32Tensor(std::string name, const std::vector<std::int32_t>& values) {
    auto t = emptyTensor(std::move(name), io::DType::I32, {static_cast<std::int64_t>(values.size())});
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
}

}  // namespace qs::formats::detail
