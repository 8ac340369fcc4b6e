#pragma once
// Helpers shared by the two files that read ggml blocks field by field (ggml_block_fields.cpp: the
// types with per-weight codes; ggml_block_fields_grid.cpp: the codebook types).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "qs/io/ggml_block_fields.h"

namespace qs::io::ggml {

// What stored integer k stands for, k = 0 .. count - 1: k - offset.
inline std::vector<float> offsetLevels(int count, int offset) {
    std::vector<float> levels(static_cast<std::size_t>(count));
    for (int k = 0; k < count; ++k) levels[static_cast<std::size_t>(k)] = static_cast<float>(k - offset);
    return levels;
}

inline GgmlField integerField(GgmlFieldRole role, std::string what, int weightsPerValue, std::vector<float> levels,
                              std::int64_t weights) {
    GgmlField f{role, std::move(what), weightsPerValue, std::move(levels), {}, {}, {}};
    f.stored.reserve(static_cast<std::size_t>(weights / weightsPerValue));
    return f;
}

inline GgmlField floatField(GgmlFieldRole role, std::string what, int weightsPerValue, std::int64_t weights) {
    GgmlField f{role, std::move(what), weightsPerValue, {}, {}, {}, {}};
    f.values.reserve(static_cast<std::size_t>(weights / weightsPerValue));
    return f;
}

inline void store(GgmlField& f, int value) { f.stored.push_back(static_cast<std::uint16_t>(value)); }

// IQ sign fields: stored 1 means the codebook's value is negated.
inline std::vector<float> signLevels() { return {1.0f, -1.0f}; }

// The fields of the codebook types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) of `blocks`
// super-blocks at src; false for any other type.
bool gridBlockFields(GgmlType type, const std::uint8_t* src, std::int64_t blocks, std::vector<GgmlField>& fields);

}  // namespace qs::io::ggml
