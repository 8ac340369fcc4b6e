// The ternary types of BitNet b1.58 / TriLM models: every weight is -d, 0 or +d.
// TQ2_0 (66 bytes per 256): qs[64], d. Weight 128h + 32k + m is bits 2k..2k+1 of qs[32h + m], minus 1.
// TQ1_0 (54 bytes per 256): qs[48], qh[4], d. Five trits per byte, stored as the byte
// ceil(t * 256 / 243) for the base-3 number t = t0 t1 t2 t3 t4 (t0 most significant): trit n is then
// the top base-3 digit of byte * 3^n, i.e. ((uint8)(byte * 3^n) * 3) >> 8. qs[0..31] hold weights
// 0..159 (trit n of byte m is weight 32n + m), qs[32..47] weights 160..239 (16n + m), and qh[0..3]
// the last 16 with four trits each (weight 240 + 4n + m is trit n of qh[m]).
#include "qs/io/ggml_blocks.h"

#include "ggml_decoders.h"

namespace qs::io::ggml {
namespace {

inline int trit(std::uint8_t byte, int n) {
    static constexpr std::uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const auto shifted = static_cast<std::uint8_t>(byte * kPow3[n]);  // drops the digits above n
    return ((shifted * 3) >> 8) - 1;
}

// `count` bytes of 5 (or 4) trits each, weight n*count + m from trit n of byte m.
inline float* trits(const std::uint8_t* bytes, int count, int digits, float d, float* dst) {
    for (int n = 0; n < digits; ++n)
#pragma omp simd
        for (int m = 0; m < count; ++m) *dst++ = static_cast<float>(trit(bytes[m], n)) * d;
    return dst;
}

}  // namespace

void decodeTq1_0(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = 48 + 4 + 2;
    for (std::int64_t b = 0; b < n / kSuperBlock; ++b, src += bytes) {
        const float d = readHalf(src + 52);
        dst = trits(src, 32, 5, d, dst);
        dst = trits(src + 32, 16, 5, d, dst);
        dst = trits(src + 48, 4, 4, d, dst);
    }
}

void decodeTq2_0(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = 64 + 2;
    for (std::int64_t b = 0; b < n / kSuperBlock; ++b, src += bytes) {
        const float d = readHalf(src + 64);
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 4; ++k)
#pragma omp simd
                for (int m = 0; m < 32; ++m) *dst++ = static_cast<float>(((src[32 * h + m] >> (2 * k)) & 3) - 1) * d;
    }
}

}  // namespace qs::io::ggml
