// ggml's block types built by hand from their published layouts (ggml-common.h's block_* structs,
// docs/formats/gguf-types.md) and decoded: each weight must be the value the layout defines,
// computed here. Then the encoders' own guarantees: values on a type's grid come back exactly, the
// error stays within half a step, and types without an encoder are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/io/ggml_type.h"
#include "qs/quant/ggml_encode.h"

namespace {

using qs::io::GgmlType;

void put16(std::vector<std::uint8_t>& b, std::size_t at, std::uint16_t v) {
    b[at] = static_cast<std::uint8_t>(v & 0xFF);
    b[at + 1] = static_cast<std::uint8_t>(v >> 8);
}
void putHalf(std::vector<std::uint8_t>& b, std::size_t at, float v) { put16(b, at, qs::io::f32ToF16(v)); }

std::vector<float> decode(GgmlType type, const std::vector<std::uint8_t>& block) {
    const auto& t = qs::io::ggmlTypeTraits(type);
    EXPECT_EQ(block.size(), static_cast<std::size_t>(t.blockBytes)) << t.name;
    std::vector<float> out(static_cast<std::size_t>(t.blockElements));
    qs::io::ggmlDecodeRow(type, block.data(), out.data(), t.blockElements);
    return out;
}

void expectValues(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << what << ", weight " << i;
}

TEST(GgmlBlocks, LegacyTypes) {
    // Q4_0: d (F16), 16 bytes; weight j is the low nibble of byte j, weight j + 16 the high nibble; (q - 8) * d.
    std::vector<std::uint8_t> b(18);
    putHalf(b, 0, 0.5f);
    std::vector<float> want(32);
    for (int j = 0; j < 16; ++j) {
        const int lo = j, hi = 15 - j;
        b[2 + j] = static_cast<std::uint8_t>(lo | (hi << 4));
        want[j] = (lo - 8) * 0.5f;
        want[j + 16] = (hi - 8) * 0.5f;
    }
    expectValues(decode(GgmlType::Q4_0, b), want, "q4_0");

    // Q4_1: d, m (F16), nibbles as Q4_0; q * d + m.
    b.assign(20, 0);
    putHalf(b, 0, 0.25f);
    putHalf(b, 2, -1.0f);
    for (int j = 0; j < 16; ++j) {
        const int lo = (3 * j) % 16, hi = (5 * j + 1) % 16;
        b[4 + j] = static_cast<std::uint8_t>(lo | (hi << 4));
        want[j] = lo * 0.25f - 1.0f;
        want[j + 16] = hi * 0.25f - 1.0f;
    }
    expectValues(decode(GgmlType::Q4_1, b), want, "q4_1");

    // Q5_0 / Q5_1: the fifth bit of weight j is bit j of the little-endian word after the scales.
    for (const bool offset : {false, true}) {
        const int head = offset ? 4 : 2;
        b.assign(static_cast<std::size_t>(head + 4 + 16), 0);
        putHalf(b, 0, 0.125f);
        if (offset) putHalf(b, 2, 2.0f);
        std::uint32_t high = 0;
        int code[32];
        for (int j = 0; j < 32; ++j) {
            code[j] = (7 * j + 3) % 32;
            high |= static_cast<std::uint32_t>(code[j] >> 4) << j;
        }
        for (int k = 0; k < 4; ++k) b[static_cast<std::size_t>(head + k)] = static_cast<std::uint8_t>(high >> (8 * k));
        for (int j = 0; j < 16; ++j)
            b[static_cast<std::size_t>(head + 4 + j)] =
                static_cast<std::uint8_t>((code[j] & 15) | ((code[j + 16] & 15) << 4));
        for (int j = 0; j < 32; ++j) want[j] = offset ? code[j] * 0.125f + 2.0f : (code[j] - 16) * 0.125f;
        expectValues(decode(offset ? GgmlType::Q5_1 : GgmlType::Q5_0, b), want, offset ? "q5_1" : "q5_0");
    }
}

// The K-quants' 2-bit planes: weight 128h + 32s + l sits at bits 2s of byte 32h + l.
void putTwoBitCode(std::vector<std::uint8_t>& b, std::size_t at, int i, int code) {
    const int h = i / 128, s = (i % 128) / 32, l = i % 32;
    b[at + static_cast<std::size_t>(32 * h + l)] |= static_cast<std::uint8_t>((code & 3) << (2 * s));
}

TEST(GgmlBlocks, Q2KAndQ3K) {
    // Q2_K: scales[16] (scale | min << 4), qs[64], d, dmin; w = d*scale*q - dmin*min, sub-block i / 16.
    std::vector<std::uint8_t> b(84, 0);
    std::vector<float> want(256);
    for (int s = 0; s < 16; ++s)
        b[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>((s % 16) | (((s * 5) % 16) << 4));
    putHalf(b, 80, 0.5f);
    putHalf(b, 82, 0.25f);
    for (int i = 0; i < 256; ++i) {
        const int code = (i * 3 + i / 7) % 4, s = i / 16;
        putTwoBitCode(b, 16, i, code);
        want[i] = 0.5f * (s % 16) * code - 0.25f * ((s * 5) % 16);
    }
    expectValues(decode(GgmlType::Q2_K, b), want, "q2_K");

    // Q3_K: hmask[32], qs[64], scales[12], d. Scale j (6 bits, minus 32): low nibble in byte j % 8
    // (low half for j < 8), top 2 bits at bit 2*(j/4) of byte 8 + j % 4. Weight i's third bit is bit
    // i / 32 of hmask[i % 32]; clear means q - 4.
    b.assign(110, 0);
    int scale[16];
    for (int j = 0; j < 16; ++j) {
        scale[j] = j * 4 - 32 + (j % 3);  // -32 .. 30
        const int l = scale[j] + 32;
        b[96 + static_cast<std::size_t>(j % 8)] |= static_cast<std::uint8_t>((l & 15) << (j < 8 ? 0 : 4));
        b[104 + static_cast<std::size_t>(j % 4)] |= static_cast<std::uint8_t>((l >> 4) << (2 * (j / 4)));
    }
    putHalf(b, 108, 0.25f);
    for (int i = 0; i < 256; ++i) {
        const int q = (i * 5) % 8 - 4;  // -4 .. 3
        const int stored = q + 4;
        putTwoBitCode(b, 32, i, stored & 3);
        if (stored & 4) b[static_cast<std::size_t>(i % 32)] |= static_cast<std::uint8_t>(1 << (i / 32));
        want[i] = 0.25f * scale[i / 16] * q;
    }
    expectValues(decode(GgmlType::Q3_K, b), want, "q3_K");
}

TEST(GgmlBlocks, Q4KQ5KQ6K) {
    // Q4_K / Q5_K scales: pair j < 4 in the low 6 bits of bytes j (scale) and j + 4 (min); pair
    // j >= 4 has its low nibbles in byte j + 4 (scale low, min high) and its top 2 bits in the top
    // bits of bytes j - 4 (scale) and j (min).
    auto packScales = [](std::vector<std::uint8_t>& b, std::size_t at, const int* sc, const int* mn) {
        for (int j = 0; j < 8; ++j) {
            if (j < 4) {
                b[at + j] |= static_cast<std::uint8_t>(sc[j]);
                b[at + j + 4] |= static_cast<std::uint8_t>(mn[j]);
            } else {
                b[at + j + 4] |= static_cast<std::uint8_t>((sc[j] & 15) | ((mn[j] & 15) << 4));
                b[at + j - 4] |= static_cast<std::uint8_t>((sc[j] >> 4) << 6);
                b[at + j] |= static_cast<std::uint8_t>((mn[j] >> 4) << 6);
            }
        }
    };
    const int sc[8] = {1, 63, 17, 32, 45, 2, 60, 33}, mn[8] = {0, 5, 63, 48, 19, 62, 7, 40};
    std::vector<float> want(256);
    for (const bool five : {false, true}) {
        std::vector<std::uint8_t> b(five ? 176 : 144, 0);
        putHalf(b, 0, 0.125f);
        putHalf(b, 2, 0.0625f);
        packScales(b, 4, sc, mn);
        // Weight 64g + l: low nibble of qs[32g + l]; 64g + 32 + l: high nibble; Q5_K's fifth bit at
        // bit 2g (first half) or 2g + 1 (second half) of qh[l].
        const std::size_t qs = five ? 48 : 16;
        for (int i = 0; i < 256; ++i) {
            const int code = five ? (i * 11) % 32 : (i * 7) % 16;
            const int g = i / 64, half = (i % 64) / 32, l = i % 32;
            b[qs + static_cast<std::size_t>(32 * g + l)] |= static_cast<std::uint8_t>((code & 15) << (4 * half));
            if (five && (code & 16))
                b[16 + static_cast<std::size_t>(l)] |= static_cast<std::uint8_t>(1 << (2 * g + half));
            want[i] = 0.125f * sc[i / 32] * code - 0.0625f * mn[i / 32];
        }
        expectValues(decode(five ? GgmlType::Q5_K : GgmlType::Q4_K, b), want, five ? "q5_K" : "q4_K");
    }

    // Q6_K: ql[128], qh[64], scales[16] (int8), d. In half h, weight 128h + 32k + l: low 4 bits in
    // ql[64h + 32(k % 2) + l] (low nibble for k < 2), top 2 bits at bits 2k of qh[32h + l]; (q - 32).
    std::vector<std::uint8_t> b(210, 0);
    std::int8_t scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = static_cast<std::int8_t>(j * 17 - 128);
    for (int j = 0; j < 16; ++j) b[192 + static_cast<std::size_t>(j)] = static_cast<std::uint8_t>(scales[j]);
    putHalf(b, 208, 0.03125f);
    for (int i = 0; i < 256; ++i) {
        const int code = (i * 13 + 5) % 64;
        const int h = i / 128, k = (i % 128) / 32, l = i % 32;
        b[static_cast<std::size_t>(64 * h + 32 * (k % 2) + l)] |=
            static_cast<std::uint8_t>((code & 15) << (k < 2 ? 0 : 4));
        b[128 + static_cast<std::size_t>(32 * h + l)] |= static_cast<std::uint8_t>((code >> 4) << (2 * k));
        want[i] = 0.03125f * scales[i / 16] * (code - 32);
    }
    expectValues(decode(GgmlType::Q6_K, b), want, "q6_K");
}

TEST(GgmlBlocks, NonLinearAndFp4) {
    // The published IQ4_NL levels.
    const int levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    std::vector<float> want(256);

    std::vector<std::uint8_t> b(18, 0);
    putHalf(b, 0, 0.01f);
    const float d = qs::io::f16ToF32(qs::io::f32ToF16(0.01f));
    for (int j = 0; j < 16; ++j) {
        b[2 + static_cast<std::size_t>(j)] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
        want[j] = d * levels[j];
        want[j + 16] = d * levels[15 - j];
    }
    want.resize(32);
    expectValues(decode(GgmlType::IQ4_NL, b), want, "iq4_nl");

    // IQ4_XS: d, scales_h (u16, 2 bits per group of 32), scales_l[4] (a nibble per group), qs[128].
    b.assign(136, 0);
    putHalf(b, 0, 0.5f);
    int ls[8];
    std::uint16_t high = 0;
    for (int g = 0; g < 8; ++g) {
        ls[g] = (g * 9 + 4) % 64;
        b[4 + static_cast<std::size_t>(g / 2)] |= static_cast<std::uint8_t>((ls[g] & 15) << (4 * (g % 2)));
        high = static_cast<std::uint16_t>(high | ((ls[g] >> 4) << (2 * g)));
    }
    put16(b, 2, high);
    want.resize(256);
    for (int i = 0; i < 256; ++i) {
        const int code = (i * 3 + 1) % 16, g = i / 32, j = i % 32;
        b[8 + static_cast<std::size_t>(16 * g + j % 16)] |= static_cast<std::uint8_t>(code << (j < 16 ? 0 : 4));
        want[i] = 0.5f * (ls[g] - 32) * levels[code];
    }
    expectValues(decode(GgmlType::IQ4_XS, b), want, "iq4_xs");

    // MXFP4: E8M0 exponent e, then nibbles; w = e2m1(code) * 2^(e - 127).
    b.assign(17, 0);
    b[0] = 130;
    want.resize(32);
    for (int j = 0; j < 16; ++j) {
        b[1 + static_cast<std::size_t>(j)] = static_cast<std::uint8_t>(j | (((j + 5) % 16) << 4));
        want[j] = e2m1[j] * 8.0f;
        want[j + 16] = e2m1[(j + 5) % 16] * 8.0f;
    }
    expectValues(decode(GgmlType::MXFP4, b), want, "mxfp4");

    // NVFP4: four UE4M3 scales (one per 16 weights), then 8 bytes per 16 weights (j and j + 8).
    b.assign(36, 0);
    const std::uint8_t ue[4] = {0x38, 0x3C, 0x01, 0x48};  // 1.0, 1.5, 2^-9, 4.0
    const float ueValue[4] = {1.0f, 1.5f, 0x1p-9f, 4.0f};
    want.resize(64);
    for (int s = 0; s < 4; ++s) {
        b[static_cast<std::size_t>(s)] = ue[s];
        for (int j = 0; j < 8; ++j) {
            const int lo = (j + s) % 16, hi = (3 * j + s + 1) % 16;
            b[4 + static_cast<std::size_t>(8 * s + j)] = static_cast<std::uint8_t>(lo | (hi << 4));
            want[16 * s + j] = e2m1[lo] * ueValue[s];
            want[16 * s + j + 8] = e2m1[hi] * ueValue[s];
        }
    }
    expectValues(decode(GgmlType::NVFP4, b), want, "nvfp4");
}

TEST(GgmlBlocks, Ternary) {
    // TQ2_0: qs[64], d; weight 128h + 32k + m at bits 2k of qs[32h + m], value (q - 1) * d.
    std::vector<std::uint8_t> b(66, 0);
    putHalf(b, 64, 0.75f);
    std::vector<float> want(256);
    for (int i = 0; i < 256; ++i) {
        const int q = (i * 7) % 3;
        b[static_cast<std::size_t>(32 * (i / 128) + i % 32)] |= static_cast<std::uint8_t>(q << (2 * ((i % 128) / 32)));
        want[i] = (q - 1) * 0.75f;
    }
    expectValues(decode(GgmlType::TQ2_0, b), want, "tq2_0");

    // TQ1_0: qs[48], qh[4], d. A byte holds 5 trits t0..t4 (t0 most significant) as
    // ceil(t * 256 / 243), t = sum t_n 3^(4-n). qs[0..31]: weight 32n + m is trit n of byte m;
    // qs[32..47]: weight 160 + 16n + m; qh[0..3]: weight 240 + 4n + m (4 trits, the 5th zero).
    b.assign(54, 0);
    putHalf(b, 52, 2.0f);
    int trit[256];
    for (int i = 0; i < 256; ++i) trit[i] = (i * 5 + i / 3) % 3;
    auto packByte = [&](const int* t, int digits) {
        int v = 0;
        for (int n = 0; n < 5; ++n) v = 3 * v + (n < digits ? t[n] : 0);
        return static_cast<std::uint8_t>((v * 256 + 242) / 243);
    };
    for (int m = 0; m < 32; ++m) {
        int t[5];
        for (int n = 0; n < 5; ++n) t[n] = trit[32 * n + m];
        b[static_cast<std::size_t>(m)] = packByte(t, 5);
    }
    for (int m = 0; m < 16; ++m) {
        int t[5];
        for (int n = 0; n < 5; ++n) t[n] = trit[160 + 16 * n + m];
        b[32 + static_cast<std::size_t>(m)] = packByte(t, 5);
    }
    for (int m = 0; m < 4; ++m) {
        int t[5];
        for (int n = 0; n < 4; ++n) t[n] = trit[240 + 4 * n + m];
        b[48 + static_cast<std::size_t>(m)] = packByte(t, 4);
    }
    for (int i = 0; i < 256; ++i) want[i] = (trit[i] - 1) * 2.0f;
    expectValues(decode(GgmlType::TQ1_0, b), want, "tq1_0");
}

// Grid entries quoted from ggml-common.h (little-endian: element j is byte j).
std::vector<int> gridEntry(std::uint64_t entry, int elements) {
    std::vector<int> v;
    for (int j = 0; j < elements; ++j) v.push_back(static_cast<std::int8_t>((entry >> (8 * j)) & 0xFF));
    return v;
}

TEST(GgmlBlocks, CodebookTypes) {
    std::vector<float> want(256);
    // IQ2_XXS: d, then per 32 weights 4 grid-index bytes and a word: 4 x 7 sign bits (the 8th makes
    // the count of minus signs even) and a 4-bit scale s in bits 28..31: w = d*(0.5+s)/4 * grid * sign.
    std::vector<std::uint8_t> b(66, 0);
    putHalf(b, 0, 1.0f);
    const std::vector<int> g1 = gridEntry(0x080808080808082bULL, 8), g200 = gridEntry(0x192b081908080808ULL, 8);
    for (int g = 0; g < 8; ++g) {
        const int s = g * 2 % 16;
        std::uint32_t word = static_cast<std::uint32_t>(s) << 28;
        const std::uint32_t signs7[4] = {0u, 1u, 0x7Fu, 0x2Au};  // 0x01: one minus -> bit 7 added
        for (int l = 0; l < 4; ++l) {
            b[2 + static_cast<std::size_t>(8 * g + l)] = l % 2 ? 200 : 1;
            word |= signs7[l] << (7 * l);
        }
        for (int k = 0; k < 4; ++k)
            b[2 + static_cast<std::size_t>(8 * g + 4 + k)] = static_cast<std::uint8_t>(word >> (8 * k));
        for (int l = 0; l < 4; ++l) {
            int bits = static_cast<int>(signs7[l]);
            if (__builtin_popcount(static_cast<unsigned>(bits)) % 2) bits |= 0x80;
            for (int j = 0; j < 8; ++j) {
                const int level = (l % 2 ? g200 : g1)[static_cast<std::size_t>(j)];
                want[32 * g + 8 * l + j] = (0.5f + s) * 0.25f * level * ((bits >> j) & 1 ? -1.0f : 1.0f);
            }
        }
    }
    expectValues(decode(GgmlType::IQ2_XXS, b), want, "iq2_xxs");

    // IQ3_S: d, qs[64] (index low bits), qh[8] (bit 8 of the 8 indices of group g), signs[32],
    // scales[4] (nibble per 32): w = d * (1 + 2 * nibble) * grid * sign.
    b.assign(110, 0);
    putHalf(b, 0, 0.5f);
    const std::vector<int> e9 = gridEntry(0x0101030dULL, 4), e511 = gridEntry(0x0f0f0101ULL, 4);
    for (int g = 0; g < 8; ++g) {
        const int nibble = (g * 3) % 16;
        b[106 + static_cast<std::size_t>(g / 2)] |= static_cast<std::uint8_t>(nibble << (4 * (g % 2)));
        for (int k = 0; k < 8; ++k) {  // 8 groups of 4: alternately entry 9 and entry 511 (= 256 + 255)
            const bool big = k % 2 == 1;
            b[2 + static_cast<std::size_t>(8 * g + k)] = big ? 255 : 9;
            if (big) b[66 + static_cast<std::size_t>(g)] |= static_cast<std::uint8_t>(1 << k);
        }
        for (int l = 0; l < 4; ++l)
            b[74 + static_cast<std::size_t>(4 * g + l)] = static_cast<std::uint8_t>(0x5A ^ (g + l));
        for (int i = 0; i < 32; ++i) {
            const int k = i / 4, l = i / 8;
            const int level = (k % 2 ? e511 : e9)[static_cast<std::size_t>(i % 4)];
            const bool minus = (b[74 + static_cast<std::size_t>(4 * g + l)] >> (i % 8)) & 1;
            want[32 * g + i] = 0.5f * (1 + 2 * nibble) * level * (minus ? -1.0f : 1.0f);
        }
    }
    expectValues(decode(GgmlType::IQ3_S, b), want, "iq3_s");

    // IQ1_S: d, qs[32] (index low 8 bits), qh[8] u16: bits 3l..3l+2 index bits 8..10 of group l,
    // bits 12..14 a scale s, bit 15 the sign of delta = 1/8: w = d * (2s + 1) * (level + delta).
    b.assign(50, 0);
    putHalf(b, 0, 0.25f);
    const std::vector<int> z = gridEntry(0xffffffffffffffffULL, 8), top = gridEntry(0x0101010101010101ULL, 8),
                           mid = gridEntry(0x00000000ffff00ffULL, 8);
    for (int g = 0; g < 8; ++g) {
        const int s = g % 8;
        const bool negative = g % 2;
        // groups: entry 0, entry 2047 (0x7FF), entry 1000 (0x3E8), entry 0
        const int entries[4] = {0, 2047, 1000, 0};
        std::uint16_t qh = static_cast<std::uint16_t>((s << 12) | (negative ? 0x8000 : 0));
        for (int l = 0; l < 4; ++l) {
            b[2 + static_cast<std::size_t>(4 * g + l)] = static_cast<std::uint8_t>(entries[l] & 0xFF);
            qh = static_cast<std::uint16_t>(qh | ((entries[l] >> 8) << (3 * l)));
        }
        put16(b, 34 + 2 * static_cast<std::size_t>(g), qh);
        const float delta = negative ? -0.125f : 0.125f;
        for (int l = 0; l < 4; ++l) {
            const std::vector<int>& level = entries[l] == 0 ? z : entries[l] == 2047 ? top : mid;
            for (int j = 0; j < 8; ++j)
                want[32 * g + 8 * l + j] = 0.25f * (2 * s + 1) * (level[static_cast<std::size_t>(j)] + delta);
        }
    }
    expectValues(decode(GgmlType::IQ1_S, b), want, "iq1_s");
}

TEST(GgmlEncoders, ValuesOnTheGridComeBackExactly) {
    // Q4_0: weights k * d with k in -8..7 and -8 * d present: d = max / -8 is d itself.
    std::vector<float> x(64);
    for (int j = 0; j < 64; ++j) x[j] = static_cast<float>(j % 16 - 8) * 0.5f;
    for (const GgmlType type : {GgmlType::Q4_0, GgmlType::Q5_0}) {  // d = max / -8 (Q5_0: / -16) lands on 0.5 (0.25)
        std::vector<std::uint8_t> q(qs::io::ggmlRowBytes(type, 64));
        qs::quant::ggmlEncodeRow(type, x.data(), q.data(), 64);
        std::vector<float> back(64);
        qs::io::ggmlDecodeRow(type, q.data(), back.data(), 64);
        for (int j = 0; j < 64; ++j) EXPECT_FLOAT_EQ(back[j], x[j]) << qs::io::ggmlTypeTraits(type).name << " " << j;
    }
    // MXFP4: E2M1 values times a power of two whose block maximum is 6 * 2^k.
    for (int j = 0; j < 64; ++j)
        x[j] = (j % 2 ? -1.0f : 1.0f) * std::vector<float>{0, 0.5f, 1, 1.5f, 2, 3, 4, 6}[j % 8] * 0.25f;
    std::vector<std::uint8_t> q(qs::io::ggmlRowBytes(GgmlType::MXFP4, 64));
    qs::quant::ggmlEncodeRow(GgmlType::MXFP4, x.data(), q.data(), 64);
    std::vector<float> back(64);
    qs::io::ggmlDecodeRow(GgmlType::MXFP4, q.data(), back.data(), 64);
    for (int j = 0; j < 64; ++j) EXPECT_FLOAT_EQ(back[j], x[j]) << "mxfp4 " << j;
}

// Every searching encoder keeps each weight within about half a grid step of its sub-block: the
// error relative to the block's range is bounded by the format's bits.
TEST(GgmlEncoders, ErrorWithinTheFormatsResolution) {
    constexpr int kN = 4096;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(kN), importance(kN);
    for (float& v : x) v = normal(rng);
    for (float& v : importance) v = 0.1f + std::fabs(normal(rng));
    const struct {
        GgmlType type;
        double maxRms;
    } cases[] = {{GgmlType::Q2_K, 0.45},   {GgmlType::Q3_K, 0.22}, {GgmlType::Q4_K, 0.11},
                 {GgmlType::Q5_K, 0.055},  {GgmlType::Q6_K, 0.03}, {GgmlType::IQ4_NL, 0.12},
                 {GgmlType::IQ4_XS, 0.13}, {GgmlType::Q4_1, 0.12}, {GgmlType::Q5_1, 0.06}};
    for (const auto& c : cases) {
        for (const float* imp : {static_cast<const float*>(nullptr), static_cast<const float*>(importance.data())}) {
            std::vector<std::uint8_t> q(qs::io::ggmlRowBytes(c.type, kN));
            qs::quant::ggmlEncodeRow(c.type, x.data(), q.data(), kN, imp);
            std::vector<float> back(kN);
            qs::io::ggmlDecodeRow(c.type, q.data(), back.data(), kN);
            double se = 0;
            for (int j = 0; j < kN; ++j) se += (back[j] - x[j]) * (back[j] - x[j]);
            EXPECT_LT(std::sqrt(se / kN), c.maxRms)
                << qs::io::ggmlTypeTraits(c.type).name << (imp ? " with" : " without") << " importance";
        }
    }
}

TEST(GgmlEncoders, TypesWithoutEncoderAreRefusedByName) {
    std::vector<float> x(256, 0.0f);
    std::vector<std::uint8_t> q(1024);
    for (const GgmlType type : {GgmlType::IQ2_XXS, GgmlType::IQ1_S, GgmlType::TQ1_0}) {
        EXPECT_FALSE(qs::quant::ggmlEncodes(type));
        try {
            qs::quant::ggmlEncodeRow(type, x.data(), q.data(), 256);
            ADD_FAILURE() << "encoded";
        } catch (const std::exception& e) {
            EXPECT_NE(std::string(e.what()).find(std::string(qs::io::ggmlTypeTraits(type).name)), std::string::npos)
                << e.what();
        }
    }
}

}  // namespace

namespace {

// Bad input never crashes an encoder: NaN, infinities and huge values give some blocks (of the right
// size), and the finite blocks of the same row are unaffected.
TEST(GgmlEncoders, NonFiniteInputEncodesWithoutHarm) {
    constexpr int kN = 512;
    std::vector<float> x(kN), importance(kN, 1.0f);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(rng);
    std::vector<float> clean = x;
    x[3] = std::nanf("");
    x[40] = std::numeric_limits<float>::infinity();
    x[77] = -std::numeric_limits<float>::infinity();
    x[100] = 3e38f;
    importance[5] = std::nanf("");
    importance[6] = -1.0f;
    for (std::uint32_t t = 0; t < 64; ++t) {
        const qs::io::GgmlTypeTraits* traits = qs::io::ggmlTypeTraits(t);
        if (!traits || traits->isFloat || !qs::quant::ggmlEncodes(traits->type)) continue;
        for (const float* imp : {static_cast<const float*>(nullptr), static_cast<const float*>(importance.data())}) {
            std::vector<std::uint8_t> dirty(qs::io::ggmlRowBytes(traits->type, kN)), reference(dirty.size());
            qs::quant::ggmlEncodeRow(traits->type, x.data(), dirty.data(), kN, imp);
            qs::quant::ggmlEncodeRow(traits->type, clean.data(), reference.data(), kN, imp);
            // Blocks covering weights 256.. hold only finite input: identical to the clean row's
            // (each block is encoded from its own weights and importance alone).
            const std::size_t from = qs::io::ggmlRowBytes(traits->type, 256);
            for (std::size_t i = from; i < dirty.size(); ++i)
                ASSERT_EQ(dirty[i], reference[i]) << traits->name << " byte " << i;
        }
    }
}

}  // namespace

namespace {

// The multi-row encoder gives each row the bytes of the single-row one, on any number of threads.
TEST(GgmlEncoders, RowsEncodeAsSingleRowsOnAnyThreadCount) {
    constexpr int kRows = 37, kN = 512;
    std::vector<float> x(kRows * kN), importance(kN);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(rng);
    for (float& v : importance) v = std::fabs(normal(rng));
    const int threadsBefore = omp_get_max_threads();
    for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q4_0, GgmlType::IQ4_XS}) {
        const std::size_t rowBytes = qs::io::ggmlRowBytes(type, kN);
        std::vector<std::uint8_t> single(rowBytes * kRows);
        for (int r = 0; r < kRows; ++r)
            qs::quant::ggmlEncodeRow(type, x.data() + r * kN, single.data() + r * rowBytes, kN, importance.data());
        for (const int threads : {1, 3}) {
            omp_set_num_threads(threads);
            std::vector<std::uint8_t> rows(single.size(), 0xAB);
            qs::quant::ggmlEncodeRows(type, x.data(), rows.data(), kRows, kN, importance.data());
            EXPECT_EQ(rows, single) << qs::io::ggmlTypeTraits(type).name << " on " << threads << " threads";
        }
    }
    omp_set_num_threads(threadsBefore);
    std::vector<std::uint8_t> q(64);
    EXPECT_THROW(qs::quant::ggmlEncodeRows(GgmlType::Q4_K, x.data(), q.data(), 1, 100), qs::Error);  // not whole blocks
}

}  // namespace
