// The IQ1/IQ2/IQ3 types: each group of 8 (IQ1, IQ2) or 4 (IQ3) weights is one entry of a codebook
// ("grid", ggml_iq_grid_data.h) times a group scale, with separate sign bits for IQ2/IQ3. IQ2_XXS,
// IQ2_XS and IQ3_XXS store 7 sign bits per 8 weights; the 8th makes the number of minus signs even
// (kSigns below). Every product is rounded as ggml's C rounds it: ((scale * level) then the sign).
#include <array>
#include <bit>

#include "qs/io/ggml_blocks.h"

#include "ggml_decoders.h"
#include "ggml_iq_grid_data.h"
#include "ggml_sign_table.h"

namespace qs::io::ggml {
namespace {

constexpr int kQk = kSuperBlock;

// A grid expanded from its packed form: entry e, element k, as floats (what the decoders multiply).
template <std::size_t Entries, int Elements>
using Grid = std::array<std::array<float, Elements>, Entries>;

template <int Elements, int Bits, std::size_t Entries, std::size_t Levels>
Grid<Entries, Elements> expand(const std::uint16_t (&packed)[Entries], const std::array<int, Levels>& levels) {
    Grid<Entries, Elements> grid{};
    for (std::size_t e = 0; e < Entries; ++e)
        for (int k = 0; k < Elements; ++k)
            grid[e][k] = static_cast<float>(levels[(packed[e] >> (Bits * k)) & ((1 << Bits) - 1)]);
    return grid;
}

constexpr std::array<int, 3> kIq2Levels = {8, 25, 43};
constexpr std::array<int, 8> kIq3xxsLevels = {4, 12, 20, 28, 36, 44, 52, 62};
constexpr std::array<int, 8> kIq3sLevels = {1, 3, 5, 7, 9, 11, 13, 15};
constexpr std::array<int, 3> kIq1Levels = {-1, 0, 1};

const Grid<256, 8> kIq2xxsGrid = expand<8, 2>(grids::kIq2xxs, kIq2Levels);
const Grid<512, 8> kIq2xsGrid = expand<8, 2>(grids::kIq2xs, kIq2Levels);
const Grid<1024, 8> kIq2sGrid = expand<8, 2>(grids::kIq2s, kIq2Levels);
const Grid<256, 4> kIq3xxsGrid = expand<4, 3>(grids::kIq3xxs, kIq3xxsLevels);
const Grid<512, 4> kIq3sGrid = expand<4, 3>(grids::kIq3s, kIq3sLevels);
const Grid<2048, 8> kIq1sGrid = expand<8, 2>(grids::kIq1s, kIq1Levels);

// 7 stored sign bits -> 8: bit 7 set when bits 0..6 hold an odd number of ones.
constexpr std::array<std::uint8_t, 128> kSigns = [] {
    std::array<std::uint8_t, 128> s{};
    for (int i = 0; i < 128; ++i) s[i] = static_cast<std::uint8_t>(i | ((std::popcount(unsigned(i)) & 1) << 7));
    return s;
}();

constexpr float kIq1Delta = 0.125f;

// 8 (or 4) weights: (scale * level) * sign, the sign -1 where `signs` has the weight's bit.
inline void signedGroup(const float* levels, int count, float scale, std::uint8_t signs, float* out) {
    const float* sign = kSignTable[signs].data();
#pragma omp simd
    for (int j = 0; j < count; ++j) out[j] = (scale * levels[j]) * sign[j];
}

// IQ2_XS / IQ2_S: a byte of two 4-bit scales, one per 16 weights: d * (0.5 + nibble) / 4.
struct HalfScales {
    float value[2];
    HalfScales(float d, std::uint8_t sc)
        : value{d * (0.5f + static_cast<float>(sc & 0xF)) * 0.25f, d * (0.5f + static_cast<float>(sc >> 4)) * 0.25f} {}
    float operator[](int half) const { return value[half]; }
};

}  // namespace

// IQ2_XXS (66 bytes): d, then 8 bytes per 32 weights: 4 grid indices (bytes 0..3) and a word (bytes
// 4..7) holding 4 x 7 sign bits and a 4-bit scale s (bits 28..31): scale = d * (0.5 + s) / 4.
void decodeIq2Xxs(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / kQk; ++b, src += 66) {
        const float d = readHalf(src);
        for (int g = 0; g < 8; ++g) {
            const std::uint8_t* q = src + 2 + 8 * g;
            const std::uint32_t word = readU32(q + 4);
            const float db = d * (0.5f + static_cast<float>(word >> 28)) * 0.25f;
            for (int l = 0; l < 4; ++l, dst += 8)
                signedGroup(kIq2xxsGrid[q[l]].data(), 8, db, kSigns[(word >> (7 * l)) & 127], dst);
        }
    }
}

// IQ2_XS (74 bytes): d, 32 u16 (9-bit grid index | 7 sign bits << 9), scales[8] (a nibble per 16
// weights): scale = d * (0.5 + nibble) / 4.
void decodeIq2Xs(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / kQk; ++b, src += 74) {
        const float d = readHalf(src);
        for (int g = 0; g < 8; ++g) {
            const HalfScales db(d, src[66 + g]);
            for (int l = 0; l < 4; ++l, dst += 8) {
                const std::uint16_t q = readU16(src + 2 + 2 * (4 * g + l));
                signedGroup(kIq2xsGrid[q & 511].data(), 8, db[l / 2], kSigns[q >> 9], dst);
            }
        }
    }
}

