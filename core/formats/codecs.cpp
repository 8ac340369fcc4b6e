#include "codecs.h"

#include "qs/error.h"

#include "tensor_access.h"

namespace qs::formats::detail {

std::vector<LinearRef> refsWithSuffix(const io::Checkpoint& checkpoint, std::string_view suffix,
                                      const std::function<bool(const io::CheckpointTensor&)>& accept) {
    std::vector<LinearRef> refs;
    for (const auto& t : checkpoint.tensors()) {
        const std::string_view name = t.info->name;
        if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
        if (accept && !accept(t)) continue;
        refs.push_back(LinearRef{std::string(name.substr(0, name.size() - suffix.size())), -1});
    }
    return refs;
}

std::vector<float> readBias(const io::Checkpoint& checkpoint, const LinearRef& ref, std::int64_t rows) {
    const std::string name = ref.prefix + ".bias";
    if (!hasTensor(checkpoint, name)) return {};
    const auto bias = checkpoint.tensor(name);
    requireShape(checkpoint, bias, {rows}, "one bias per output feature");
    return bias.toF32();
}

void requireUnstacked(const io::Checkpoint& checkpoint, const LinearRef& ref, std::string_view codec) {
    if (ref.expert >= 0)
        throw Error(checkpoint.root().string() + ": " + ref.label() + ": " + std::string(codec) +
                    " tensors are not stacked by expert, so an expert index does not apply");
}

}  // namespace qs::formats::detail
