#pragma once
// Eigen, included through this header only, after the x86 intrinsics (qs/x86_intrinsics.h says why):
// GCC 12's false -Wmaybe-uninitialized in its AVX-512 header also fires inside Eigen's own packet
// code, so the same span covers Eigen's headers.
#include "qs/x86_intrinsics.h"

// Eigen hands its large products, triangular solves and rank updates to OpenBLAS (EIGEN_USE_BLAS,
// cmake/QsBlas.cmake). Every translation unit must agree, or one instantiates Eigen's built-in GEMM
// where another calls BLAS for the same template (an ODR mix): qs_base defines both macros together.
#if !defined(QS_EIGEN_BLAS)
#error "qs/eigen.h: link the target to qs_base, which says whether Eigen calls BLAS (cmake/QsBlas.cmake)"
#elif (QS_EIGEN_BLAS && !defined(EIGEN_USE_BLAS)) || (!QS_EIGEN_BLAS && defined(EIGEN_USE_BLAS))
#error "qs/eigen.h: EIGEN_USE_BLAS must be set exactly when QS_EIGEN_BLAS is (cmake/QsBlas.cmake)"
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/LU>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