// IQ2_S (82 bytes): d, qs[32] (grid index low bits), signs[32] (8 explicit sign bits per 8 weights),
// qh[8] (grid index bits 8..9 for the 4 groups of 32 weights g: bits 2l..2l+1 of qh[g]), scales[8].
void decodeIq2S(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / kQk; ++b, src += 82) {
        const float d = readHalf(src);
        const std::uint8_t* qs = src + 2;
        const std::uint8_t* signs = src + 34;
        const std::uint8_t* qh = src + 66;
        for (int g = 0; g < 8; ++g) {
            const HalfScales db(d, src[74 + g]);
            for (int l = 0; l < 4; ++l, dst += 8) {
                const int index = qs[4 * g + l] | (((qh[g] >> (2 * l)) & 3) << 8);
                signedGroup(kIq2sGrid[index].data(), 8, db[l / 2], signs[4 * g + l], dst);
            }
        }
    }
}

// IQ3_XXS (98 bytes): d, qs[64] (grid indices, 8 per 32 weights), then a word per 32 weights as in
// IQ2_XXS (4 x 7 sign bits, 4-bit scale s): scale = d * (0.5 + s) / 2.
void decodeIq3Xxs(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / kQk; ++b, src += 98) {
        const float d = readHalf(src);
        for (int g = 0; g < 8; ++g) {
            const std::uint8_t* qs = src + 2 + 8 * g;
            const std::uint32_t word = readU32(src + 66 + 4 * g);
            const float db = d * (0.5f + static_cast<float>(word >> 28)) * 0.5f;
            for (int l = 0; l < 4; ++l, dst += 8) {
                const std::uint8_t signs = kSigns[(word >> (7 * l)) & 127];
                signedGroup(kIq3xxsGrid[qs[2 * l]].data(), 4, db, signs, dst);
                signedGroup(kIq3xxsGrid[qs[2 * l + 1]].data(), 4, db, static_cast<std::uint8_t>(signs >> 4), dst + 4);
            }
        }
    }
}

// IQ3_S (110 bytes): d, qs[64] (grid index low bits), qh[8] (bit 8 of the 8 indices of group g),
// signs[32], scales[4] (a nibble per 32 weights): scale = d * (1 + 2 * nibble).
void decodeIq3S(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / kQk; ++b, src += 110) {
        const float d = readHalf(src);
        const std::uint8_t* qs = src + 2;
        const std::uint8_t* qh = src + 66;
        const std::uint8_t* signs = src + 74;
        const std::uint8_t* scales = src + 106;
        for (int g = 0; g < 8; ++g) {
            const float db = d * static_cast<float>(1 + 2 * ((scales[g / 2] >> (4 * (g % 2))) & 0xF));
            for (int l = 0; l < 4; ++l, dst += 8) {
                const int i0 = qs[8 * g + 2 * l] | (((qh[g] >> (2 * l)) & 1) << 8);
                const int i1 = qs[8 * g + 2 * l + 1] | (((qh[g] >> (2 * l + 1)) & 1) << 8);
                const std::uint8_t s = signs[4 * g + l];
                signedGroup(kIq3sGrid[i0].data(), 4, db, s, dst);
                signedGroup(kIq3sGrid[i1].data(), 4, db, static_cast<std::uint8_t>(s >> 4), dst + 4);
            }
        }
    }
}

namespace {
// 8 weights of IQ1_S / IQ1_M: scale * (level + delta), level in {-1, 0, 1}.
inline void shiftedGroup(const float* levels, float scale, float delta, float* out) {
#pragma omp simd
    for (int j = 0; j < 8; ++j) out[j] = scale * (levels[j] + delta);
}
}  // namespace

// IQ1_S (50 bytes): d, qs[32] (grid index low 8 bits), qh[8] u16 per 32 weights: bits 3l..3l+2 the
// index's bits 8..10 for group l, bits 12..14 a 3-bit scale s, bit 15 the sign of delta;
// w = d * (2s + 1) * (level +- 1/8).
void decodeIq1S(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / kQk; ++b, src += 50) {
        const float d = readHalf(src);
        for (int g = 0; g < 8; ++g) {
            const std::uint16_t qh = readU16(src + 34 + 2 * g);
            const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
            for (int l = 0; l < 4; ++l, dst += 8) {
                const int index = src[2 + 4 * g + l] | (((qh >> (3 * l)) & 7) << 8);
                shiftedGroup(kIq1sGrid[index].data(), dl, delta, dst);
            }
        }
    }
}

// IQ1_M (56 bytes): qs[32] (grid index low 8 bits), qh[16] (a nibble per 8 weights: index bits 8..10,
// then the sign of delta), scales[8] read as 4 u16: u16 k holds in bits 0..11 the 3-bit scales s of
// groups 2k and 2k + 1 (one per 16 weights) and in bits 12..15 bits 4k..4k+3 of the super-block's F16
// scale d; w = d * (2s + 1) * (level +- 1/8).
void decodeIq1M(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / kQk; ++b, src += 56) {
        std::uint16_t sc[4];
        for (int k = 0; k < 4; ++k) sc[k] = readU16(src + 48 + 2 * k);
        const auto dBits = static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                                      ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        const float d = halfToFloat(dBits);
        for (int g = 0; g < 8; ++g) {
            const int shift = 6 * (g % 2);
            const float dl[2] = {d * static_cast<float>(2 * ((sc[g / 2] >> shift) & 7) + 1),
                                 d * static_cast<float>(2 * ((sc[g / 2] >> (shift + 3)) & 7) + 1)};
            for (int l = 0; l < 4; ++l, dst += 8) {
                const std::uint8_t nibble = static_cast<std::uint8_t>(src[32 + 2 * g + l / 2] >> (4 * (l % 2)));
                const int index = src[4 * g + l] | ((nibble & 7) << 8);
                shiftedGroup(kIq1sGrid[index].data(), dl[l / 2], nibble & 8 ? -kIq1Delta : kIq1Delta, dst);
            }
        }
    }
}

}  // namespace qs::io::ggml
