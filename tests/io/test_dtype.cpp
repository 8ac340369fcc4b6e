// dtype conversions checked against the formats' mathematical definitions, computed here with
// ldexp from sign, exponent and mantissa fields (not with the code under test).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "qs/io/dtype.h"

using namespace qs::io;

namespace {

double e4m3Definition(int c) {
    const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7) return std::nan("");
    const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
    return s ? -mag : mag;
}

double e5m2Definition(int c) {
    const int s = c >> 7, e = (c >> 2) & 31, m = c & 3;
    double mag;
    if (e == 31)
        mag = m == 0 ? std::numeric_limits<double>::infinity() : std::nan("");
    else
        mag = e == 0 ? std::ldexp(m / 4.0, -14) : std::ldexp(1.0 + m / 4.0, e - 15);
    return s ? -mag : mag;
}

double e8m0Definition(int c) { return c == 255 ? std::nan("") : std::ldexp(1.0, c - 127); }

double f16Definition(int c) {
    const int s = c >> 15, e = (c >> 10) & 31, m = c & 1023;
    double mag;
    if (e == 31)
        mag = m == 0 ? std::numeric_limits<double>::infinity() : std::nan("");
    else
        mag = e == 0 ? std::ldexp(m / 1024.0, -14) : std::ldexp(1.0 + m / 1024.0, e - 15);
    return s ? -mag : mag;
}

void expectSameFloat(float actual, double expected, int code) {
    if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(actual)) << "code " << code;
    } else {
        EXPECT_EQ(actual, static_cast<float>(expected)) << "code " << code;
        EXPECT_EQ(std::signbit(actual), std::signbit(expected)) << "code " << code;
        EXPECT_EQ(static_cast<double>(actual), expected) << "code " << code << " is not exact in f32";
    }
}

// Bulk conversion of every code of an 8-bit format must agree with the scalar one.
std::vector<float> bulk8(DType t) {
    std::vector<std::byte> codes(256);
    for (int i = 0; i < 256; ++i) codes[static_cast<std::size_t>(i)] = static_cast<std::byte>(i);
    std::vector<float> out(256);
    convertToF32(t, codes.data(), 256, out.data());
    return out;
}

}  // namespace

TEST(DType, NamesSizesAndParsing) {
    EXPECT_EQ(parseDType("BF16"), DType::BF16);
    EXPECT_EQ(parseDType("F8_E4M3"), DType::F8_E4M3);
    EXPECT_EQ(parseDType("BOOL"), DType::BOOL);
    EXPECT_FALSE(parseDType("bf16").has_value());
    EXPECT_FALSE(parseDType("F4").has_value());
    EXPECT_EQ(dtypeName(DType::F8_E8M0), "F8_E8M0");
    EXPECT_EQ(dtypeSize(DType::F64), 8u);
    EXPECT_EQ(dtypeSize(DType::U16), 2u);
    EXPECT_EQ(dtypeSize(DType::F8_E5M2), 1u);
    EXPECT_TRUE(isFloating(DType::F8_E8M0));
    EXPECT_FALSE(isFloating(DType::I32));
    for (const char* n : {"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "F8_E8M0", "I64", "I32", "I16", "I8",
                          "U64", "U32", "U16", "U8", "BOOL"}) {
        ASSERT_TRUE(parseDType(n).has_value()) << n;
        EXPECT_EQ(dtypeName(*parseDType(n)), n);
    }
}

TEST(DType, E4m3AllCodesMatchDefinition) {
    const auto bulk = bulk8(DType::F8_E4M3);
    for (int c = 0; c < 256; ++c) {
        expectSameFloat(e4m3ToF32(static_cast<std::uint8_t>(c)), e4m3Definition(c), c);
        expectSameFloat(bulk[static_cast<std::size_t>(c)], e4m3Definition(c), c);
        if (!std::isnan(e4m3Definition(c))) {
            EXPECT_EQ(f32ToE4m3(static_cast<float>(e4m3Definition(c))), c) << "round trip of code " << c;
        }
    }
    EXPECT_EQ(e4m3ToF32(0x7E), 448.0f);
    EXPECT_EQ(e4m3ToF32(0x01), 0x1p-9f);
}

TEST(DType, E5m2AllCodesMatchDefinition) {
    const auto bulk = bulk8(DType::F8_E5M2);
    for (int c = 0; c < 256; ++c) {
        expectSameFloat(e5m2ToF32(static_cast<std::uint8_t>(c)), e5m2Definition(c), c);
        expectSameFloat(bulk[static_cast<std::size_t>(c)], e5m2Definition(c), c);
        if (!std::isnan(e5m2Definition(c))) {
            EXPECT_EQ(f32ToE5m2(static_cast<float>(e5m2Definition(c))), c) << "round trip of code " << c;
        }
    }
    EXPECT_EQ(e5m2ToF32(0x7B), 57344.0f);
}

