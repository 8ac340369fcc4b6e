// The run-time choice of the hand-vectorised kernels: the CPU's AVX2, unless QS_DISABLE_AVX2 is set
// (ctest runs the kernels' tests both ways, tests/quant/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "qs/cpu_features.h"

namespace qs {
namespace {

TEST(CpuFeatures, Avx2KernelsRunWhereTheCpuHasAvx2UnlessDisabled) {
    const char* disabled = std::getenv("QS_DISABLE_AVX2");
    const bool allowed = disabled == nullptr || std::string_view(disabled).empty() || std::string_view(disabled) == "0";
#if QS_X86
    const bool cpuHasAvx2 = __builtin_cpu_supports("avx2") != 0;
#else
    const bool cpuHasAvx2 = false;
#endif
    EXPECT_EQ(cpuRunsAvx2(), allowed && cpuHasAvx2);
}

}  // namespace
}  // namespace qs
