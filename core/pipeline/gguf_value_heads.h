#pragma once
// Private to qs_pipeline: Qwen3.5's linear attention as llama.cpp's converter writes it
// (_LinearAttentionVReorderBase). With fewer key heads than value heads, transformers reads value head h with key
// head h / (value heads / key heads) (grouped), llama.cpp's graph with key head h % key heads (tiled, ggml's
// broadcast): the converter moves the value heads from grouped to tiled order in every tensor they index.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "qs/io/ggml_type.h"
#include "qs/quant/quantized_linear.h"

namespace qs::pipeline {

// Which part of a tensor holds the value heads: rows [offset, ...) in runs of `block` rows per head, or with
// `columns` each row's items [offset, ...) in runs of `block`.
struct ValueHeadOrder {
    int keyHeads = 0, perKey = 0, block = 0;
    std::int64_t offset = 0;
    bool columns = false;
};

// `values` (row-major, `shape` [rows] or [rows, cols]) with the value heads tiled.
void tileValueHeads(std::vector<float>& values, const std::vector<std::int64_t>& shape, const ValueHeadOrder& o);

// Whether a Job-quantized linear's rows of ggml blocks can be tiled: rows always, columns when a head's columns
// are whole blocks of `type` (Q8_0's 32 in heads of 128, not a K-quant's 256).
bool tilesBlocks(const ValueHeadOrder& o, io::GgmlType type);

// `bytes`, q's blocks, with the value heads tiled (tilesBlocks must hold).
std::vector<std::byte> tiledBlocks(std::vector<std::byte> bytes, const quant::QuantizedLinear& q,
                                   const ValueHeadOrder& o);

}  // namespace qs::pipeline
