#pragma once
// The rounding error of a quantized checkpoint against the checkpoint it was quantized from: per
// linear, decoded − original, element by element. What "Compare with original…" draws; the shapes and
// names are checked first from the headers, so a wrong folder is refused in one line before anything
// is decoded.
#include <cstdint>
#include <vector>

#include "qs/formats/format_info.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"

namespace qs::formats {

// Throws qs::Error (naming both folders and the first linear that does not fit) unless every quantized
// linear of `quantized` has a linear of the same name and [out, in] shape in `original`.
void checkOriginal(const FormatInfo& quantized, const io::Checkpoint& quantizedCheckpoint,
                   const io::Checkpoint& original);

struct RoundingError {
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    std::vector<float> difference;  // decoded − original, row-major [rows, cols]
    double rms = 0.0;               // sqrt(mean(difference²))
    double originalRms = 0.0;       // sqrt(mean(original²)): the scale the error is read against
};

// Decodes `ref` from both readers (throws qs::Error when either lacks it or the shapes differ).
RoundingError roundingError(const LinearReader& quantized, const LinearReader& original, const LinearRef& ref);
// The same of two matrices decoded before (throws qs::Error naming `ref` when their shapes differ).
RoundingError roundingError(const MatrixF& quantized, const MatrixF& original, const LinearRef& ref);

}  // namespace qs::formats
