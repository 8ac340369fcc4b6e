#pragma once
// Test-only: the weights of a ggml tensor recomposed from the fields io::ggmlBlockFields extracted, with
// each type's formula as docs/formats/gguf-types.md (and ggml's dequantize_row_*) writes it, rounding as
// ggml's C does (each product on its own; the including test is built with -ffp-contract=off). Read
// from the stored integers, not from the fields' `levels`, so that the levels are checked apart.
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "qs/io/ggml_block_fields.h"

// The private codebooks of core/io, as the decoders read them.
#include "ggml_iq_grid_data.h"

namespace qs::test {

using io::GgmlFieldRole;
using io::GgmlType;

inline const io::GgmlField& fieldOf(const io::GgmlBlockFields& f, GgmlFieldRole role) {
    const io::GgmlField* field = f.find(role);
    if (!field) throw std::runtime_error("missing field");
    return *field;
}

// The value of `field` that serves weight i.
inline int storedAt(const io::GgmlField& f, std::int64_t i) {
    return f.stored.at(static_cast<std::size_t>(i / f.weightsPerValue));
}
inline float valueAt(const io::GgmlField& f, std::int64_t i) {
    return f.values.at(static_cast<std::size_t>(i / f.weightsPerValue));
}

// E2M1: codes 8 … 15 are the negatives of 0 … 7, but code 8 is +0 in ggml (its table holds integers).
inline float e2m1(int q) {
    static constexpr float kValues[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    return q <= 8 ? kValues[q % 8] : -kValues[q - 8];
}

// UE4M3: (8 + man) · 2^(exp − 7), man · 2^−9 when exp = 0; 0x00 and 0x7F decode to 0.
inline float ue4m3(int x) {
    if (x == 0 || x == 0x7F) return 0.0f;
    const int exponent = (x >> 3) & 0xF, mantissa = x & 7;
    return exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                         : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
}

// Element k of codebook entry `index` of an IQ type.
inline float gridValue(GgmlType type, int index, int k) {
    static constexpr int kIq2[3] = {8, 25, 43};
    static constexpr int kIq3xxs[8] = {4, 12, 20, 28, 36, 44, 52, 62};
    static constexpr int kIq1[3] = {-1, 0, 1};
    namespace g = io::ggml::grids;
    const auto two = [&](const std::uint16_t* grid) { return (grid[index] >> (2 * k)) & 3; };
    const auto three = [&](const std::uint16_t* grid) { return (grid[index] >> (3 * k)) & 7; };
    switch (type) {
        case GgmlType::IQ2_XXS: return static_cast<float>(kIq2[two(g::kIq2xxs)]);
        case GgmlType::IQ2_XS: return static_cast<float>(kIq2[two(g::kIq2xs)]);
        case GgmlType::IQ2_S: return static_cast<float>(kIq2[two(g::kIq2s)]);
        case GgmlType::IQ3_XXS: return static_cast<float>(kIq3xxs[three(g::kIq3xxs)]);
        case GgmlType::IQ3_S: return static_cast<float>(1 + 2 * three(g::kIq3s));
        default: return static_cast<float>(kIq1[two(g::kIq1s)]);
    }
}

inline float int8Of(int byte) { return static_cast<float>(static_cast<std::int8_t>(static_cast<std::uint8_t>(byte))); }

// The codebook types: (scale · g) · ±1 (IQ2, IQ3), scale · (g ± 1/8) (IQ1).
inline float gridWeight(GgmlType type, const io::GgmlBlockFields& f, std::int64_t i) {
    const io::GgmlField& index = fieldOf(f, GgmlFieldRole::GridIndices);
    const float d = valueAt(fieldOf(f, GgmlFieldRole::SuperScale), i);
    const auto s = static_cast<float>(storedAt(fieldOf(f, GgmlFieldRole::Scales), i));
    const float g = gridValue(type, storedAt(index, i), static_cast<int>(i % index.weightsPerValue));
    if (type == GgmlType::IQ1_S || type == GgmlType::IQ1_M) {
        const float delta = storedAt(fieldOf(f, GgmlFieldRole::Deltas), i) ? -0.125f : 0.125f;
        return (d * (2.0f * s + 1.0f)) * (g + delta);
    }
    float scale = 0.0f;
    if (type == GgmlType::IQ3_S)
        scale = d * (1.0f + 2.0f * s);
    else if (type == GgmlType::IQ3_XXS)
        scale = d * (0.5f + s) * 0.5f;
    else
        scale = d * (0.5f + s) * 0.25f;
    return (scale * g) * (storedAt(fieldOf(f, GgmlFieldRole::Signs), i) ? -1.0f : 1.0f);
}

// Weight i of `type` from its fields.
inline float recomposedWeight(GgmlType type, const io::GgmlBlockFields& f, std::int64_t i) {
    using T = GgmlType;
    using R = GgmlFieldRole;
    const io::GgmlField& codes = f.find(R::Codes) ? *f.find(R::Codes) : fieldOf(f, R::GridIndices);
    const int q = storedAt(codes, i);
    const auto sub = [&] { return storedAt(fieldOf(f, R::Scales), i); };
    const auto subMin = [&] { return storedAt(fieldOf(f, R::Mins), i); };
    const auto d = [&] { return valueAt(fieldOf(f, f.find(R::SuperScale) ? R::SuperScale : R::Scales), i); };
    const auto dmin = [&] { return valueAt(fieldOf(f, f.find(R::SuperMin) ? R::SuperMin : R::Mins), i); };
    static constexpr int kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    switch (type) {
        case T::Q4_0: return static_cast<float>(q - 8) * d();
        case T::Q5_0: return static_cast<float>(q - 16) * d();
        case T::Q4_1:
        case T::Q5_1: return static_cast<float>(q) * d() + dmin();
        case T::Q8_0: return int8Of(q) * d();
        case T::Q1_0: return q ? d() : -d();
        case T::Q2_0:
        case T::TQ1_0:
        case T::TQ2_0: return static_cast<float>(q - 1) * d();
        case T::Q2_K:
        case T::Q4_K:
        case T::Q5_K:
            return (d() * static_cast<float>(sub())) * static_cast<float>(q) - (dmin() * static_cast<float>(subMin()));
        case T::Q3_K: return (d() * static_cast<float>(sub() - 32)) * static_cast<float>(q - 4);
        case T::Q6_K: return (d() * int8Of(sub())) * static_cast<float>(q - 32);
        case T::IQ4_NL: return d() * static_cast<float>(kIq4[q]);
        case T::IQ4_XS: return (d() * static_cast<float>(sub() - 32)) * static_cast<float>(kIq4[q]);
        case T::MXFP4:  // exact in double; the one rounding (or overflow) is the cast
            return static_cast<float>(static_cast<double>(e2m1(q)) * std::ldexp(1.0, sub() - 127));
        case T::NVFP4: return e2m1(q) * ue4m3(sub());
        default: return gridWeight(type, f, i);
    }
}

inline std::vector<float> recompose(GgmlType type, const io::GgmlBlockFields& f) {
    std::vector<float> out(static_cast<std::size_t>(f.weights));
    for (std::int64_t i = 0; i < f.weights; ++i) out[static_cast<std::size_t>(i)] = recomposedWeight(type, f, i);
    return out;
}

// Positions where a and b differ in their bits (two NaNs count as equal: random F16 scales may be NaN).
inline std::int64_t bitMismatches(const std::vector<float>& a, const std::vector<float>& b) {
    std::int64_t n = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(std::isnan(a[i]) && std::isnan(b[i])) &&
            std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]))
            ++n;
    return n;
}

}  // namespace qs::test
