// Ctrl-C during `inspect --stats` cancels the computation: exit code 130, "cancelled" on stderr,
// nothing on stdout. The checkpoint is a 4 GiB sparse file, so it costs no disk space, and one
// thread makes the statistics take several seconds.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

#include "qs/huge_pages.h"

#include "cli_process.h"
#include "safetensors_builder.h"

namespace {

void writeSparseBf16(const std::filesystem::path& path, std::int64_t elements) {
    // Header only; resize_file extends the file with a hole that reads as zeros.
    std::string header = R"({"big.weight":{"dtype":"BF16","shape":[)" + std::to_string(elements) +
                         R"(],"data_offsets":[0,)" + std::to_string(2 * elements) + "]}}";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::vector<std::byte> bytes(8);
    for (int i = 0; i < 8; ++i)
        bytes[static_cast<std::size_t>(i)] = static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF);
    for (char c : header) bytes.push_back(static_cast<std::byte>(c));
    qs::test::writeFile(path, bytes);
    std::filesystem::resize_file(path, bytes.size() + static_cast<std::uint64_t>(2 * elements));
}

TEST(InspectCancel, CtrlCDuringStatsExitsCleanly) {
    qs::test::TempDir dir;
    const auto path = dir.path() / "big.safetensors";
    writeSparseBf16(path, std::int64_t{1} << 31);

    qs::test::CliProcess cli({"inspect", path.string(), "--stats", "--threads", "1"});
    // The progress bar's first line appears once the computation has run for a second: then it is
    // certainly under way.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (cli.currentErr().find("stats:") == std::string::npos) {
        if (cli.finished()) GTEST_SKIP() << "finished within a second; nothing to interrupt";
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no progress after 120 s";
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_EQ(kill(cli.pid(), SIGINT), 0);
    const auto result = cli.wait();
    EXPECT_EQ(result.exitCode, 130) << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_NE(result.err.find("quantscope-cli: cancelled\n"), std::string::npos) << result.err;
}

// The CLI starts itself again with glibc's huge-page tunable where the kernel gives huge pages only on
// request (qs/huge_pages.h): its large buffers are then on huge pages, which under THP "madvise" only
// a request gives (AnonHugePages). GLIBC_TUNABLES=glibc.malloc.hugetlb=0 opts out.
std::uint64_t anonHugeKilobytesWhileInspecting(const std::filesystem::path& checkpoint) {
    qs::test::CliProcess cli({"inspect", checkpoint.string(), "--stats", "--threads", "1"});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (cli.currentErr().find("stats:") == std::string::npos && !cli.finished() &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream in("/proc/" + std::to_string(cli.pid()) + "/smaps_rollup");
    std::uint64_t kilobytes = 0;
    for (std::string key; in >> key;) {
        if (key == "AnonHugePages:") {
            in >> kilobytes;
            break;
        }
        in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    kill(cli.pid(), SIGINT);
    cli.wait();
    return kilobytes;
}

TEST(HugePages, TheCliRunsOnHugePagesWhereTheKernelGivesThemOnRequest) {
    if (qs::transparentHugePagesMode() != "madvise")
        GTEST_SKIP() << "THP mode '" << qs::transparentHugePagesMode() << "': nothing to ask for";
    qs::test::TempDir dir;
    const auto path = dir.path() / "big.safetensors";
    writeSparseBf16(path, std::int64_t{1} << 31);
    const char* saved = std::getenv("GLIBC_TUNABLES");
    const std::string before = saved != nullptr ? saved : "";
    unsetenv("GLIBC_TUNABLES");
    EXPECT_GT(anonHugeKilobytesWhileInspecting(path), 0u);
    setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0", 1);  // the user's opt-out
    EXPECT_EQ(anonHugeKilobytesWhileInspecting(path), 0u);
    if (saved != nullptr)
        setenv("GLIBC_TUNABLES", before.c_str(), 1);
    else
        unsetenv("GLIBC_TUNABLES");
}

}  // namespace
