#include "qs/quant/hessian.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "qs/error.h"

namespace qs::quant {

namespace {

// 256-wide tiles keep each tile's packed panels in L2 and give enough tiles to spread over cores.
constexpr std::int64_t kTile = 256;

}  // namespace

Eigen::MatrixXf gramLower(const Eigen::Ref<const MatrixF>& x) {
    const std::int64_t f = x.cols();
    Eigen::MatrixXf g(f, f);
    const std::int64_t tiles = (f + kTile - 1) / kTile;
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;   // (row tile, col tile), row >= col
    for (std::int64_t i = 0; i < tiles; ++i)
        for (std::int64_t j = 0; j <= i; ++j) pairs.emplace_back(i, j);
    // Each tile is one single-threaded Eigen GEMM (Eigen does not nest inside an OpenMP region), so
    // the result does not depend on which thread computed it: deterministic for any thread count.
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t p = 0; p < pairs.size(); ++p) {
        const auto [ti, tj] = pairs[p];
        const std::int64_t r0 = ti * kTile, c0 = tj * kTile;
        const std::int64_t nr = std::min(kTile, f - r0), nc = std::min(kTile, f - c0);
        g.block(r0, c0, nr, nc).noalias() = x.middleCols(r0, nr).transpose() * x.middleCols(c0, nc);
    }
    return g;
}

MatrixF hessian(const Eigen::Ref<const MatrixF>& x) {
    HessianAccumulator acc(x.cols());
    acc.add(x);
    return acc.finalize();
}

HessianAccumulator::HessianAccumulator(std::int64_t features)
    : features_(features), sum_(Eigen::MatrixXd::Zero(features, features)), absSum_(VectorD::Zero(features)) {
    if (features <= 0) throw Error("HessianAccumulator: features must be positive");
}

void HessianAccumulator::add(const Eigen::Ref<const MatrixF>& x, std::int64_t chunkRows) {
    if (x.cols() != features_)
        throw Error("HessianAccumulator: input has " + std::to_string(x.cols()) + " features, expected " +
                    std::to_string(features_));
    chunkRows = std::max<std::int64_t>(chunkRows, 1);
    for (std::int64_t r = 0; r < x.rows(); r += chunkRows)
        addChunk(x.middleRows(r, std::min(chunkRows, x.rows() - r)));
}

void HessianAccumulator::addChunk(const Eigen::Ref<const MatrixF>& x) {
    const Eigen::MatrixXf g = gramLower(x);
    const std::int64_t f = features_;
    // The f32 chunk sums are exact enough for a few thousand rows; across chunks f64 keeps them.
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < f; ++c)
        sum_.col(c).tail(f - c) += g.col(c).tail(f - c).cast<double>();
    for (std::int64_t t = 0; t < x.rows(); ++t) absSum_ += x.row(t).transpose().cwiseAbs().cast<double>();
    samples_ += x.rows();
}

MatrixF HessianAccumulator::finalize() const {
    if (samples_ == 0) throw Error("HessianAccumulator: no samples were added");
    const double k = 2.0 / static_cast<double>(samples_);
    MatrixF h(features_, features_);
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < features_; ++r)
        for (std::int64_t c = 0; c < features_; ++c)
            h(r, c) = static_cast<float>(k * (r >= c ? sum_(r, c) : sum_(c, r)));
    return h;
}

VectorF HessianAccumulator::meanAbs() const {
    if (samples_ == 0) throw Error("HessianAccumulator: no samples were added");
    return (absSum_ / static_cast<double>(samples_)).cast<float>();
}

}  // namespace qs::quant
