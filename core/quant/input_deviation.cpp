#include "qs/quant/input_deviation.h"

#include <algorithm>
#include <string>

#include "qs/error.h"

namespace qs::quant {

namespace {

constexpr std::int64_t kTile = 256;  // as HessianAccumulator's
constexpr std::int64_t kChunkRows = 2048;

}  // namespace

InputDeviationAccumulator::InputDeviationAccumulator(std::int64_t features)
    : features_(features), sum_(MatrixD::Zero(features, features)) {
    if (features <= 0) throw Error("InputDeviationAccumulator: features must be positive");
}

void InputDeviationAccumulator::add(const Eigen::Ref<const MatrixF>& x, const Eigen::Ref<const MatrixF>& xq) {
    if (x.cols() != features_ || xq.cols() != features_ || x.rows() != xq.rows())
        throw Error("InputDeviationAccumulator: inputs [" + std::to_string(x.rows()) + ", " + std::to_string(x.cols()) +
                    "] and [" + std::to_string(xq.rows()) + ", " + std::to_string(xq.cols()) + "] for " +
                    std::to_string(features_) + " features");
    const std::int64_t f = features_, tiles = (f + kTile - 1) / kTile;
    for (std::int64_t t0 = 0; t0 < x.rows(); t0 += kChunkRows) {
        const std::int64_t rows = std::min(kChunkRows, x.rows() - t0);
        const MatrixF dx = x.middleRows(t0, rows) - xq.middleRows(t0, rows);
        const auto xqChunk = xq.middleRows(t0, rows);
#pragma omp parallel for schedule(dynamic, 1)
        for (std::int64_t p = 0; p < tiles * tiles; ++p) {
            const std::int64_t r0 = p / tiles * kTile, c0 = p % tiles * kTile;
            const std::int64_t nr = std::min(kTile, f - r0), nc = std::min(kTile, f - c0);
            Eigen::MatrixXf g(nr, nc);
            g.noalias() = dx.middleCols(r0, nr).transpose() * xqChunk.middleCols(c0, nc);
            sum_.block(r0, c0, nr, nc) += g.cast<double>();
        }
    }
    samples_ += x.rows();
}

MatrixF InputDeviationAccumulator::finalize() const {
    if (samples_ == 0) throw Error("InputDeviationAccumulator: no samples were added");
    return (2.0 / static_cast<double>(samples_) * sum_).cast<float>();
}

}  // namespace qs::quant
