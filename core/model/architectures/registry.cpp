#include "qs/architectures/registry.h"

#include "families.h"

namespace qs::architectures {

const std::vector<const Family*>& families() {
    using namespace detail;
    // One line per addition (clang-format would reflow the table), so that branches adding families merge cleanly.
    // clang-format off
    static const std::vector<const Family*> all{
        &llama(),
        &mistral(),
        &qwen2(),
        &qwen3(),
        &qwen3Moe(),
        &glm4Moe(),
        &deepseekV3(),
        &kimiK2(),
        &mixtral(),
        &gptOss(),
        &gemma3Text(),
        &phi3(),
        &gemma3Vlm(),
        &qwen25Vl(),
        &qwen3Vl(),
        &mistral3(),
        &qwen3VlMoe(),
        &llama4Text(),
        &llama4(),
        &qwen35(),
        &qwen35Moe(),
        &qwen35Vl(),
        &qwen35MoeVl(),
    };
    // clang-format on
    return all;
}

const Family* familyOf(std::string_view modelType) {
    for (const Family* f : families())
        if (f->modelType == modelType) return f;
    return nullptr;
}

const Family& textFamilyOf(const Family& family) {
    if (!family.vision) return family;
    const Family* text = familyOf(family.vision->textModelType);
    return text != nullptr ? *text : family;
}

const Family* familyOfGguf(std::string_view ggufArch, bool hasExperts) {
    for (const Family* f : families()) {
        if (f->ggufArch != ggufArch || !f->notYet.empty()) continue;
        const bool reads = f->ggufReadBack == GgufReadBack::Always ||
                           (f->ggufReadBack == GgufReadBack::Dense && !hasExperts) ||
                           (f->ggufReadBack == GgufReadBack::WithExperts && hasExperts);
        // A VLM's GGUF holds its text tower only (the vision tower goes to an mmproj file).
        if (reads) return &textFamilyOf(*f);
    }
    return nullptr;
}

bool stacksExperts(std::string_view modelType) {
    const Family* f = familyOf(modelType);
    return f != nullptr && f->moe && f->moe->stacked;
}

std::string modelTypesWhere(const std::function<bool(const Family&)>& pick) {
    std::string list;
    for (const Family* f : families())
        if (pick(*f)) list += (list.empty() ? "" : ", ") + std::string(f->modelType);
    return list;
}

std::string supportedModelTypes() {
    return modelTypesWhere([](const Family& f) { return f.notYet.empty() && !f.vision; }) + "; the text towers of " +
           modelTypesWhere([](const Family& f) { return f.notYet.empty() && f.vision; });
}

}  // namespace qs::architectures
