#include "qs/formats/parameter_count.h"

#include <set>
#include <string>
#include <string_view>

namespace qs::formats {
namespace {

// The prefix a stored part of a quantized linear hangs from: "...q_proj" of "...q_proj.qweight", or
// for experts stacked in one tensor, "...experts.gate_up_proj" of "...gate_up_proj_blocks".
std::string_view ownerBefore(std::string_view name, char separator) {
    const auto at = name.rfind(separator);
    return at == std::string_view::npos ? std::string_view() : name.substr(0, at);
}

bool isBias(std::string_view name) { return name.ends_with("bias"); }

}  // namespace

std::int64_t modelParameterCount(const io::Checkpoint& checkpoint, const FormatInfo& format) {
    std::set<std::string, std::less<>> linears;  // "prefix": parts are "prefix.<part>"
    std::set<std::string, std::less<>> stacked;  // experts in one tensor: parts are "prefix_<part>"
    std::int64_t count = 0;
    for (const LayerQuantInfo& layer : format.layers) {
        (layer.ref.expert >= 0 ? stacked : linears).insert(layer.ref.prefix);
        count += layer.rows * layer.cols;
    }
    for (const io::CheckpointTensor& t : checkpoint.tensors()) {
        const std::string_view name = t.info->name;
        const bool part =
            !isBias(name) && (linears.contains(ownerBefore(name, '.')) || stacked.contains(ownerBefore(name, '_')));
        if (!part) count += t.info->numel();
    }
    return count;
}

}  // namespace qs::formats
