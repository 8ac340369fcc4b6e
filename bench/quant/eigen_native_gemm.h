#pragma once
// C = A B with Eigen's built-in kernel (column-major, A m x k, B k x n), from the shared library
// qs_bench_eigen_native: the baseline bench_blas compares the BLAS under Eigen with.
extern "C" void qsEigenNativeGemm(int m, int n, int k, const float* a, const float* b, float* c);
