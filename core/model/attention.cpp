#include "qs/model/attention.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qs/error.h"

namespace qs::model {
namespace {

constexpr Eigen::Index kQueryBlock = 64;  // queries per task: a block's scores (64 × keys) stay in L2

void checkShapes(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                 const Eigen::Ref<const MatrixF>& v, const AttentionShape& s) {
    if (s.numHeads <= 0 || s.numKvHeads <= 0 || s.headDim <= 0 || s.numHeads % s.numKvHeads != 0)
        throw Error("attention: invalid head configuration");
    if (q.cols() != static_cast<Eigen::Index>(s.numHeads) * s.headDim ||
        k.cols() != static_cast<Eigen::Index>(s.numKvHeads) * s.headDim || v.cols() != k.cols() || v.rows() != k.rows())
        throw Error("attention: q/k/v widths do not match the head configuration");
    if (k.rows() < q.rows()) throw Error("attention: fewer keys (" + std::to_string(k.rows()) + ") than queries");
}

// Softmax of each row of scores over its visible keys [first, last]; invisible keys get weight 0. A sink
// (gpt-oss; null: none) is one more logit in every row: it takes part in the max and the denominator,
// as transformers concatenates it to the scores, and is dropped after.
// `keyBase`: the position of the scores' first column (a chunk starts where position / chunk changes).
void maskedSoftmax(MatrixF& scores, Eigen::Index offset, int window, const float* sink, int chunk = 0,
                   Eigen::Index keyBase = 0) {
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        const Eigen::Index last = offset + i;
        Eigen::Index first = window > 0 ? std::max<Eigen::Index>(0, last - window + 1) : 0;
        if (chunk > 0) first = std::max(first, (keyBase + last) / chunk * chunk - keyBase);
        auto row = scores.row(i);
        auto visible = row.segment(first, last - first + 1);
        const float maxv = sink ? std::max(visible.maxCoeff(), *sink) : visible.maxCoeff();
        visible = (visible.array() - maxv).exp();
        visible /= visible.sum() + (sink ? std::exp(*sink - maxv) : 0.0f);
        row.head(first).setZero();
        row.tail(row.size() - last - 1).setZero();
    }
}

}  // namespace

MatrixF causalAttention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                        const Eigen::Ref<const MatrixF>& v, const AttentionShape& s) {
    checkShapes(q, k, v, s);
    const Eigen::Index tq = q.rows(), tk = k.rows(), d = s.headDim;
    const Eigen::Index offset = tk - tq;
    const int group = s.numHeads / s.numKvHeads;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
    MatrixF out(tq, q.cols());
    // One task per head and block of kQueryBlock queries: each block multiplies only the keys its rows
    // can see (causal: half of the square for a prompt, less with a sliding window), and its scores stay
    // in cache between the softmax and the product with V. Eigen runs its GEMMs single-threaded inside
    // an OpenMP region, so the tasks are the parallelism, and the result does not depend on the thread
    // count. The longest blocks (the last queries) are handed out first.
    const Eigen::Index blocks = (tq + kQueryBlock - 1) / kQueryBlock;
    const Eigen::Index tasks = blocks * s.numHeads;
#pragma omp parallel for schedule(dynamic, 1) if (tq * tk * s.numHeads > 32768)
    for (Eigen::Index task = 0; task < tasks; ++task) {
        const int h = static_cast<int>(task % s.numHeads);
        const Eigen::Index first = (blocks - 1 - task / s.numHeads) * kQueryBlock;
        const Eigen::Index rows = std::min(kQueryBlock, tq - first);
        const Eigen::Index lastKey = offset + first + rows - 1;
        Eigen::Index firstKey =
            s.slidingWindow > 0 ? std::max<Eigen::Index>(0, offset + first - s.slidingWindow + 1) : 0;
        if (s.chunk > 0) firstKey = std::max(firstKey, (offset + first) / s.chunk * s.chunk);
        const Eigen::Index keys = lastKey - firstKey + 1;
        const Eigen::Index kvCol = static_cast<Eigen::Index>(h / group) * d;
        MatrixF scores(rows, keys);
        scores.noalias() = q.block(first, h * d, rows, d) * k.block(firstKey, kvCol, keys, d).transpose();
        scores *= scale;
        maskedSoftmax(scores, offset + first - firstKey, s.slidingWindow, s.sinks ? s.sinks + h : nullptr, s.chunk,
                      firstKey);
        out.block(first, h * d, rows, d).noalias() = scores * v.block(firstKey, kvCol, keys, d);
    }
    return out;
}

}  // namespace qs::model
