// The GGUF edge's names, from the families' registry (qs/architectures): one table for the reader and
// the writer.
#include "qs/io/gguf_names.h"

#include "qs/architectures/gguf_tensor_names.h"
#include "qs/architectures/registry.h"

namespace qs::io {

std::optional<HfArchitecture> hfArchitectureOfGguf(std::string_view ggufArchitecture) {
    const architectures::Family* f = architectures::familyOfGguf(ggufArchitecture, /*hasExperts=*/false);
    if (f == nullptr) return std::nullopt;
    return HfArchitecture{std::string(f->modelType), std::string(f->hfClass)};
}

std::optional<std::string> ggufArchitectureOfModelType(std::string_view modelType) {
    const architectures::Family* f = architectures::familyOf(modelType);
    if (f == nullptr || f->ggufArch.empty()) return std::nullopt;
    return std::string(f->ggufArch);
}

bool ggufArchitecturePermutesQk(std::string_view ggufArchitecture) {
    // Every family of an architecture agrees on it; llama's (dense or not) is the one that permutes.
    const architectures::Family* f = architectures::familyOfGguf(ggufArchitecture, /*hasExperts=*/false);
    return f != nullptr && f->ggufPermutesQk;
}

std::optional<std::string> hfNameOfGgufTensor(std::string_view ggufName) {
    return architectures::hfTensorName(nullptr, ggufName);
}
std::optional<std::string> ggufNameOfHfTensor(std::string_view hfName) {
    return architectures::ggufTensorName(nullptr, hfName);
}

}  // namespace qs::io
