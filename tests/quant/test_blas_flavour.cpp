// The programs run OpenBLAS's OpenMP build, which shares our thread team, whichever flavour Debian's
// alternatives select for libopenblas.so.0 (cmake/QsBlas.cmake): scripts/setup-deps.sh installs the
// pthread flavour as well, which then takes the alternative (priority 100 against 95), as on any
// machine where numpy pulled it in. Loading it would leave GPTQ one BLAS thread (qs/thread_team.h).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "qs/thread_team.h"

namespace {

// The file the process mapped libopenblas from, "" when none.
std::string mappedOpenBlas() {
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);)
        if (const auto at = line.find('/');
            at != std::string::npos && line.find("libopenblas", at) != std::string::npos)
            return line.substr(at);
    return "";
}

}  // namespace

TEST(BlasFlavour, TheOpenMpBuildIsLoadedWhicheverFlavourTheAlternativeSelects) {
#if !defined(QS_BLAS_OPENBLAS)
    GTEST_SKIP() << "built with Eigen's own kernels (QS_BLAS=OFF)";
#else
    EXPECT_EQ(openblas_get_parallel(), 2) << "0 sequential, 1 pthreads, 2 OpenMP; loaded " << mappedOpenBlas();
#if defined(QS_OPENBLAS_FLAVOUR_DIR)
    EXPECT_TRUE(mappedOpenBlas().starts_with(QS_OPENBLAS_FLAVOUR_DIR "/")) << "loaded " << mappedOpenBlas();
#endif
#endif
}
