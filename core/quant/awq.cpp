#include "qs/quant/awq.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "qs/error.h"
#include "qs/quant/hessian.h"
#include "qs/quant/output_error.h"

namespace qs::quant {

namespace {

// Where the output error is measured: directly on X when there are fewer tokens than channels
// (n * rows * cols flops per candidate), else through H (rows * cols² flops).
struct Calibration {
    const Eigen::Ref<const MatrixF>* x = nullptr;
    const MatrixF* h = nullptr;
    const QuadraticForm* quadratic = nullptr;  // hessianQuadratic with this H, elsewhere

    double mse(const MatrixF& d) const {  // mean over tokens and outputs of (d x)²
        if (x) {
            const MatrixF e = (*x) * d.transpose();
            return e.cast<double>().squaredNorm() / static_cast<double>(e.size());
        }
        if (quadratic && *quadratic) return (*quadratic)(d) / static_cast<double>(d.rows());
        return hessianQuadratic(d, *h) / static_cast<double>(d.rows());
    }
};

MatrixF scaleColumns(const MatrixF& w, const std::vector<float>& s) {
    // row by row: contiguous and vectorised (a column loop on a row-major matrix is strided)
    const Eigen::Map<const Eigen::RowVectorXf> sv(s.data(), static_cast<Eigen::Index>(s.size()));
    MatrixF ws(w.rows(), w.cols());
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < w.rows(); ++r) ws.row(r).array() = w.row(r).array() * sv.array();
    return ws;
}

RtnOptions rtnOptions(const AwqOptions& o) {
    return {.bits = o.bits, .groupSize = o.groupSize, .sym = o.sym, .rule = o.rule};
}

// Q(W·s)/s - W for one linear at one set of scales.
MatrixF scaledError(const MatrixF& w, const std::vector<float>& s, const AwqOptions& o, QuantizedLinear* keep,
                    const MatrixF* hScaled) {
    RtnOptions ro = rtnOptions(o);
    ro.clipSearch = hScaled != nullptr;
    QuantizedLinear q = quantizeRtn(scaleColumns(w, s), ro, hScaled);
    q.method = Method::Awq;
    q.inputScales = s;
    q.outputError = q.outputMse = std::numeric_limits<double>::quiet_NaN();  // those were of W·s; set below
    MatrixF d = q.effectiveWeight() - w;
    if (keep) *keep = std::move(q);
    return d;
}

void checkWeights(const std::vector<const MatrixF*>& weights, std::int64_t features) {
    if (weights.empty()) throw Error("AWQ: no weights to scale");
    for (const MatrixF* w : weights)
        if (!w || w->cols() != features)
            throw Error("AWQ: every weight must have " + std::to_string(features) + " input columns");
}

// Strictly smaller wins: ties keep the smaller α, as the reference search_scale does.
double bestAlpha(const std::vector<double>& gridError) {
    double alpha = 0.0, bestError = std::numeric_limits<double>::infinity();
    for (std::size_t step = 0; step < gridError.size(); ++step)
        if (gridError[step] < bestError) {
            bestError = gridError[step];
            alpha = static_cast<double>(step) / static_cast<double>(gridError.size());
        }
    return alpha;
}

// H of X / s, for the clip search on the scaled weights.
MatrixF scaledHessian(const MatrixF& h, const std::vector<float>& s) {
    MatrixF hScaled = h;
    for (std::int64_t r = 0; r < hScaled.rows(); ++r)
        for (std::int64_t c = 0; c < hScaled.cols(); ++c)
            hScaled(r, c) /= s[static_cast<std::size_t>(r)] * s[static_cast<std::size_t>(c)];
    return hScaled;
}

// Picks α from the grid's errors, then quantizes and measures every weight at that α. `start` times
// the whole search.
AwqResult finish(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const Calibration& calib,
                 const MatrixF* h, std::vector<double> gridError, const AwqOptions& o,
                 std::chrono::steady_clock::time_point start) {
    if (gridError.size() != static_cast<std::size_t>(o.grid))
        throw Error("AWQ: " + std::to_string(gridError.size()) + " grid errors for a grid of " +
                    std::to_string(o.grid));
    AwqResult best;
    best.alpha = bestAlpha(gridError);
    best.gridError = std::move(gridError);
    best.scales = awqScales(meanAbs, best.alpha);
    if (o.clipSearch && !h) throw Error("AWQ: the clip search needs H");
    const MatrixF hScaled = o.clipSearch ? scaledHessian(*h, best.scales) : MatrixF();
    for (const MatrixF* w : weights) {
        QuantizedLinear q;
        const MatrixF d = scaledError(*w, best.scales, o, &q, o.clipSearch ? &hScaled : nullptr);
        q.outputMse = calib.mse(d);
        const double ref = calib.mse(*w);
        q.outputError = ref > 0 ? std::sqrt(q.outputMse / ref) : std::numeric_limits<double>::quiet_NaN();
        best.linears.push_back(std::move(q));
    }
    best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (QuantizedLinear& q : best.linears) q.seconds = best.seconds / static_cast<double>(best.linears.size());
    return best;
}

void checkSearch(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const AwqOptions& o) {
    checkWeights(weights, meanAbs.size());
    if (o.grid <= 0) throw Error("AWQ: the grid needs at least one point");
}

AwqResult search(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const Calibration& calib,
                 const MatrixF* h, const AwqOptions& o) {
    const auto start = std::chrono::steady_clock::now();
    checkSearch(weights, meanAbs, o);
    std::vector<double> gridError;
    for (int step = 0; step < o.grid; ++step) {
        const std::vector<float> s = awqScales(meanAbs, static_cast<double>(step) / o.grid);
        double error = 0.0;
        for (const MatrixF* w : weights) error += calib.mse(scaledError(*w, s, o, nullptr, nullptr));
        gridError.push_back(error);
    }
    return finish(weights, meanAbs, calib, h, std::move(gridError), o, start);
}

// Calibration through H alone, after checking that H matches mean|x|.
Calibration statsCalibration(const VectorF& meanAbs, const MatrixF& h) {
    if (h.rows() != meanAbs.size() || h.cols() != meanAbs.size()) throw Error("AWQ: H and mean|x| differ in size");
    Calibration calib;
    calib.h = &h;
    return calib;
}

}  // namespace

