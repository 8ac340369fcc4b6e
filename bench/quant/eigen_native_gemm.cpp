// Eigen's own GEMM kernel, for bench_blas to measure beside the BLAS that the rest of the build
// hands Eigen's products to. Built as a shared library without EIGEN_USE_BLAS and with hidden
// visibility (bench/quant/CMakeLists.txt), so its Eigen instantiations stay inside it and cannot
// be mixed with the BLAS-backed ones of the benchmark (one definition per library).
#include "eigen_native_gemm.h"

#include "qs/eigen.h"

extern "C" __attribute__((visibility("default"))) void qsEigenNativeGemm(int m, int n, int k, const float* a,
                                                                         const float* b, float* c) {
    const Eigen::Map<const Eigen::MatrixXf> ma(a, m, k), mb(b, k, n);
    Eigen::Map<Eigen::MatrixXf> mc(c, m, n);
    mc.noalias() = ma * mb;
}
