// When the programs start again with glibc's huge-page tunable (qs/huge_pages.h).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "qs/huge_pages.h"

namespace qs {
namespace {

TEST(HugePages, OnlyWhereTheKernelGivesThemOnRequest) {
    EXPECT_EQ(tunablesWithHugePages(nullptr, "madvise"), "glibc.malloc.hugetlb=1");
    EXPECT_EQ(tunablesWithHugePages("", "madvise"), "glibc.malloc.hugetlb=1");
    EXPECT_EQ(tunablesWithHugePages(nullptr, "always"), "");  // large mappings get them unasked
    EXPECT_EQ(tunablesWithHugePages(nullptr, "never"), "");
    EXPECT_EQ(tunablesWithHugePages(nullptr, ""), "");  // no THP in this kernel
}

TEST(HugePages, OtherTunablesAreKeptAndASettingOfThisOneWins) {
    EXPECT_EQ(tunablesWithHugePages("glibc.malloc.arena_max=2", "madvise"),
              "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
    EXPECT_EQ(tunablesWithHugePages("glibc.malloc.hugetlb=0", "madvise"), "");  // the user's opt-out
    EXPECT_EQ(tunablesWithHugePages("glibc.malloc.hugetlb=1", "madvise"), "");  // already restarted
}

TEST(HugePages, TheModeIsOneOfTheKernels) {
    const std::string mode = transparentHugePagesMode();
    EXPECT_TRUE(mode.empty() || mode == "always" || mode == "madvise" || mode == "never") << mode;
}

// The [heap] mapping's flags in /proc/PID/smaps say whether glibc advised it for huge pages.
TEST(HugePages, TheHeapsFlagsSayWhetherMallocAskedForHugePages) {
    const auto advised = [](const std::string& text) {
        std::istringstream in(text);
        return heapAdvisedHuge(in);
    };
    const std::string other = "7f0000000000-7f0000021000 rw-p 00000000 00:00 0\nVmFlags: rd wr mr mw me ac hg\n";
    const std::string heap =
        "55d000000000-55d000400000 rw-p 00000000 00:00 0                          [heap]\nSize:  4096 kB\n";
    EXPECT_TRUE(advised(heap + "VmFlags: rd wr mr mw me ac hg\n"));
    EXPECT_TRUE(advised(heap + "VmFlags: rd wr hg mr\n"));
    EXPECT_FALSE(advised(heap + "VmFlags: rd wr mr mw me ac\n"));
    EXPECT_FALSE(advised(heap + "VmFlags: rd wr mr mw me ac nh\n"));
    EXPECT_FALSE(advised(other)) << "another mapping's flags are not the heap's";
    EXPECT_FALSE(advised(other + heap + "VmFlags: rd wr\n"));
    EXPECT_TRUE(advised(heap + "VmFlags: rd wr\n" + heap + "VmFlags: rd wr hg\n")) << "the heap split in two mappings";
    EXPECT_FALSE(advised(heap + "VmFlags: rd wr\n" + other)) << "the mapping after the heap";
    EXPECT_FALSE(advised(""));
}

}  // namespace
}  // namespace qs
