#pragma once
// What a ggml block type stores, field by field: for one GGUF tensor's bytes, every block's codes (or
// codebook indices and signs), its sub-block scales and mins as the integers stored, and its F16 scales,
// each as one series in weight order. ggmlDecodeRow turns the same bytes into weights; this says what
// they are made of (a Q4_K tensor's 4-bit codes, 6-bit scales and mins per 32 weights, F16 d and dmin
// per 256). docs/formats/gguf-types.md gives each type's fields and the formula that combines them.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/io/ggml_type.h"

namespace qs::io {

enum class GgmlFieldRole {
    Codes,        // one per weight: the integer, table, E2M1 or ternary code
    GridIndices,  // IQ1/IQ2/IQ3: one per 8 (or 4) weights, the entry of the type's codebook
    Signs,        // IQ2/IQ3: one per weight, 1 where the codebook's value is negated (the implied 8th
                  // sign bit included)
    Deltas,       // IQ1: the sign of the ±1/8 shift, one per group of weights
    Scales,       // the finest scale: a sub-block's integer scale, or a legacy block's F16 d
    Mins,         // its min (Q2_K, Q4_K, Q5_K), or a legacy block's F16 m
    SuperScale,   // the super-block's F16 d (K-quants, IQ types with sub-block scales)
    SuperMin,     // the super-block's F16 dmin
};

// One field of every block, in weight order. An integer field keeps each value as stored (the bits of
// the field, 0 .. levels.size() - 1) and says what each stored integer stands for in the type's
// formula: Q4_0's code q stands for q − 8, Q3_K's scale l for l − 32, Q8_0's byte for its int8,
// MXFP4's E8M0 e for the exponent e − 127, NVFP4's UE4M3 byte for its value. A float field (the F16
// scales) keeps the values themselves, exactly.
struct GgmlField {
    GgmlFieldRole role = GgmlFieldRole::Codes;
    std::string what;                   // "4-bit codes", "6-bit sub-block scales", "f16 d"
    int weightsPerValue = 1;            // the weights one value serves: 1, 8, 32, 256, ...
    std::vector<float> levels;          // integer fields: what stored integer k stands for; empty: float field
    std::vector<std::uint16_t> stored;  // integer fields: one per value
    std::vector<float> values;          // float fields: one per value
    // Integer fields summarised by ggmlBlockFieldCounts: how many values are stored as each integer
    // (`stored` then stays empty).
    std::vector<std::uint64_t> counts;

    bool isInteger() const { return !levels.empty(); }
    std::size_t size() const;
    // How many values are stored as each integer (levels.size() counts); integer fields only.
    std::vector<std::uint64_t> usage() const;
};

struct GgmlBlockFields {
    GgmlType type = GgmlType::F32;
    std::int64_t weights = 0;
    std::vector<GgmlField> fields;  // in the order a reader meets them: codes first, super-block scales last

    const GgmlField* find(GgmlFieldRole role) const;  // nullptr when the type has no such field
};

// Whether ggmlBlockFields knows `type`'s fields: every block type ggmlDecodeRow decodes (not the plain
// float types, which store numbers, not fields).
bool ggmlHasBlockFields(GgmlType type);

// The fields of n weights (whole blocks; a tensor's rows one after the other) of `type` at `bytes`
// (at least ggmlRowBytes(type, n) of them). Throws qs::Error for a type without fields, a count that is
// not whole blocks, or too few bytes.
GgmlBlockFields ggmlBlockFields(GgmlType type, std::span<const std::uint8_t> bytes, std::int64_t n);

// The fields of a whole tensor, `rows` rows of n weights, summarised: read a slice of rows at a time,
// integer fields keep their counts (`counts`, no `stored` value per weight), float fields their values
// (one per block at most). What a view of a large tensor needs, in the memory of a slice; `cancel` is
// polled between slices.
GgmlBlockFields ggmlBlockFieldCounts(GgmlType type, std::span<const std::uint8_t> bytes, std::int64_t rows,
                                     std::int64_t n, const CancelToken& cancel = {});

}  // namespace qs::io
