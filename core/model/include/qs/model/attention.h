#pragma once
// Causal scaled-dot-product attention with grouped-query heads (GQA), f32, over a whole sequence at
// once. Query head h reads key/value head h / (numHeads / numKvHeads), as HF's repeat_kv does.
#include "qs/eigen.h"
#include "qs/matrix.h"

namespace qs::model {

struct AttentionShape {
    int numHeads = 0;
    int numKvHeads = 0;
    int headDim = 0;
    int slidingWindow = 0;  // 0: full causal; else key j is visible from query i when i - j < window
    // gpt-oss's attention sinks: numHeads logits, one per query head, that join the softmax's denominator
    // (exp(sink - max) is added to the sum, and no value is read for it). Null: none.
    const float* sinks = nullptr;
    // Llama 4's chunked attention: query i sees key j only when both lie in the same run of `chunk` positions
    // (i / chunk == j / chunk), besides j <= i. 0: no chunks.
    int chunk = 0;
};

// q [Tq, numHeads*headDim], k and v [Tk, numKvHeads*headDim] with Tk >= Tq: the queries are the last
// Tq positions of the Tk keys (a KV cache holds the first Tk - Tq). Returns [Tq, numHeads*headDim].
MatrixF causalAttention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                        const Eigen::Ref<const MatrixF>& v, const AttentionShape& shape);

}  // namespace qs::model
