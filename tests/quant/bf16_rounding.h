#pragma once
// The tests' own bfloat16 rounding (to nearest even; finite inputs), the reference the BF16 products are
// checked against: test_bf16_gram here and tests/model's test_bf16_layer_math.
#include <cstdint>
#include <cstring>

namespace qs::quant::testing {

inline float roundedToBf16(float x) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    bits &= 0xFFFF0000u;
    float out = 0.0f;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

}  // namespace qs::quant::testing
