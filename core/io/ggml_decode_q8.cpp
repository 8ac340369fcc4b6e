// Q8_0 rows: 32 weights per 34-byte block, an F16 scale d (little-endian) then 32 int8 codes q;
// weight j = q[j] * d.
#include "qs/io/dtype.h"

#include "ggml_decoders.h"

namespace qs::io::ggml {
namespace {
constexpr int kBlock = 32;
constexpr int kBlockBytes = 2 + kBlock;
}  // namespace

void decodeQ8_0(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / kBlock; ++b) {
        const std::uint8_t* block = src + b * kBlockBytes;
        const float d = f16ToF32(static_cast<std::uint16_t>(block[0] | (block[1] << 8)));
#pragma omp simd
        for (int j = 0; j < kBlock; ++j)
            dst[b * kBlock + j] = static_cast<float>(static_cast<std::int8_t>(block[2 + j])) * d;
    }
}

}  // namespace qs::io::ggml
