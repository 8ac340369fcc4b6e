// F32, F16 and BF16 rows: little-endian numbers, rounded to nearest even as ggml's
// GGML_FP32_TO_FP16 / GGML_FP32_TO_BF16 do. Importance weights cannot change a plain number.
#include <cstring>

#include "qs/io/dtype.h"

#include "ggml_encoders.h"

namespace qs::quant::ggml {

void encodeF32(const float* src, std::uint8_t* dst, std::int64_t n, const float*) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
}

void encodeF16(const float* src, std::uint8_t* dst, std::int64_t n, const float*) {
    io::convertFromF32(io::DType::F16, src, static_cast<std::size_t>(n), reinterpret_cast<std::byte*>(dst));
}

void encodeBf16(const float* src, std::uint8_t* dst, std::int64_t n, const float*) {
    io::convertFromF32(io::DType::BF16, src, static_cast<std::size_t>(n), reinterpret_cast<std::byte*>(dst));
}

}  // namespace qs::quant::ggml
