#pragma once
// Eigen, included through this header only, after the x86 intrinsics (qs/x86_intrinsics.h says why):
// GCC 12's false -Wmaybe-uninitialized in its AVX-512 header also fires inside Eigen's own packet
// code, so the same span covers Eigen's headers.
#include "qs/x86_intrinsics.h"

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
