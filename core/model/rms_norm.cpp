#include "qs/model/rms_norm.h"

#include <cmath>
#include <string>

#include "qs/error.h"

namespace qs::model {
namespace {

// The sum of squares is taken in double: hidden states of large models reach 1e3-1e4 and an f32 sum
// over thousands of columns would carry the rounding into every normalized value.
void normalizeSpan(float* v, const float* w, Eigen::Index n, double eps, float offset) {
    double sumSq = 0.0;
    for (Eigen::Index i = 0; i < n; ++i) sumSq += static_cast<double>(v[i]) * v[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sumSq / static_cast<double>(n) + eps));
    for (Eigen::Index i = 0; i < n; ++i) v[i] = (offset + w[i]) * (v[i] * inv);
}

}  // namespace

void rmsNormInPlace(MatrixF& x, const VectorF& weight, double eps, float offset) {
    rmsNormHeadsInPlace(x, weight, eps, offset);  // one "head" spanning the row
}

MatrixF rmsNorm(const MatrixF& x, const VectorF& weight, double eps, float offset) {
    MatrixF y = x;
    rmsNormInPlace(y, weight, eps, offset);
    return y;
}

void rmsNormHeadsInPlace(MatrixF& x, const VectorF& weight, double eps, float offset) {
    const Eigen::Index n = weight.size();
    if (n == 0 || x.cols() % n != 0)
        throw Error("rms norm: " + std::to_string(x.cols()) + " columns do not split into blocks of " +
                    std::to_string(n));
    const Eigen::Index blocks = x.cols() / n;
    const Eigen::Index rows = x.rows();
#pragma omp parallel for schedule(static) if (rows * x.cols() > 65536)
    for (Eigen::Index t = 0; t < rows; ++t)
        for (Eigen::Index b = 0; b < blocks; ++b) normalizeSpan(x.row(t).data() + b * n, weight.data(), n, eps, offset);
}

}  // namespace qs::model
