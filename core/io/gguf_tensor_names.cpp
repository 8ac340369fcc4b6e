#include "qs/io/gguf_tensor_names.h"

#include "gguf_checkpoint.h"

namespace qs::io {

// The same renaming Checkpoint::open does, so that the two can never disagree.
std::vector<GgufTensorName> ggufTensorNames(const GgufFile& file) {
    const detail::GgufCheckpoint view = detail::describeGgufCheckpoint(file);
    std::vector<GgufTensorName> names;
    names.reserve(view.tensors.size());
    for (std::size_t i = 0; i < view.tensors.size(); ++i) names.push_back({view.sourceNames[i], view.tensors[i].name});
    return names;
}

std::optional<std::string> hfNameInGguf(const std::vector<GgufTensorName>& names, std::string_view ggufName) {
    for (const GgufTensorName& n : names)
        if (n.gguf == ggufName) return n.hf;
    return std::nullopt;
}

}  // namespace qs::io
