#pragma once
// The x86 intrinsics headers, included through this header only (qs/eigen.h includes it first).
// GCC 12 reports -Wmaybe-uninitialized inside them (the `__m512 __Y = __Y;` idiom of
// _mm512_undefined_ps, once inlined into Eigen's AVX-512 GEBP kernel or our own loops) when a file is
// built for a CPU with AVX-512 (-march=native there, or -march=x86-64-v4): a known false positive in
// the compiler's header, not in our code. The warning is silenced for the span of these headers only,
// where their locations fall, so it stays an error everywhere in our own code on every x86-64 CPU.
#include "qs/cpu_features.h"  // QS_X86

#if QS_X86
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif
