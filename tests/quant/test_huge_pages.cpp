// When the programs start again with glibc's huge-page tunable (qs/huge_pages.h).
#include <gtest/gtest.h>

#include "qs/huge_pages.h"

namespace qs {
namespace {

TEST(HugePages, OnlyWhereTheKernelGivesThemOnRequest) {
    EXPECT_EQ(tunablesWithHugePages(nullptr, "madvise"), "glibc.malloc.hugetlb=1");
    EXPECT_EQ(tunablesWithHugePages("", "madvise"), "glibc.malloc.hugetlb=1");
    EXPECT_EQ(tunablesWithHugePages(nullptr, "always"), "");   // large mappings get them unasked
    EXPECT_EQ(tunablesWithHugePages(nullptr, "never"), "");
    EXPECT_EQ(tunablesWithHugePages(nullptr, ""), "");         // no THP in this kernel
}

TEST(HugePages, OtherTunablesAreKeptAndASettingOfThisOneWins) {
    EXPECT_EQ(tunablesWithHugePages("glibc.malloc.arena_max=2", "madvise"), "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
    EXPECT_EQ(tunablesWithHugePages("glibc.malloc.hugetlb=0", "madvise"), "");      // the user's opt-out
    EXPECT_EQ(tunablesWithHugePages("glibc.malloc.hugetlb=1", "madvise"), "");      // already restarted
}

TEST(HugePages, TheModeIsOneOfTheKernels) {
    const std::string mode = transparentHugePagesMode();
    EXPECT_TRUE(mode.empty() || mode == "always" || mode == "madvise" || mode == "never") << mode;
}

}  // namespace
}  // namespace qs
