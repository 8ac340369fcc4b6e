// Q8_0: 32 weights per block, an F16 scale d = max|x| / 127 and int8 codes round(x / d) (ties away
// from zero, as roundf), as ggml's reference quantizer. Importance weights do not change Q8_0 in ggml.
#include <cmath>

#include "qs/io/dtype.h"

#include "ggml_encoders.h"

namespace qs::quant::ggml {
namespace {
constexpr int kBlock = 32;
constexpr int kBlockBytes = 2 + kBlock;
}  // namespace

void encodeQ8_0(const float* src, std::uint8_t* dst, std::int64_t n, const float*) {
    for (std::int64_t b = 0; b < n / kBlock; ++b) {
        const float* x = src + b * kBlock;
        std::uint8_t* block = dst + b * kBlockBytes;
        float amax = 0.0f;
        for (int j = 0; j < kBlock; ++j) amax = std::fmax(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const std::uint16_t dBits = io::f32ToF16(d);
        block[0] = static_cast<std::uint8_t>(dBits & 0xFF);
        block[1] = static_cast<std::uint8_t>(dBits >> 8);
        for (int j = 0; j < kBlock; ++j)
            block[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(x[j] * id)));
    }
}

}  // namespace qs::quant::ggml
