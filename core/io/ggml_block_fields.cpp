// The fields of the ggml types with one code per weight: the legacy types (Q4_0 … Q8_0, Q1_0, Q2_0), the
// K-quants, the 16-level table types (IQ4_NL, IQ4_XS, MXFP4, NVFP4) and the ternary types; each reads
// its blocks as the decoder of its family does (ggml_decode_*.cpp), keeping the parts apart instead of
// combining them. The codebook types are ggml_block_fields_grid.cpp's.
#include "qs/io/ggml_block_fields.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "qs/error.h"
#include "qs/io/ggml_blocks.h"

#include "ggml_field_builders.h"

namespace qs::io {
namespace {

using ggml::floatField;
using ggml::integerField;
using ggml::offsetLevels;
using ggml::readHalf;
using ggml::store;
using Fields = std::vector<GgmlField>;
using R = GgmlFieldRole;
constexpr int kQk = ggml::kSuperBlock;

// Q4_0, Q4_1, Q5_0, Q5_1 (32 weights): d (and m), the fifth bits (qh, u32), then 16 bytes of nibbles:
// weight j is the low nibble of byte j, weight j + 16 its high nibble.
void legacyFields(bool withMin, bool fifthBit, const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const std::int64_t n = blocks * 32;
    const int codes = fifthBit ? 32 : 16;
    // The _0 types centre their codes: q - 8 (q - 16); the _1 types add m instead.
    out.push_back(integerField(R::Codes, fifthBit ? "5-bit codes" : "4-bit codes", 1,
                               offsetLevels(codes, withMin ? 0 : codes / 2), n));
    out.push_back(floatField(R::Scales, "f16 d", 32, n));
    if (withMin) out.push_back(floatField(R::Mins, "f16 m", 32, n));
    const int qhAt = withMin ? 4 : 2;
    const int qsAt = qhAt + (fifthBit ? 4 : 0);
    const int bytes = qsAt + 16;
    for (std::int64_t b = 0; b < blocks; ++b, src += bytes) {
        out[1].values.push_back(readHalf(src));
        if (withMin) out[2].values.push_back(readHalf(src + 2));
        const std::uint32_t high = fifthBit ? ggml::readU32(src + qhAt) : 0;
        for (int j = 0; j < 32; ++j) {
            const int nibble = j < 16 ? src[qsAt + j] & 0xF : src[qsAt + j - 16] >> 4;
            store(out[0], nibble | static_cast<int>(((high >> j) & 1u) << 4));
        }
    }
}

// Q8_0 (32 weights): d, 32 int8 codes.
void q8_0Fields(const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const std::int64_t n = blocks * 32;
    out.push_back(integerField(R::Codes, "8-bit codes (int8)", 1, offsetLevels(256, 0), n));
    std::transform(out[0].levels.begin(), out[0].levels.end(), out[0].levels.begin(),
                   [](float k) { return k < 128.0f ? k : k - 256.0f; });
    out.push_back(floatField(R::Scales, "f16 d", 32, n));
    for (std::int64_t b = 0; b < blocks; ++b, src += 34) {
        out[1].values.push_back(readHalf(src));
        for (int j = 0; j < 32; ++j) store(out[0], src[2 + j]);
    }
}

// Q1_0 (128 weights, a set bit j of byte j/8 is +d, a clear one -d) and Q2_0 (64 weights: bits 2(j%4)
// of byte j/4, q - 1): d, then the codes.
void lowBitFields(int bits, const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const int block = bits == 1 ? 128 : 64;
    const std::int64_t n = blocks * block;
    out.push_back(integerField(R::Codes, bits == 1 ? "1-bit codes (±1)" : "2-bit codes", 1,
                               bits == 1 ? std::vector<float>{-1.0f, 1.0f} : offsetLevels(4, 1), n));
    out.push_back(floatField(R::Scales, "f16 d", block, n));
    const int perByte = 8 / bits;
    for (std::int64_t b = 0; b < blocks; ++b, src += 2 + block / perByte) {
        out[1].values.push_back(readHalf(src));
        for (int j = 0; j < block; ++j)
            store(out[0], (src[2 + j / perByte] >> (bits * (j % perByte))) & ((1 << bits) - 1));
    }
}

// Q2_K (84 bytes): scales[16] (low nibble scale, high nibble min, one per 16 weights), qs[64], d, dmin.
// Weight 128h + 32s + l (l < 32) is bits 2s..2s+1 of qs[32h + l].
void q2_KFields(const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const std::int64_t n = blocks * kQk;
    out.push_back(integerField(R::Codes, "2-bit codes", 1, offsetLevels(4, 0), n));
    out.push_back(integerField(R::Scales, "4-bit sub-block scales", 16, offsetLevels(16, 0), n));
    out.push_back(integerField(R::Mins, "4-bit sub-block mins", 16, offsetLevels(16, 0), n));
    out.push_back(floatField(R::SuperScale, "f16 d", kQk, n));
    out.push_back(floatField(R::SuperMin, "f16 dmin", kQk, n));
    for (std::int64_t b = 0; b < blocks; ++b, src += 84) {
        for (int i = 0; i < kQk; ++i) store(out[0], (src[16 + 32 * (i / 128) + i % 32] >> (2 * (i % 128 / 32))) & 3);
        for (int s = 0; s < 16; ++s) {
            store(out[1], src[s] & 0xF);
            store(out[2], src[s] >> 4);
        }
        out[3].values.push_back(readHalf(src + 80));
        out[4].values.push_back(readHalf(src + 82));
    }
}

// Q3_K (110 bytes): hmask[32], qs[64], scales[12] (sixteen 6-bit scales stored + 32), d. Weight
// 128h + 32s + l: its low 2 bits as Q2_K's, its third bit bit 4h + s of hmask[l]; the stored 3-bit code
// (low | bit << 2) stands for code - 4.
void q3_KFields(const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const std::int64_t n = blocks * kQk;
    out.push_back(integerField(R::Codes, "3-bit codes", 1, offsetLevels(8, 4), n));
    out.push_back(integerField(R::Scales, "6-bit sub-block scales", 16, offsetLevels(64, 32), n));
    out.push_back(floatField(R::SuperScale, "f16 d", kQk, n));
    int scales[16];
    for (std::int64_t b = 0; b < blocks; ++b, src += 110) {
        for (int i = 0; i < kQk; ++i) {
            const int h = i / 128, s = i % 128 / 32, l = i % 32;
            const int low = (src[32 + 32 * h + l] >> (2 * s)) & 3;
            store(out[0], low | (((src[l] >> (4 * h + s)) & 1) << 2));
        }
        ggml::unpackScalesQ3K(src + 96, scales);
        for (const int sc : scales) store(out[1], sc + 32);
        out[2].values.push_back(readHalf(src + 108));
    }
}

// Q4_K (144 bytes) / Q5_K (176 bytes): d, dmin, scales[12] (eight 6-bit scales and mins, one per 32
// weights), [Q5_K: qh[32]], qs[128]. Weight 64g + l is the low nibble, 64g + 32 + l the high nibble of
// qs[32g + l]; Q5_K's fifth bit of weight 64g + 32h + l is bit 2g + h of qh[l].
void scaleMinK4Fields(bool fifthBit, const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const std::int64_t n = blocks * kQk;
    out.push_back(
        integerField(R::Codes, fifthBit ? "5-bit codes" : "4-bit codes", 1, offsetLevels(fifthBit ? 32 : 16, 0), n));
    out.push_back(integerField(R::Scales, "6-bit sub-block scales", 32, offsetLevels(64, 0), n));
    out.push_back(integerField(R::Mins, "6-bit sub-block mins", 32, offsetLevels(64, 0), n));
    out.push_back(floatField(R::SuperScale, "f16 d", kQk, n));
    out.push_back(floatField(R::SuperMin, "f16 dmin", kQk, n));
    const int qsAt = fifthBit ? 48 : 16;
    for (std::int64_t b = 0; b < blocks; ++b, src += qsAt + kQk / 2) {
        for (int i = 0; i < kQk; ++i) {
            const int g = i / 64, half = i % 64 / 32, l = i % 32;
            const int nibble = (src[qsAt + 32 * g + l] >> (4 * half)) & 0xF;
            store(out[0], fifthBit ? nibble | (((src[16 + l] >> (2 * g + half)) & 1) << 4) : nibble);
        }
        for (int j = 0; j < 8; ++j) {
            std::uint8_t sc, mn;
            ggml::unpackScaleMinK4(j, src + 4, sc, mn);
            store(out[1], sc);
            store(out[2], mn);
        }
        out[3].values.push_back(readHalf(src));
        out[4].values.push_back(readHalf(src + 2));
    }
}

// Q6_K (210 bytes): ql[128], qh[64], scales[16] (int8, one per 16 weights), d. Weight 128h + 32k + l
// takes its low 4 bits from ql[64h + 32(k%2) + l] (low nibble for k < 2) and its top 2 bits from bits
// 2k..2k+1 of qh[32h + l]; it stands for q - 32.
void q6_KFields(const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const std::int64_t n = blocks * kQk;
    out.push_back(integerField(R::Codes, "6-bit codes", 1, offsetLevels(64, 32), n));
    out.push_back(integerField(R::Scales, "8-bit sub-block scales (int8)", 16, offsetLevels(256, 0), n));
    std::transform(out[1].levels.begin(), out[1].levels.end(), out[1].levels.begin(),
                   [](float k) { return k < 128.0f ? k : k - 256.0f; });
    out.push_back(floatField(R::SuperScale, "f16 d", kQk, n));
    for (std::int64_t b = 0; b < blocks; ++b, src += 210) {
        for (int i = 0; i < kQk; ++i) {
            const int h = i / 128, k = i % 128 / 32, l = i % 32;
            const int low = (src[64 * h + 32 * (k % 2) + l] >> (k < 2 ? 0 : 4)) & 0xF;
            store(out[0], low | (((src[128 + 32 * h + l] >> (2 * k)) & 3) << 4));
        }
        for (int s = 0; s < 16; ++s) store(out[1], src[192 + s]);
        out[2].values.push_back(readHalf(src + 208));
    }
}

// 16 bytes of nibbles -> 32 codes: weight j the low nibble of byte j, weight j + 16 its high nibble
// (NVFP4: 8 bytes -> 16 codes, j and j + 8).
void nibbleCodes(const std::uint8_t* qs, int count, GgmlField& codes) {
    for (int j = 0; j < count; ++j) store(codes, j < count / 2 ? qs[j] & 0xF : qs[j - count / 2] >> 4);
}

std::vector<float> iq4Levels() { return {std::begin(ggml::kIq4nlValues), std::end(ggml::kIq4nlValues)}; }
std::vector<float> e2m1Levels() {
    std::vector<float> levels;
    for (const std::int8_t twice : ggml::kFp4TwiceValues) levels.push_back(0.5f * static_cast<float>(twice));
    return levels;
}

// IQ4_NL (18 bytes): d, qs[16]; w = d * V[q]. IQ4_XS (136 bytes): d, scales_h (u16, 2 bits per 32
// weights), scales_l[4] (a nibble per 32), qs[128]; the 6-bit scale ls stands for ls - 32.
void iq4Fields(bool superBlock, const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const int block = superBlock ? kQk : 32;
    const std::int64_t n = blocks * block;
    out.push_back(integerField(R::Codes, "4-bit codes into a 16-level table", 1, iq4Levels(), n));
    if (!superBlock) {
        out.push_back(floatField(R::Scales, "f16 d", 32, n));
        for (std::int64_t b = 0; b < blocks; ++b, src += 18) {
            out[1].values.push_back(readHalf(src));
            nibbleCodes(src + 2, 32, out[0]);
        }
        return;
    }
    out.push_back(integerField(R::Scales, "6-bit sub-block scales", 32, offsetLevels(64, 32), n));
    out.push_back(floatField(R::SuperScale, "f16 d", kQk, n));
    for (std::int64_t b = 0; b < blocks; ++b, src += 136) {
        const std::uint16_t high = ggml::readU16(src + 2);
        for (int g = 0; g < 8; ++g) {
            nibbleCodes(src + 8 + 16 * g, 32, out[0]);
            store(out[1], ((src[4 + g / 2] >> (4 * (g % 2))) & 0xF) | (((high >> (2 * g)) & 3) << 4));
        }
        out[2].values.push_back(readHalf(src));
    }
}

// MXFP4 (17 bytes): e (E8M0), qs[16]; w = e2m1(q) * 2^(e - 127). NVFP4 (36 bytes, 64 weights): d[4]
// (UE4M3, one per 16), qs[32]; w = e2m1(q) * ue4m3(d).
void fp4Fields(bool nvfp4, const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const int block = nvfp4 ? 64 : 32;
    const std::int64_t n = blocks * block;
    out.push_back(integerField(R::Codes, "E2M1 codes", 1, e2m1Levels(), n));
    if (nvfp4) {
        std::vector<float> scales(256);
        for (int x = 0; x < 256; ++x)
            scales[static_cast<std::size_t>(x)] = 2.0f * ggml::ue4m3HalfToFloat(static_cast<std::uint8_t>(x));
        out.push_back(integerField(R::Scales, "UE4M3 scales", 16, std::move(scales), n));
        for (std::int64_t b = 0; b < blocks; ++b, src += 36)
            for (int s = 0; s < 4; ++s) {
                store(out[1], src[s]);
                nibbleCodes(src + 4 + 8 * s, 16, out[0]);
            }
        return;
    }
    out.push_back(integerField(R::Scales, "E8M0 scales (power-of-two exponents)", 32, offsetLevels(256, 127), n));
    for (std::int64_t b = 0; b < blocks; ++b, src += 17) {
        store(out[1], src[0]);
        nibbleCodes(src + 1, 32, out[0]);
    }
}

// TQ1_0 (54 bytes): qs[48], qh[4], d; five trits per byte (four in qh), trit n of byte b is
// ((uint8)(b * 3^n) * 3) >> 8. Weight 32n + m is trit n of qs[m], 160 + 16n + m of qs[32 + m], 240 + 4n + m
// of qh[m]. TQ2_0 (66 bytes): qs[64], d; weight 128h + 32k + m is bits 2k..2k+1 of qs[32h + m]. Both
// store t, standing for t - 1.
void ternaryFields(bool packed, const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    const std::int64_t n = blocks * kQk;
    out.push_back(integerField(R::Codes, packed ? "ternary codes (5 per byte)" : "2-bit ternary codes", 1,
                               offsetLevels(packed ? 3 : 4, 1), n));
    out.push_back(floatField(R::Scales, "f16 d", kQk, n));
    static constexpr std::uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const auto trits = [&](const std::uint8_t* bytes, int count, int digits) {
        for (int t = 0; t < digits; ++t)
            for (int m = 0; m < count; ++m) store(out[0], (static_cast<std::uint8_t>(bytes[m] * kPow3[t]) * 3) >> 8);
    };
    for (std::int64_t b = 0; b < blocks; ++b, src += packed ? 54 : 66) {
        if (packed) {
            trits(src, 32, 5);
            trits(src + 32, 16, 5);
            trits(src + 48, 4, 4);
        } else {
            for (int i = 0; i < kQk; ++i) store(out[0], (src[32 * (i / 128) + i % 32] >> (2 * (i % 128 / 32))) & 3);
        }
        out[1].values.push_back(readHalf(src + (packed ? 52 : 64)));
    }
}

// The fields of `blocks` blocks of a type with codes per weight; false for any other type.
bool codeBlockFields(GgmlType type, const std::uint8_t* src, std::int64_t blocks, Fields& out) {
    using T = GgmlType;
    switch (type) {
        case T::Q4_0: legacyFields(false, false, src, blocks, out); return true;
        case T::Q4_1: legacyFields(true, false, src, blocks, out); return true;
        case T::Q5_0: legacyFields(false, true, src, blocks, out); return true;
        case T::Q5_1: legacyFields(true, true, src, blocks, out); return true;
        case T::Q8_0: q8_0Fields(src, blocks, out); return true;
        case T::Q1_0: lowBitFields(1, src, blocks, out); return true;
        case T::Q2_0: lowBitFields(2, src, blocks, out); return true;
        case T::Q2_K: q2_KFields(src, blocks, out); return true;
        case T::Q3_K: q3_KFields(src, blocks, out); return true;
        case T::Q4_K: scaleMinK4Fields(false, src, blocks, out); return true;
        case T::Q5_K: scaleMinK4Fields(true, src, blocks, out); return true;
        case T::Q6_K: q6_KFields(src, blocks, out); return true;
        case T::IQ4_NL: iq4Fields(false, src, blocks, out); return true;
        case T::IQ4_XS: iq4Fields(true, src, blocks, out); return true;
        case T::MXFP4: fp4Fields(false, src, blocks, out); return true;
        case T::NVFP4: fp4Fields(true, src, blocks, out); return true;
        case T::TQ1_0: ternaryFields(true, src, blocks, out); return true;
        case T::TQ2_0: ternaryFields(false, src, blocks, out); return true;
        default: return false;
    }
}

}  // namespace

std::size_t GgmlField::size() const {
    if (!isInteger()) return values.size();
    if (!counts.empty())
        return static_cast<std::size_t>(std::accumulate(counts.begin(), counts.end(), std::uint64_t{0}));
    return stored.size();
}

std::vector<std::uint64_t> GgmlField::usage() const {
    if (!counts.empty()) return counts;
    std::vector<std::uint64_t> used(levels.size());
    for (const std::uint16_t v : stored) ++used[v];
    return used;
}

const GgmlField* GgmlBlockFields::find(GgmlFieldRole role) const {
    const auto it = std::find_if(fields.begin(), fields.end(), [&](const GgmlField& f) { return f.role == role; });
    return it == fields.end() ? nullptr : &*it;
}

bool ggmlHasBlockFields(GgmlType type) {
    const GgmlTypeTraits& traits = ggmlTypeTraits(type);
    return traits.decodes && !traits.isFloat;
}

GgmlBlockFields ggmlBlockFields(GgmlType type, std::span<const std::uint8_t> bytes, std::int64_t n) {
    const GgmlTypeTraits& traits = ggmlTypeTraits(type);
    if (!ggmlHasBlockFields(type)) throw Error("ggml type " + std::string(traits.name) + " stores no block fields");
    const std::size_t need = ggmlRowBytes(type, n);  // checks whole blocks
    if (bytes.size() < need)
        throw Error("ggml type " + std::string(traits.name) + ": " + std::to_string(bytes.size()) + " bytes for " +
                    std::to_string(n) + " weights, which take " + std::to_string(need));
    GgmlBlockFields result;
    result.type = type;
    result.weights = n;
    const std::int64_t blocks = n / traits.blockElements;
    if (!codeBlockFields(type, bytes.data(), blocks, result.fields) &&
        !ggml::gridBlockFields(type, bytes.data(), blocks, result.fields))
        throw Error("ggml type " + std::string(traits.name) + " stores no block fields");  // a decoder without fields
    return result;
}

namespace {

// Adds one slice's fields to the tensor's: counts for the integer fields, values for the float ones.
void addSlice(GgmlBlockFields& total, GgmlBlockFields&& slice) {
    if (total.fields.empty()) {
        total.fields = std::move(slice.fields);
        for (GgmlField& f : total.fields)
            if (f.isInteger()) {
                f.counts = f.usage();
                f.stored = {};
            }
        return;
    }
    for (std::size_t i = 0; i < total.fields.size(); ++i) {
        GgmlField& to = total.fields[i];
        const GgmlField& from = slice.fields[i];
        if (to.isInteger()) {
            const auto counts = from.usage();
            for (std::size_t k = 0; k < counts.size(); ++k) to.counts[k] += counts[k];
        } else {
            to.values.insert(to.values.end(), from.values.begin(), from.values.end());
        }
    }
}

}  // namespace

GgmlBlockFields ggmlBlockFieldCounts(GgmlType type, std::span<const std::uint8_t> bytes, std::int64_t rows,
                                     std::int64_t n, const CancelToken& cancel) {
    const std::size_t rowBytes = ggmlRowBytes(type, n);
    if (rows < 0 || bytes.size() < rowBytes * static_cast<std::size_t>(rows))
        throw Error("ggml type " + std::string(ggmlTypeTraits(type).name) + ": " + std::to_string(bytes.size()) +
                    " bytes for " + std::to_string(rows) + " rows of " + std::to_string(n) + " weights");
    // About a million weights per slice: a few MB of fields at a time.
    const std::int64_t slice = std::max<std::int64_t>(1, (std::int64_t{1} << 20) / std::max<std::int64_t>(n, 1));
    GgmlBlockFields total;
    total.type = type;
    total.weights = rows * n;
    for (std::int64_t r = 0; r < rows; r += slice) {
        cancel.throwIfCancelled();
        const std::int64_t count = std::min(slice, rows - r);
        addSlice(total, ggmlBlockFields(type, bytes.subspan(static_cast<std::size_t>(r) * rowBytes), count * n));
    }
    if (total.fields.empty()) total = ggmlBlockFields(type, bytes, 0);  // no rows: the fields, empty
    return total;
}

}  // namespace qs::io
