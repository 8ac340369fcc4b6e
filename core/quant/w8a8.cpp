#include "qs/quant/w8a8.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qs/error.h"

#include "fp_codes.h"

namespace qs::quant {
namespace {

struct Errors {
    double relative;
    double mse;
};

// Accumulated in double: the sums run over millions of outputs and the errors are small.
Errors compare(const MatrixF& reference, const MatrixF& approx) {
    double num = 0.0, den = 0.0;
#pragma omp parallel for reduction(+ : num, den) schedule(static)
    for (std::int64_t i = 0; i < reference.size(); ++i) {
        const double y = reference.data()[i], d = y - approx.data()[i];
        num += d * d;
        den += y * y;
    }
    const double count = static_cast<double>(std::max<std::int64_t>(reference.size(), 1));
    return {den > 0.0 ? std::sqrt(num / den) : std::sqrt(num), num / count};
}

}  // namespace

Fp8Activations quantizeActivationsFp8(const MatrixF& x, int group) {
    if (group <= 0) throw Error("quantizeActivationsFp8: group must be positive, got " + std::to_string(group));
    Fp8Activations a;
    a.tokens = x.rows();
    a.channels = x.cols();
    a.group = group;
    const std::int64_t groups = (a.channels + group - 1) / group;
    a.codes.resize(static_cast<std::size_t>(a.tokens * a.channels));
    a.scales.resize(a.tokens, groups);
#pragma omp parallel for schedule(static)
    for (std::int64_t t = 0; t < a.tokens; ++t) {
        const float* row = x.data() + t * a.channels;
        for (std::int64_t g = 0; g < groups; ++g) {
            const std::int64_t c0 = g * group, c1 = std::min(a.channels, c0 + group);
            const float scale = fp8ScaleFor(detail::absMax(row + c0, c1 - c0));
            a.scales(t, g) = scale;
            encodeE4m3Scaled(row + c0, c1 - c0, scale, a.codes.data() + t * a.channels + c0);
        }
    }
    return a;
}

MatrixF Fp8Activations::dequantize() const {
    const auto& table = detail::e4m3Table();
    MatrixF x(tokens, channels);
#pragma omp parallel for schedule(static)
    for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t c = 0; c < channels; ++c)
            x(t, c) = table[codes[static_cast<std::size_t>(t * channels + c)]] * scales(t, c / group);
    return x;
}

MatrixF w8a8Reference(const MatrixF& x, const QuantizedLinear& fp8Weight, int group) {
    if (x.cols() != fp8Weight.cols)
        throw Error("w8a8Reference: activations have " + std::to_string(x.cols()) + " channels, the weight " +
                    std::to_string(fp8Weight.cols) + " inputs");
    // Dequantizing both operands and multiplying in f32 computes the same sum as rescaling each
    // 128-wide slice of K: every product of two E4M3 values and two scales is the same real number,
    // and only the f32 summation order differs from a tensor-core kernel.
    const MatrixF xq = quantizeActivationsFp8(x, group).dequantize();
    const MatrixF wq = dequantizeFp8(fp8Weight);
    return xq * wq.transpose();
}

W8A8Error measureW8A8(const MatrixF& x, const MatrixF& w, Fp8Scaling scaling, int group) {
    if (x.cols() != w.cols())
        throw Error("measureW8A8: activations have " + std::to_string(x.cols()) + " channels, the weight " +
                    std::to_string(w.cols()) + " inputs");
    const MatrixF reference = x * w.transpose();
    const MatrixF xq = quantizeActivationsFp8(x, group).dequantize();
    const MatrixF wq = dequantizeFp8(quantizeFp8(w, scaling));
    const Errors weightOnly = compare(reference, MatrixF(x * wq.transpose()));
    const Errors activationOnly = compare(reference, MatrixF(xq * w.transpose()));
    const Errors both = compare(reference, MatrixF(xq * wq.transpose()));
    return {weightOnly.relative, activationOnly.relative, both.relative, weightOnly.mse, activationOnly.mse, both.mse};
}

}  // namespace qs::quant
