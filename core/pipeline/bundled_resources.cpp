#include "qs/pipeline/bundled_resources.h"

#include <cstdlib>
#include <system_error>
#include <vector>

namespace qs::pipeline {
namespace {

std::vector<std::filesystem::path> searchRoots() {
    std::vector<std::filesystem::path> roots;
    if (const char* env = std::getenv("QS_RESOURCES_DIR"); env != nullptr && *env != '\0') roots.emplace_back(env);
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) roots.push_back(exe.parent_path().parent_path() / "share" / "quantscope");
    roots.emplace_back(QS_SOURCE_RESOURCES_DIR);
    return roots;
}

}  // namespace

std::optional<std::filesystem::path> bundledResource(const std::filesystem::path& relative) {
    for (const auto& root : searchRoots()) {
        std::error_code ec;
        if (std::filesystem::exists(root / relative, ec)) return root / relative;
    }
    return std::nullopt;
}

}  // namespace qs::pipeline