TEST(DType, E8m0AllCodesMatchDefinition) {
    const auto bulk = bulk8(DType::F8_E8M0);
    for (int c = 0; c < 256; ++c) {
        expectSameFloat(e8m0ToF32(static_cast<std::uint8_t>(c)), e8m0Definition(c), c);
        expectSameFloat(bulk[static_cast<std::size_t>(c)], e8m0Definition(c), c);
        if (c != 255) {
            EXPECT_EQ(f32ToE8m0(static_cast<float>(e8m0Definition(c))), c) << "round trip of code " << c;
        }
    }
}

TEST(DType, E4m3RoundsToNearestEvenAndSaturates) {
    EXPECT_EQ(f32ToE4m3(1.0625f), 0x38);  // tie between 1.0 (even) and 1.125
    EXPECT_EQ(f32ToE4m3(std::nextafter(1.0625f, 2.0f)), 0x39);
    EXPECT_EQ(f32ToE4m3(1.1875f), 0x3A);  // tie between 1.125 and 1.25 (even)
    EXPECT_EQ(f32ToE4m3(-1.1875f), 0xBA);
    EXPECT_EQ(f32ToE4m3(0x1p-10f), 0x00);  // half the smallest subnormal: tie to zero
    EXPECT_EQ(f32ToE4m3(std::nextafter(0x1p-10f, 1.0f)), 0x01);
    EXPECT_EQ(f32ToE4m3(3 * 0x1p-10f), 0x02);          // tie between subnormals 1 and 2 (even)
    EXPECT_EQ(f32ToE4m3(0.015625f - 0x1p-10f), 0x08);  // rounds up out of the subnormals into 2^-6
    EXPECT_EQ(f32ToE4m3(1e-30f), 0x00);
    EXPECT_EQ(f32ToE4m3(-0.0f), 0x80);
    EXPECT_EQ(f32ToE4m3(464.0f), 0x7E);  // tie with 480 (not representable): saturates
    EXPECT_EQ(f32ToE4m3(1e6f), 0x7E);
    EXPECT_EQ(f32ToE4m3(-1e6f), 0xFE);
    EXPECT_EQ(f32ToE4m3(std::numeric_limits<float>::infinity()), 0x7E);
    EXPECT_EQ(f32ToE4m3(-std::numeric_limits<float>::infinity()), 0xFE);
    EXPECT_EQ(f32ToE4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
    EXPECT_EQ(f32ToE4m3(-std::numeric_limits<float>::quiet_NaN()), 0xFF);
}

TEST(DType, E5m2RoundsToNearestEvenAndSaturates) {
    EXPECT_EQ(f32ToE5m2(1.125f), 0x3C);    // tie between 1.0 (even) and 1.25
    EXPECT_EQ(f32ToE5m2(1.375f), 0x3E);    // tie between 1.25 and 1.5 (even)
    EXPECT_EQ(f32ToE5m2(0x1p-17f), 0x00);  // half the smallest subnormal
    EXPECT_EQ(f32ToE5m2(3 * 0x1p-17f), 0x02);
    EXPECT_EQ(f32ToE5m2(61440.0f), 0x7B);  // would round to Inf in IEEE; saturates
    EXPECT_EQ(f32ToE5m2(-1e9f), 0xFB);
    EXPECT_EQ(f32ToE5m2(std::numeric_limits<float>::infinity()), 0x7C);
    EXPECT_EQ(f32ToE5m2(-std::numeric_limits<float>::infinity()), 0xFC);
    EXPECT_EQ(f32ToE5m2(std::numeric_limits<float>::quiet_NaN()), 0x7E);
    EXPECT_EQ(f32ToE5m2(-std::numeric_limits<float>::quiet_NaN()), 0xFE);
}

TEST(DType, E8m0RoundsInLogDomain) {
    EXPECT_EQ(f32ToE8m0(1.0f), 127);
    EXPECT_EQ(f32ToE8m0(1.41f), 127);   // log2 = 0.496
    EXPECT_EQ(f32ToE8m0(1.415f), 128);  // log2 = 0.501
    EXPECT_EQ(f32ToE8m0(0.75f), 127);   // log2 = -0.415 -> 2^0
    EXPECT_EQ(f32ToE8m0(0.7f), 126);    // log2 = -0.515 -> 2^-1
    EXPECT_EQ(f32ToE8m0(0.0f), 0);
    EXPECT_EQ(f32ToE8m0(0x1p-127f), 0);
    EXPECT_EQ(f32ToE8m0(0x1p-130f), 0);
    EXPECT_EQ(f32ToE8m0(0x1p-126f), 1);
    EXPECT_EQ(f32ToE8m0(0x1p127f), 254);
    EXPECT_EQ(f32ToE8m0(3e38f), 254);  // log2 = 127.8: saturates at 2^127
    EXPECT_EQ(f32ToE8m0(-1.0f), 255);
    EXPECT_EQ(f32ToE8m0(std::numeric_limits<float>::quiet_NaN()), 255);
    EXPECT_EQ(f32ToE8m0(std::numeric_limits<float>::infinity()), 255);
}

TEST(DType, E2m1ValuesAndRounding) {
    const float values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (int c = 0; c < 16; ++c) {
        const float expected = (c & 8) ? -values[c & 7] : values[c & 7];
        EXPECT_EQ(e2m1ToF32(static_cast<std::uint8_t>(c)), expected) << c;
        EXPECT_EQ(f32ToE2m1(expected), (c == 8 ? 8 : c)) << c;
    }
    EXPECT_EQ(f32ToE2m1(0.25f), 0);  // tie between 0 (even) and 0.5
    EXPECT_EQ(f32ToE2m1(0.75f), 2);  // tie between 0.5 and 1.0 (even)
    EXPECT_EQ(f32ToE2m1(2.5f), 4);   // tie between 2 (even) and 3
    EXPECT_EQ(f32ToE2m1(5.0f), 6);   // tie between 4 (even) and 6
    EXPECT_EQ(f32ToE2m1(7.0f), 7);   // saturates at 6
    EXPECT_EQ(f32ToE2m1(-100.0f), 15);
}

TEST(DType, F16AllCodesMatchDefinition) {
    std::vector<std::uint16_t> codes(65536);
    for (int c = 0; c < 65536; ++c) codes[static_cast<std::size_t>(c)] = static_cast<std::uint16_t>(c);
    std::vector<float> bulk(65536);
    convertToF32(DType::F16, reinterpret_cast<const std::byte*>(codes.data()), codes.size(), bulk.data());
    for (int c = 0; c < 65536; ++c) {
        const double def = f16Definition(c);
        expectSameFloat(f16ToF32(static_cast<std::uint16_t>(c)), def, c);
        expectSameFloat(bulk[static_cast<std::size_t>(c)], def, c);
        if (!std::isnan(def)) {
            EXPECT_EQ(f32ToF16(static_cast<float>(def)), c);
        }
    }
}

TEST(DType, F16RoundsToNearestEven) {
    EXPECT_EQ(f32ToF16(1.0f + 0x1p-11f), 0x3C00);      // tie: even
    EXPECT_EQ(f32ToF16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie: even
    EXPECT_EQ(f32ToF16(65519.0f), 0x7BFF);
    EXPECT_EQ(f32ToF16(65520.0f), 0x7C00);  // tie with 65536: IEEE overflow to Inf
    EXPECT_EQ(f32ToF16(-1e10f), 0xFC00);
    EXPECT_EQ(f32ToF16(0x1p-25f), 0x0000);  // tie between 0 and the smallest subnormal
    EXPECT_EQ(f32ToF16(3 * 0x1p-25f), 0x0002);
    EXPECT_TRUE(std::isnan(f16ToF32(f32ToF16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DType, Bf16ExactAndRoundsToNearestEven) {
    for (std::uint32_t c = 0; c < 65536; ++c) {
        const float v = bf16ToF32(static_cast<std::uint16_t>(c));
        EXPECT_EQ(std::bit_cast<std::uint32_t>(v), c << 16);
        if (!std::isnan(v)) {
            EXPECT_EQ(f32ToBf16(v), c);
        }
    }
    EXPECT_EQ(f32ToBf16(1.0f + 0x1p-8f), 0x3F80);      // tie: even
    EXPECT_EQ(f32ToBf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // tie: even
    EXPECT_EQ(f32ToBf16(std::nextafter(1.0f + 0x1p-8f, 2.0f)), 0x3F81);
    EXPECT_EQ(f32ToBf16(std::numeric_limits<float>::max()), 0x7F80);  // past the last midpoint: Inf
    EXPECT_EQ(f32ToBf16(std::bit_cast<float>(0x00008000u)), 0x0000);  // f32 subnormal tie: even
    EXPECT_EQ(f32ToBf16(std::bit_cast<float>(0x00018000u)), 0x0002);
    const std::uint16_t nan = f32ToBf16(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7F80, 0x7F80);
    EXPECT_NE(nan & 0x007F, 0);
}

TEST(DType, IntegersRoundHalfEvenAndClamp) {
    const std::vector<float> in{2.5f,   3.5f, -2.5f, 200.0f, -200.0f, std::numeric_limits<float>::quiet_NaN(),
                                255.5f, -1.0f};
    std::vector<std::int8_t> i8(in.size());
    convertFromF32(DType::I8, in.data(), in.size(), reinterpret_cast<std::byte*>(i8.data()));
    EXPECT_EQ(i8, (std::vector<std::int8_t>{2, 4, -2, 127, -128, 0, 127, -1}));
    std::vector<std::uint8_t> u8(in.size());
    convertFromF32(DType::U8, in.data(), in.size(), reinterpret_cast<std::byte*>(u8.data()));
    EXPECT_EQ(u8, (std::vector<std::uint8_t>{2, 4, 0, 200, 0, 0, 255, 0}));

    const std::vector<float> big{3e9f, -3e9f, 1e19f, -1e19f, 1e20f};
    std::vector<std::int32_t> i32(big.size());
    convertFromF32(DType::I32, big.data(), big.size(), reinterpret_cast<std::byte*>(i32.data()));
    EXPECT_EQ(i32, (std::vector<std::int32_t>{INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, INT32_MAX}));
    std::vector<std::int64_t> i64(big.size());
    convertFromF32(DType::I64, big.data(), big.size(), reinterpret_cast<std::byte*>(i64.data()));
    EXPECT_EQ(i64, (std::vector<std::int64_t>{3000000000LL, -3000000000LL, INT64_MAX, INT64_MIN, INT64_MAX}));
    std::vector<std::uint64_t> u64(big.size());
    convertFromF32(DType::U64, big.data(), big.size(), reinterpret_cast<std::byte*>(u64.data()));
    EXPECT_EQ(u64, (std::vector<std::uint64_t>{3000000000ULL, 0, 9999999980506447872ULL, 0,
                                               UINT64_MAX}));  // 1e19f is not 1e19
}

TEST(DType, IntegersAndBoolToF32) {
    const std::int64_t i64[3] = {-5, (1LL << 40) + 1, INT64_MIN};
    float out[3];
    convertToF32(DType::I64, reinterpret_cast<const std::byte*>(i64), 3, out);
    EXPECT_EQ(out[0], -5.0f);
    EXPECT_EQ(out[1], 0x1p40f);  // nearest f32
    EXPECT_EQ(out[2], -0x1p63f);
    const std::uint16_t u16[2] = {65535, 7};
    convertToF32(DType::U16, reinterpret_cast<const std::byte*>(u16), 2, out);
    EXPECT_EQ(out[0], 65535.0f);
    EXPECT_EQ(out[1], 7.0f);
    const std::uint8_t flags[3] = {0, 1, 2};
    convertToF32(DType::BOOL, reinterpret_cast<const std::byte*>(flags), 3, out);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[1], 1.0f);
    EXPECT_EQ(out[2], 1.0f);
    const double f64[2] = {0.1, 1e300};
    convertToF32(DType::F64, reinterpret_cast<const std::byte*>(f64), 2, out);
    EXPECT_EQ(out[0], 0.1f);
    EXPECT_TRUE(std::isinf(out[1]));
}

// Spans large enough to run on several threads must give exactly the scalar results, in order.
TEST(DType, LargeSpansMatchScalarConversions) {
    const std::size_t n = (std::size_t{1} << 20) + 37;
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 30.0f);
    std::vector<float> values(n);
    for (auto& v : values) v = dist(rng);
    for (const DType t : {DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2, DType::F8_E8M0}) {
        std::vector<std::byte> encoded(n * dtypeSize(t));
        convertFromF32(t, values.data(), n, encoded.data());
        std::vector<float> decoded(n);
        convertToF32(t, encoded.data(), n, decoded.data());
        for (std::size_t i = 0; i < n; i += 997) {
            float expected = 0;
            switch (t) {
                case DType::F16: expected = f16ToF32(f32ToF16(values[i])); break;
                case DType::BF16: expected = bf16ToF32(f32ToBf16(values[i])); break;
                case DType::F8_E4M3: expected = e4m3ToF32(f32ToE4m3(values[i])); break;
                case DType::F8_E5M2: expected = e5m2ToF32(f32ToE5m2(values[i])); break;
                default: expected = e8m0ToF32(f32ToE8m0(values[i])); break;
            }
            if (std::isnan(expected)) {
                EXPECT_TRUE(std::isnan(decoded[i]));
            } else {
                ASSERT_EQ(decoded[i], expected) << dtypeName(t) << " element " << i;
            }
        }
    }
}
