#pragma once
// Scale tensors that broadcast over a weight [rows, cols] in blocks: per tensor ([] / [1]), per
// channel ([rows] / [rows, 1]), per group ([rows, ceil(cols / G)]) or per block
// ([ceil(rows / bn), ceil(cols / bk)]). FP8 (docs/formats/fp8.md), compressed-tensors and
// ModelOpt FP8 store them this way; the grid is what QuantizedLinear::scales holds.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "qs/io/checkpoint.h"
#include "qs/matrix.h"

namespace qs::formats::detail {

struct ScaleGrid {
    MatrixF scales;  // [ceil(rows / blockRows), ceil(cols / blockCols)]
    int blockRows = 1;
    int blockCols = 1;
    std::string granularity;  // "tensor", "channel", "group", "block"
};

struct ScaleHint {
    std::optional<std::pair<int, int>> block;  // [bn, bk] from weight_block_size / block_structure
    int groupSize = -1;                        // > 0 for group scales
};

// Throws qs::Error naming the scale tensor when its shape fits none of the layouts.
ScaleGrid readScaleGrid(const io::Checkpoint& checkpoint, const io::TensorView& scale, std::int64_t rows,
                        std::int64_t cols, const ScaleHint& hint);

}  // namespace qs::formats::detail
