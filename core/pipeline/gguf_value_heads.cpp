// Qwen3.5's value heads from grouped to tiled order (gguf_value_heads.h).
#include "gguf_value_heads.h"

#include <algorithm>

namespace qs::pipeline {

namespace {

// Grouped [k0: v0..v(r-1), k1: ...] -> tiled [v0: k0, k1, ...; v1: ...] (convert_hf_to_gguf's _reorder_v_heads) in
// a row-major table of `rows` rows of `rowLength` items: each value head's `run` rows from row `offset`, or with
// o.columns each row's run of `run` items from item `offset`. Items are values, or a quantized row's bytes.
template <typename T>
void tile(std::vector<T>& data, std::int64_t rows, std::int64_t rowLength, const ValueHeadOrder& o, std::int64_t offset,
          std::int64_t run) {
    const std::int64_t heads = std::int64_t(o.keyHeads) * o.perKey;
    const std::vector<T> old = data;
    const auto target = [&](std::int64_t head) {  // grouped index kh * perKey + j -> tiled j * keyHeads + kh
        return (head % o.perKey) * o.keyHeads + head / o.perKey;
    };
    if (o.columns) {
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t h = 0; h < heads; ++h)
                std::copy_n(old.begin() + r * rowLength + offset + h * run, run,
                            data.begin() + r * rowLength + offset + target(h) * run);
        return;
    }
    for (std::int64_t h = 0; h < heads; ++h)
        std::copy_n(old.begin() + (offset + h * run) * rowLength, run * rowLength,
                    data.begin() + (offset + target(h) * run) * rowLength);
}

}  // namespace

void tileValueHeads(std::vector<float>& values, const std::vector<std::int64_t>& shape, const ValueHeadOrder& o) {
    tile(values, shape.front(), shape.size() > 1 ? shape.back() : 1, o, o.offset, o.block);
}

bool tilesBlocks(const ValueHeadOrder& o, io::GgmlType type) {
    const int block = io::ggmlTypeTraits(type).blockElements;
    return !o.columns || (o.block % block == 0 && o.offset % block == 0);
}

std::vector<std::byte> tiledBlocks(std::vector<std::byte> bytes, const quant::QuantizedLinear& q,
                                   const ValueHeadOrder& o) {
    const io::GgmlTypeTraits& traits = io::ggmlTypeTraits(q.ggmlType);
    const std::int64_t rowBytes = q.cols / traits.blockElements * traits.blockBytes;
    const auto bytesOf = [&](std::int64_t columns) { return columns / traits.blockElements * traits.blockBytes; };
    if (o.columns)
        tile(bytes, q.rows, rowBytes, o, bytesOf(o.offset), bytesOf(o.block));
    else
        tile(bytes, q.rows, rowBytes, o, o.offset, o.block);
    return bytes;
}

}  // namespace qs::pipeline
