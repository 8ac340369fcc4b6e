#include "qs/pipeline/run_text.h"

#include <string>
#include <string_view>
#include <system_error>

#include "qs/error.h"
#include "qs/pipeline/bundled_resources.h"

namespace qs::pipeline {
namespace {

std::string_view textFileName(TextRole role) { return role == TextRole::Calibration ? "calibration.txt" : "eval.txt"; }

}  // namespace

std::filesystem::path resolveRunText(TextRole role, const std::filesystem::path& given,
                                     const io::Checkpoint& checkpoint) {
    if (!given.empty()) return given;
    const std::filesystem::path name(textFileName(role));
    std::error_code ec;
    if (std::filesystem::exists(checkpoint.root() / name, ec)) return checkpoint.root() / name;
    if (auto bundled = bundledResource(std::filesystem::path("demo") / name)) return *bundled;
    const char* what = role == TextRole::Calibration ? "calibration" : "evaluation";
    throw Error("no " + name.string() + " beside the checkpoint and none bundled: name a file of " + what + " text");
}

}  // namespace qs::pipeline