std::vector<float> awqScales(const VectorF& meanAbs, double alpha) {
    std::vector<float> s(static_cast<std::size_t>(meanAbs.size()));
    const float a = static_cast<float>(alpha);
    for (std::size_t c = 0; c < s.size(); ++c)
        s[c] = std::pow(std::max(meanAbs[static_cast<Eigen::Index>(c)], 1e-4f), a);
    const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
    const float norm = std::sqrt(*hi * *lo);
    for (float& v : s) v /= norm;
    return s;
}

AwqResult quantizeAwq(const std::vector<const MatrixF*>& weights, const Eigen::Ref<const MatrixF>& x,
                      const AwqOptions& o) {
    VectorD sum = VectorD::Zero(x.cols());
    for (std::int64_t t = 0; t < x.rows(); ++t) sum += x.row(t).transpose().cwiseAbs().cast<double>();
    const VectorF meanAbs = (sum / static_cast<double>(std::max<std::int64_t>(x.rows(), 1))).cast<float>();
    const bool needH = o.clipSearch || x.rows() > x.cols();
    const MatrixF h = needH ? hessian(x) : MatrixF();
    Calibration calib;
    if (x.rows() > x.cols())
        calib.h = &h;
    else
        calib.x = &x;
    return search(weights, meanAbs, calib, needH ? &h : nullptr, o);
}

AwqResult quantizeAwqFromStats(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                               const AwqOptions& o) {
    return search(weights, meanAbs, statsCalibration(meanAbs, h), &h, o);
}

AwqResult awqFromGridErrors(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                            std::vector<double> gridError, const AwqOptions& o, const QuadraticForm& quadratic) {
    const auto start = std::chrono::steady_clock::now();
    Calibration calib = statsCalibration(meanAbs, h);
    calib.quadratic = &quadratic;
    checkSearch(weights, meanAbs, o);
    return finish(weights, meanAbs, calib, &h, std::move(gridError), o, start);
}

void foldIntoNorm(std::span<float> normWeight, std::span<const float> s) {
    if (normWeight.size() != s.size()) throw Error("AWQ: the norm weight and the scales differ in size");
    for (std::size_t c = 0; c < s.size(); ++c) normWeight[c] /= s[c];
}

void foldIntoPreviousLinear(MatrixF& previous, std::span<const float> s) {
    if (previous.rows() != static_cast<std::int64_t>(s.size()))
        throw Error("AWQ: the previous linear has " + std::to_string(previous.rows()) + " outputs for " +
                    std::to_string(s.size()) + " scales");
    for (std::int64_t r = 0; r < previous.rows(); ++r) previous.row(r) /= s[static_cast<std::size_t>(r)];
}

}  // namespace qs::quant
