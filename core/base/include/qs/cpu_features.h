#pragma once
// Which hand-vectorised kernels this CPU runs. The kernels are compiled for their instruction set with
// a target attribute and chosen here at run time, so one build (the Debian package's plain x86-64, the
// test suite's) runs them where the CPU has them and their portable loops elsewhere.
// QS_DISABLE_AVX2=1 in the environment forces the portable loops: ctest runs the kernels' tests both
// ways, and a user who suspects a kernel can compare the two.
#include <cstdlib>
#include <string_view>

// 1 where the x86 kernels (and qs/x86_intrinsics.h's headers) exist, else 0.
#if defined(__x86_64__) || defined(__i386__)
#define QS_X86 1
#else
#define QS_X86 0
#endif

namespace qs {

inline bool cpuRunsAvx2() {
#if QS_X86
    static const bool runs = [] {
        const char* disabled = std::getenv("QS_DISABLE_AVX2");
        if (disabled != nullptr && !std::string_view(disabled).empty() && std::string_view(disabled) != "0")
            return false;
        return __builtin_cpu_supports("avx2") != 0;  // libgcc also checks that the OS saves the YMM state
    }();
    return runs;
#else
    return false;
#endif
}

}  // namespace qs
