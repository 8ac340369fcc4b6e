#pragma once
// Two quantizations of one model side by side (ours against llama.cpp's Q4_K_M, two downloads): per
// quantized linear of either, the scheme and stored bits per weight of each, the RMS rounding error of
// each against the original when one is named, the RMS of A − B, and whether the decoded weights
// differ at all (bit for bit). What the app's "Side by side" tab lists.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/formats/linear_reader.h"
#include "qs/progress.h"

namespace qs::formats {

// Throws qs::Error in one line unless every quantized linear of either checkpoint has a linear of the
// same name and [out, in] shape in the other (headers only: nothing is decoded).
void checkSameModel(const LinearReader& a, const LinearReader& b);

struct LinearDiff {
    LinearRef ref;
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    std::string typeA;  // LayerQuantInfo::summary() ("int4 g128 asym", "gguf q4_K"), or "dense BF16"
    std::string typeB;
    bool quantizedA = false;  // A stores the linear quantized (else dense: typeA says its element type)
    bool quantizedB = false;
    double bitsA = 0.0;  // storedBitsPerWeight
    double bitsB = 0.0;
    std::optional<double> errorA;  // RMS of decoded A − original (roundingError), with an original
    std::optional<double> errorB;
    double rmsAMinusB = 0.0;  // RMS of decoded A − decoded B
    bool differs = false;     // the decoded weights are not the same bits
};

struct QuantizationDiff {
    std::vector<LinearDiff> linears;  // every linear quantized in A or B (stacked experts aside), by name
    bool withOriginal = false;
};

// One file's side of a diff in a line: over the linears it quantizes, its stored bits per weight weighted by
// out x in (what `quantize` calls the file's bits per weight); with an original, its RMS errors weighted by
// out x in over every linear of the diff, so that A's and B's means cover the same weights.
struct DiffSideSummary {
    int quantizedLinears = 0;
    double bitsPerWeight = 0.0;  // 0 when it quantizes none
    std::optional<double> meanError;
};

struct QuantizationDiffSummary {
    int linears = 0;
    int differing = 0;  // linears whose decoded weights are not the same bits
    DiffSideSummary a, b;
};

QuantizationDiffSummary summarizeDiff(const QuantizationDiff& diff);

// Decodes each linear of both (and of `original`, when given: checked first as checkOriginal does for
// each) one at a time. Throws qs::Error (checkSameModel, a linear that does not decode) or qs::Cancelled.
QuantizationDiff diffQuantizations(const LinearReader& a, const LinearReader& b, const LinearReader* original,
                                   const ProgressCallback& progress, const CancelToken& cancel);

}  // namespace qs::formats
