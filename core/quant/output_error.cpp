#include "qs/quant/output_error.h"

#include <cmath>
#include <string>

#include "qs/error.h"

namespace qs::quant {

namespace {

void checkShapes(const MatrixF& w, const MatrixF& q, std::int64_t inFeatures, const char* what) {
    if (w.rows() != q.rows() || w.cols() != q.cols() || w.cols() != inFeatures)
        throw Error(std::string("output error: shapes of W, Q and ") + what + " do not match");
}

}  // namespace

Eigen::VectorXd hessianQuadraticRows(const Eigen::Ref<const MatrixF>& d, const Eigen::Ref<const MatrixF>& h) {
    const MatrixF dh = d * h;  // threaded GEMM; products summed per row in f64 below
    Eigen::VectorXd out(d.rows());
#pragma omp parallel for schedule(static)
    for (Eigen::Index r = 0; r < d.rows(); ++r)
        out[r] = 0.5 * (dh.row(r).cast<double>().array() * d.row(r).cast<double>().array()).sum();
    return out;
}

double hessianQuadratic(const Eigen::Ref<const MatrixF>& d, const Eigen::Ref<const MatrixF>& h) {
    return hessianQuadraticRows(d, h).sum();
}

OutputError outputErrorFromHessian(const MatrixF& w, const MatrixF& q, const MatrixF& h) {
    checkShapes(w, q, h.rows(), "H");
    const MatrixF d = w - q;
    const double err = hessianQuadratic(d, h);
    const double ref = hessianQuadratic(w, h);
    return {ref > 0 ? std::sqrt(err / ref) : std::numeric_limits<double>::quiet_NaN(),
            err / static_cast<double>(w.rows())};
}

OutputError outputErrorFromInputs(const MatrixF& w, const MatrixF& q, const Eigen::Ref<const MatrixF>& x) {
    checkShapes(w, q, x.cols(), "X");
    const MatrixF d = w - q;
    const MatrixF e = x * d.transpose();  // [n, rows]
    const MatrixF y = x * w.transpose();
    const double err = e.cast<double>().squaredNorm();
    const double ref = y.cast<double>().squaredNorm();
    return {ref > 0 ? std::sqrt(err / ref) : std::numeric_limits<double>::quiet_NaN(),
            err / static_cast<double>(e.size())};
}

}  // namespace qs::quant
