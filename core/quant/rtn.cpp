#include "qs/quant/rtn.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "qs/error.h"
#include "qs/quant/output_error.h"

namespace qs::quant {

namespace {

using ColMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
constexpr std::int64_t kClipRowTile = 256;

// AutoAWQ's auto_clip for one tile of rows and one group: returns the best |w| bound per row.
void searchClipTile(const Eigen::Ref<const MatrixF>& w, std::int64_t r0, std::int64_t rows, std::int64_t c0,
                    std::int64_t count, const RtnOptions& o, const MatrixF& h, float* bestClip) {
    const MatrixF orig = w.block(r0, c0, rows, count);
    const MatrixF hg = h.block(c0, c0, count, count);
    Eigen::VectorXf orgMax = orig.cwiseAbs().rowwise().maxCoeff();
    Eigen::VectorXd bestErr = Eigen::VectorXd::Constant(rows, 1e300);
    for (std::int64_t r = 0; r < rows; ++r) bestClip[r] = orgMax[r];
    std::vector<std::uint8_t> codes(static_cast<std::size_t>(rows * count));
    MatrixF sc(rows, 1), ze(rows, 1), q(rows, count);
    Eigen::VectorXf clip(rows);
    const int steps = static_cast<int>(o.clipMaxShrink * o.clipGrid);
    for (int s = 0; s < steps; ++s) {
        clip = orgMax * static_cast<float>(1.0 - static_cast<double>(s) / o.clipGrid);
        quantizeGroupRtn(orig, 0, count, o.bits, o.sym, o.rule, clip.data(), codes.data(), sc, ze, 0);
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < count; ++c)
                q(r, c) = dequantizeCode(codes[static_cast<std::size_t>(r * count + c)], {sc(r, 0), ze(r, 0)});
        const MatrixF d = q - orig;
        const MatrixF dh = d * hg;
        for (std::int64_t r = 0; r < rows; ++r) {
            const double err = (dh.row(r).cast<double>().array() * d.row(r).cast<double>().array()).sum();
            if (err < bestErr[r]) {
                bestErr[r] = err;
                bestClip[r] = clip[r];
            }
        }
    }
}

}  // namespace

GridParams gridParams(float minValue, float maxValue, int bits, bool sym, GridRule rule) {
    const float maxq = static_cast<float>((1 << bits) - 1);
    GridParams p;
    if (rule == GridRule::AutoAwq) {
        if (sym) {
            const float absMax = std::max(std::max(std::fabs(minValue), std::fabs(maxValue)), 1e-5f);
            p.scale = absMax / static_cast<float>((1 << (bits - 1)) - 1);
            p.zero = static_cast<float>(1 << (bits - 1));
        } else {
            p.scale = std::max(maxValue - minValue, 1e-5f) / maxq;
            p.zero = std::clamp(-std::nearbyint(minValue / p.scale), 0.0f, maxq);
        }
        return p;
    }
    float xmin = std::min(minValue, 0.0f), xmax = std::max(maxValue, 0.0f);
    if (sym) {
        xmax = std::max(std::fabs(xmin), xmax);
        if (xmin < 0) xmin = -xmax;
    }
    if (xmin == 0.0f && xmax == 0.0f) {
        xmin = -1.0f;
        xmax = 1.0f;
    }
    p.scale = (xmax - xmin) / maxq;
    p.zero = sym ? (maxq + 1.0f) / 2.0f : std::nearbyint(-xmin / p.scale);
    return p;
}

void quantizeGroupRtn(const Eigen::Ref<const MatrixF>& w, std::int64_t c0, std::int64_t count, int bits, bool sym,
                      GridRule rule, const float* clip, std::uint8_t* codes, MatrixF& scales, MatrixF& zeros,
                      std::int64_t group) {
    const float maxq = static_cast<float>((1 << bits) - 1);
    const std::int64_t cols = w.cols();
    std::vector<float> v(static_cast<std::size_t>(count));
    for (std::int64_t r = 0; r < w.rows(); ++r) {
        const float* src = w.row(r).data() + c0;
        for (std::int64_t c = 0; c < count; ++c)
            v[static_cast<std::size_t>(c)] = clip ? std::clamp(src[c], -clip[r], clip[r]) : src[c];
        const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
        const GridParams p = gridParams(*lo, *hi, bits, sym, rule);
        scales(r, group) = p.scale;
        zeros(r, group) = p.zero;
        std::uint8_t* out = codes + r * cols + c0;
        for (std::int64_t c = 0; c < count; ++c)
            out[c] = static_cast<std::uint8_t>(quantizeCode(v[static_cast<std::size_t>(c)], p, maxq));
    }
}

void checkIntOptions(int bits, int groupSize, std::int64_t cols) {
    if (bits < 2 || bits > 8) throw Error("quantize: bits must be 2..8, got " + std::to_string(bits));
    if (groupSize == 0 || groupSize < -1) throw Error("quantize: group size must be positive or -1");
    if (cols <= 0) throw Error("quantize: the weight has no columns");
}

int groupCount(int groupSize, std::int64_t cols) {
    return groupSize < 0 ? 1 : static_cast<int>((cols + groupSize - 1) / groupSize);
}

QuantizedLinear quantizeRtn(const MatrixF& w, const RtnOptions& o, const MatrixF* h) {
    const auto start = std::chrono::steady_clock::now();
    checkIntOptions(o.bits, o.groupSize, w.cols());
    if (h && (h->rows() != w.cols() || h->cols() != w.cols())) throw Error("quantizeRtn: H does not match W's columns");
    if (o.clipSearch && !h) throw Error("quantizeRtn: the clip search needs calibration inputs (H)");
    QuantizedLinear q = QuantizedLinear::intGrid(Method::Rtn, w.rows(), w.cols(), o.bits, o.groupSize, o.sym);
    q.allocateParts();
    const int groups = groupCount(o.groupSize, w.cols());

    ColMatrixF clip;  // best |w| bound per [row, group], column-major so a group's rows are contiguous
    if (o.clipSearch) {
        clip.resize(w.rows(), groups);
        const std::int64_t tiles = (w.rows() + kClipRowTile - 1) / kClipRowTile;
#pragma omp parallel for schedule(dynamic, 1)
        for (std::int64_t t = 0; t < tiles * groups; ++t) {
            const std::int64_t g = t / tiles, r0 = (t % tiles) * kClipRowTile;
            const std::int64_t c0 = g * q.blockCols, count = std::min<std::int64_t>(q.blockCols, w.cols() - c0);
            searchClipTile(w, r0, std::min(kClipRowTile, w.rows() - r0), c0, count, o, *h, &clip(r0, g));
        }
    }
#pragma omp parallel for schedule(static)
    for (int g = 0; g < groups; ++g) {
        const std::int64_t c0 = static_cast<std::int64_t>(g) * q.blockCols;
        const std::int64_t count = std::min<std::int64_t>(q.blockCols, w.cols() - c0);
        quantizeGroupRtn(w, c0, count, o.bits, o.sym, o.rule, o.clipSearch ? &clip(0, g) : nullptr, q.codes.data(),
                         q.scales, q.zeros, g);
    }
    if (h) {
        const OutputError e = outputErrorFromHessian(w, q.dequantize(), *h);
        q.outputError = e.relative;
        q.outputMse = e.mse;
    }
    q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return q;
}

}  // namespace qs::quant
