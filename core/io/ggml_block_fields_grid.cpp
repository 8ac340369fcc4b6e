// The fields of ggml's codebook types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): per group of
// 8 (IQ1, IQ2) or 4 (IQ3) weights the index of a codebook ("grid") entry, the signs (IQ2, IQ3) or the
// sign of the ±1/8 shift (IQ1), the group scales as the integers stored, and the F16 d. The bits are
// read as ggml_decode_iq.cpp reads them. What a user learns: how many of the grid's entries the tensor
// uses, and how often.
#include <bit>

#include "qs/io/ggml_blocks.h"

#include "ggml_field_builders.h"

namespace qs::io::ggml {
namespace {

using Fields = std::vector<GgmlField>;
using R = GgmlFieldRole;

// IQ2_XXS, IQ2_XS and IQ3_XXS store 7 sign bits per 8 weights; the 8th makes the number of minus signs even.
int withImpliedSign(int seven) { return seven | ((std::popcount(static_cast<unsigned>(seven)) & 1) << 7); }

// Fields [grid indices, signs, scales, d] for the IQ2/IQ3 types.
void startSigned(Fields& out, int entries, int weightsPerEntry, const char* signs, int weightsPerScale,
                 std::int64_t n) {
    out.push_back(integerField(R::GridIndices, std::to_string(entries) + "-entry codebook indices", weightsPerEntry,
                               offsetLevels(entries, 0), n));
    out.push_back(integerField(R::Signs, signs, 1, signLevels(), n));
    out.push_back(integerField(R::Scales, "4-bit group scales", weightsPerScale, offsetLevels(16, 0), n));
    out.push_back(floatField(R::SuperScale, "f16 d", kSuperBlock, n));
}

void storeSigns(GgmlField& signs, int byte, int count) {
    for (int j = 0; j < count; ++j) store(signs, (byte >> j) & 1);
}

// IQ2_XXS (66 bytes): d, then 8 bytes per 32 weights: 4 grid indices and a u32 of 4 x 7 sign bits and the
// 4-bit scale (bits 28..31). IQ3_XXS (98 bytes): d, qs[64] (8 indices per 32), then that u32 per 32.
void xxsFields(bool iq3, const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    startSigned(out, 256, iq3 ? 4 : 8, "sign bits (7 stored per 8 weights, the 8th implied)", 32, blocks * kSuperBlock);
    for (std::int64_t b = 0; b < blocks; ++b, src += iq3 ? 98 : 66) {
        for (int g = 0; g < 8; ++g) {
            const std::uint8_t* indices = src + 2 + 8 * g;
            const std::uint32_t word = readU32(iq3 ? src + 66 + 4 * g : indices + 4);
            for (int i = 0; i < (iq3 ? 8 : 4); ++i) store(out[0], indices[i]);
            for (int l = 0; l < 4; ++l)
                storeSigns(out[1], withImpliedSign(static_cast<int>((word >> (7 * l)) & 127)), 8);
            store(out[2], static_cast<int>(word >> 28));
        }
        out[3].values.push_back(readHalf(src));
    }
}

// IQ2_XS (74 bytes): d, 32 u16 (9-bit index | 7 sign bits << 9), scales[8] (a nibble per 16 weights).
// IQ2_S (82 bytes): d, qs[32] (index bits 0..7), signs[32] (8 explicit bits per 8 weights), qh[8] (index
// bits 8..9: bits 2l..2l+1 of qh[g]), scales[8].
void iq2Fields(bool s, const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    startSigned(out, s ? 1024 : 512, 8,
                s ? "sign bits (8 per 8 weights)" : "sign bits (7 stored per 8 weights, the 8th implied)", 16,
                blocks * kSuperBlock);
    for (std::int64_t b = 0; b < blocks; ++b, src += s ? 82 : 74) {
        for (int g = 0; g < 8; ++g) {
            for (int l = 0; l < 4; ++l) {
                if (s) {
                    store(out[0], src[2 + 4 * g + l] | (((src[66 + g] >> (2 * l)) & 3) << 8));
                    storeSigns(out[1], src[34 + 4 * g + l], 8);
                } else {
                    const std::uint16_t q = readU16(src + 2 + 2 * (4 * g + l));
                    store(out[0], q & 511);
                    storeSigns(out[1], withImpliedSign(q >> 9), 8);
                }
            }
            const std::uint8_t scales = src[(s ? 74 : 66) + g];
            store(out[2], scales & 0xF);
            store(out[2], scales >> 4);
        }
        out[3].values.push_back(readHalf(src));
    }
}

// IQ3_S (110 bytes): d, qs[64] (index bits 0..7), qh[8] (bit 8 of group g's 8 indices), signs[32],
// scales[4] (a nibble per 32 weights).
void iq3sFields(const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    startSigned(out, 512, 4, "sign bits (8 per 8 weights)", 32, blocks * kSuperBlock);
    for (std::int64_t b = 0; b < blocks; ++b, src += 110) {
        for (int g = 0; g < 8; ++g) {
            for (int i = 0; i < 8; ++i) store(out[0], src[2 + 8 * g + i] | (((src[66 + g] >> i) & 1) << 8));
            for (int l = 0; l < 4; ++l) storeSigns(out[1], src[74 + 4 * g + l], 8);
            store(out[2], (src[106 + g / 2] >> (4 * (g % 2))) & 0xF);
        }
        out[3].values.push_back(readHalf(src));
    }
}

// Fields [grid indices, deltas, scales, d] for IQ1_S and IQ1_M.
void startShifted(Fields& out, int weightsPerDelta, int weightsPerScale, std::int64_t n) {
    out.push_back(integerField(R::GridIndices, "2048-entry codebook indices", 8, offsetLevels(2048, 0), n));
    out.push_back(integerField(R::Deltas, "signs of the ±1/8 shift", weightsPerDelta, {0.125f, -0.125f}, n));
    out.push_back(integerField(R::Scales, "3-bit group scales", weightsPerScale, offsetLevels(8, 0), n));
    out.push_back(floatField(R::SuperScale, "f16 d", kSuperBlock, n));
}

// IQ1_S (50 bytes): d, qs[32] (index bits 0..7), qh[8] u16 per 32 weights: bits 3l..3l+2 index bits
// 8..10 of group l, bits 12..14 the 3-bit scale, bit 15 the shift's sign.
void iq1sFields(const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    startShifted(out, 32, 32, blocks * kSuperBlock);
    for (std::int64_t b = 0; b < blocks; ++b, src += 50) {
        for (int g = 0; g < 8; ++g) {
            const std::uint16_t qh = readU16(src + 34 + 2 * g);
            for (int l = 0; l < 4; ++l) store(out[0], src[2 + 4 * g + l] | (((qh >> (3 * l)) & 7) << 8));
            store(out[1], qh >> 15);
            store(out[2], (qh >> 12) & 7);
        }
        out[3].values.push_back(readHalf(src));
    }
}

// IQ1_M (56 bytes): qs[32] (index bits 0..7), qh[16] (a nibble per 8 weights: index bits 8..10, then the
// shift's sign), scales[8] read as 4 u16: 3-bit scales (one per 16 weights) in bits 0..11, the F16 d's
// four nibbles in bits 12..15.
void iq1mFields(const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    startShifted(out, 8, 16, blocks * kSuperBlock);
    for (std::int64_t b = 0; b < blocks; ++b, src += 56) {
        std::uint16_t sc[4];
        for (int k = 0; k < 4; ++k) sc[k] = readU16(src + 48 + 2 * k);
        for (int g = 0; g < 8; ++g) {
            for (int l = 0; l < 4; ++l) {
                const int nibble = (src[32 + 2 * g + l / 2] >> (4 * (l % 2))) & 0xF;
                store(out[0], src[4 * g + l] | ((nibble & 7) << 8));
                store(out[1], nibble >> 3);
            }
            const int shift = 6 * (g % 2);
            store(out[2], (sc[g / 2] >> shift) & 7);
            store(out[2], (sc[g / 2] >> (shift + 3)) & 7);
        }
        const auto d = static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                                  (sc[3] & 0xF000));
        out[3].values.push_back(halfToFloat(d));
    }
}

}  // namespace

bool gridBlockFields(GgmlType type, const std::uint8_t* src, std::int64_t blocks, std::vector<GgmlField>& fields) {
    switch (type) {
        case GgmlType::IQ2_XXS: xxsFields(false, src, blocks, fields); return true;
        case GgmlType::IQ3_XXS: xxsFields(true, src, blocks, fields); return true;
        case GgmlType::IQ2_XS: iq2Fields(false, src, blocks, fields); return true;
        case GgmlType::IQ2_S: iq2Fields(true, src, blocks, fields); return true;
        case GgmlType::IQ3_S: iq3sFields(src, blocks, fields); return true;
        case GgmlType::IQ1_S: iq1sFields(src, blocks, fields); return true;
        case GgmlType::IQ1_M: iq1mFields(src, blocks, fields); return true;
        default: return false;
    }
}

}  // namespace qs::io::ggml
