// F32, F16 and BF16 rows of a GGUF tensor: little-endian numbers, converted as every other dtype is.
#include <cstring>

#include "qs/io/dtype.h"

#include "ggml_decoders.h"

namespace qs::io::ggml {

void decodeF32(const std::uint8_t* src, float* dst, std::int64_t n) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
}

void decodeF16(const std::uint8_t* src, float* dst, std::int64_t n) {
    convertToF32(DType::F16, reinterpret_cast<const std::byte*>(src), static_cast<std::size_t>(n), dst);
}

void decodeBf16(const std::uint8_t* src, float* dst, std::int64_t n) {
    convertToF32(DType::BF16, reinterpret_cast<const std::byte*>(src), static_cast<std::size_t>(n), dst);
}

}  // namespace qs::io::ggml
