#include "qs/quant/hessian.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "qs/error.h"
#include "qs/quant/bf16_gram.h"

namespace qs::quant {

namespace {

// 256-wide tiles keep each tile's packed panels in L2 and give enough tiles to spread over cores.
constexpr std::int64_t kTile = 256;

// A tile's product of a chunk, g (either storage order), into its f64 sum at `sum`: a diagonal tile's
// lower triangle only.
template <class Tile>
void addToSum(double* sum, bool diagonal, const Tile& g) {
    Eigen::Map<Eigen::MatrixXd> s(sum, g.rows(), g.cols());
    if (diagonal) {
        for (std::int64_t c = 0; c < g.cols(); ++c)
            s.col(c).tail(g.rows() - c) += g.col(c).tail(g.rows() - c).template cast<double>();
    } else {
        s += g.template cast<double>();
    }
}

}  // namespace

Eigen::MatrixXf gramLower(const Eigen::Ref<const MatrixF>& x) {
    const std::int64_t f = x.cols();
    Eigen::MatrixXf g(f, f);
    const std::int64_t tiles = (f + kTile - 1) / kTile;
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;  // (row tile, col tile), row >= col
    for (std::int64_t i = 0; i < tiles; ++i)
        for (std::int64_t j = 0; j <= i; ++j) pairs.emplace_back(i, j);
            // Each tile is one single-threaded GEMM (Eigen's product, which calls OpenBLAS; its OpenMP build
            // runs on the calling thread inside a parallel region), so the result does not depend on which
            // thread computed it: deterministic for any thread count.
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

HessianAccumulator::HessianAccumulator(std::int64_t features, GramInputs inputs)
    : features_(features), inputs_(inputs) {
    if (features <= 0) throw Error("HessianAccumulator: features must be positive");
    const std::int64_t tiles = (features + kTile - 1) / kTile;
    std::size_t size = 0;
    for (std::int64_t i = 0; i < tiles; ++i)
        for (std::int64_t j = 0; j <= i; ++j) {
            tiles_.emplace_back(i, j);
            offsets_.push_back(size);
            size +=
                static_cast<std::size_t>(std::min(kTile, features - i * kTile) * std::min(kTile, features - j * kTile));
        }
    sum_.assign(size, 0.0);
    absSum_ = VectorD::Zero(features);
}

void HessianAccumulator::checkNotReleased(const char* what) const {
    if (released_) throw Error(std::string("HessianAccumulator: ") + what + " after release()");
}

void HessianAccumulator::add(const Eigen::Ref<const MatrixF>& x, std::int64_t chunkRows) {
    checkNotReleased("add");
    if (x.cols() != features_)
        throw Error("HessianAccumulator: input has " + std::to_string(x.cols()) + " features, expected " +
                    std::to_string(features_));
    chunkRows = std::max<std::int64_t>(chunkRows, 1);
    for (std::int64_t r = 0; r < x.rows(); r += chunkRows) {
        const auto chunk = x.middleRows(r, std::min(chunkRows, x.rows() - r));
        if (inputs_ == GramInputs::Bf16)
            addBf16Chunk(chunk);
        else
            addChunk(chunk);
        for (std::int64_t t = 0; t < chunk.rows(); ++t) absSum_ += chunk.row(t).transpose().cwiseAbs().cast<double>();
        samples_ += chunk.rows();
    }
}

void HessianAccumulator::addChunk(const Eigen::Ref<const MatrixF>& x) {
    const std::int64_t f = features_;
    // Each tile: the same single-threaded f32 GEMM as gramLower's, added into its f64 sum right away
    // (the f32 chunk sums are exact enough for a few thousand rows; across chunks f64 keeps them).
    // A tile is computed by one thread, so the result does not depend on the thread count.
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t p = 0; p < tiles_.size(); ++p) {
        const auto [ti, tj] = tiles_[p];
        const std::int64_t r0 = ti * kTile, c0 = tj * kTile;
        const std::int64_t nr = std::min(kTile, f - r0), nc = std::min(kTile, f - c0);
        Eigen::MatrixXf g(nr, nc);
        g.noalias() = x.middleCols(r0, nr).transpose() * x.middleCols(c0, nc);
        addToSum(sum_.data() + offsets_[p], ti == tj, g);
    }
}

void HessianAccumulator::addBf16Chunk(const Eigen::Ref<const MatrixF>& x) {
    const Bf16Gram gram(x, kTile);
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t p = 0; p < tiles_.size(); ++p) {
        const auto [ti, tj] = tiles_[p];
        MatrixF g;
        gram.product(ti, tj, g);
        addToSum(sum_.data() + offsets_[p], ti == tj, g);
    }
}

MatrixF HessianAccumulator::finalize() const {
    checkNotReleased("finalize");
    if (samples_ == 0) throw Error("HessianAccumulator: no samples were added");
    const double k = 2.0 / static_cast<double>(samples_);
    const std::int64_t f = features_;
    MatrixF h(f, f);
    // Each tile is scaled into f32 once, contiguously, then stored twice: as it is (lower triangle) and
    // transposed (upper), both as whole blocks. Element by element, one of the two writes walks h
    // with a stride of f floats: 8 CPU s for a Llama-3-8B layer's four Hessians (bench_model's
    // calibrateLayer8B), most of the layer's one-off cost.
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t p = 0; p < tiles_.size(); ++p) {
        const auto [ti, tj] = tiles_[p];
        const std::int64_t r0 = ti * kTile, c0 = tj * kTile;
        const std::int64_t nr = std::min(kTile, f - r0), nc = std::min(kTile, f - c0);
        const Eigen::Map<const Eigen::MatrixXd> s(sum_.data() + offsets_[p], nr, nc);
        Eigen::MatrixXf tile = (k * s).cast<float>();
        if (ti == tj) tile = Eigen::MatrixXf(tile.selfadjointView<Eigen::Lower>());  // its upper part was never summed
        h.block(r0, c0, nr, nc) = tile;
        if (ti != tj) h.block(c0, r0, nc, nr) = tile.transpose();
    }
    return h;
}

MatrixF HessianAccumulator::release() {
    MatrixF h = finalize();
    discard();
    return h;
}

void HessianAccumulator::discard() {
    std::vector<double>().swap(sum_);
    released_ = true;
}

std::uint64_t HessianAccumulator::bytes() const {
    return static_cast<std::uint64_t>(sum_.capacity() * sizeof(double) + absSum_.size() * sizeof(double));
}

VectorF HessianAccumulator::meanAbs() const {
    if (samples_ == 0) throw Error("HessianAccumulator: no samples were added");
    return (absSum_ / static_cast<double>(samples_)).cast<float>();
}

}  // namespace qs::quant
