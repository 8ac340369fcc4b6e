#pragma once
// Large buffers on transparent huge pages. Every matrix the forward pass, the Hessians and GPTQ
// allocate is large enough for glibc to map it fresh and unmap it when freed, so each one pays a page
// fault per 4 KiB on first touch, every time. Where the kernel gives huge pages only on request (THP
// "madvise", as on this project's machines), glibc asks for them when its `glibc.malloc.hugetlb=1`
// tunable is set; measured idle (bench/README.md, 2026-12-03): a 1024-wide forward pass of 1024 tokens
// 1.4-1.7x faster on one thread, GPTQ of 4096x4096 1.7-2.2x, a Llama-3-8B-shaped layer's calibration 1.1-1.2x.
// glibc reads its tunables only when a program starts, so the programs (quantscope-cli, quantscope)
// start themselves again with it, once, before any work. GLIBC_TUNABLES=glibc.malloc.hugetlb=0 in the
// environment opts out (any setting of the tunable is left as it is).
#include <cstdlib>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>

#include <unistd.h>

namespace qs {

// The kernel's THP mode ("always", "madvise" or "never"), "" where it has none.
inline std::string transparentHugePagesMode() {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    if (!std::getline(in, line)) return {};
    const auto open = line.find('['), close = line.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) return {};
    return line.substr(open + 1, close - open - 1);
}

// The GLIBC_TUNABLES to start again with, or "" to go on as we are: only under THP "madvise" ("always"
// backs large mappings without asking, "never" refuses), and never over a setting of the tunable.
inline std::string tunablesWithHugePages(const char* current, std::string_view thpMode) {
    constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
    if (thpMode != "madvise") return {};
    const std::string tunables = current != nullptr ? current : "";
    if (tunables.find(kTunable) != std::string::npos) return {};
    return (tunables.empty() ? "" : tunables + ":") + std::string(kTunable) + "=1";
}

// Whether a [heap] mapping of an smaps text (/proc/PID/smaps) is advised for huge pages (VmFlags "hg").
// glibc advises what it adds to the heap, so the heap's first pages may be a mapping of their own without it.
inline bool heapAdvisedHuge(std::istream& smaps) {
    bool inHeap = false;
    for (std::string line; std::getline(smaps, line);) {
        if (line.starts_with("VmFlags:")) {
            if (inHeap && (line + " ").find(" hg ") != std::string::npos) return true;
            inHeap = false;
        } else if (line.ends_with("[heap]")) {
            inHeap = true;
        }
    }
    return false;
}

// Whether this process's large allocations land on huge pages: THP "always", or "madvise" with glibc's
// tunable on, which advises the heap it grows (and every large mapping) for them.
inline bool mallocOnHugePages() {
    const std::string mode = transparentHugePagesMode();
    if (mode == "always") return true;
    if (mode != "madvise") return false;
    std::ifstream smaps("/proc/self/smaps");
    return heapAdvisedHuge(smaps);
}

// Called first thing in main(): starts this program again with the tunable when it helps (the same
// process id, arguments and environment otherwise); if that cannot be done, goes on as it is.
inline void restartWithHugePages(char** argv) {
    const char* current = std::getenv("GLIBC_TUNABLES");
    const std::string before = current != nullptr ? current : "";
    const std::string tunables = tunablesWithHugePages(current, transparentHugePagesMode());
    if (tunables.empty() || setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
    execv("/proc/self/exe", argv);
    // Still here: exec failed (no /proc, say). Leave the environment as it was for our children.
    if (current != nullptr)
        setenv("GLIBC_TUNABLES", before.c_str(), 1);
    else
        unsetenv("GLIBC_TUNABLES");
}

}  // namespace qs
