// The architecture-dependent names of a GGUF read back (gguf_read_names.h): the inverse of the
// planner in core/pipeline/gguf_export.cpp and of llama.cpp's convert_hf_to_gguf.py for these models.
#include "gguf_read_names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <utility>

#include "qs/architectures/gguf_tensor_names.h"
#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/io/gguf_keys.h"
#include "qs/io/shape_text.h"

namespace qs::io::detail {

namespace keys = io::gguf_keys;

namespace {

struct LayerTensor {
    std::string_view layer;   // "7"
    std::string_view module;  // "ffn_gate_exps"
    std::string_view part;    // "weight"
};

// "blk.<digits>.<module>.<part>" split into its pieces.
std::optional<LayerTensor> splitLayerTensor(std::string_view name) {
    constexpr std::string_view kBlk = "blk.";
    if (!name.starts_with(kBlk)) return std::nullopt;
    name.remove_prefix(kBlk.size());
    std::size_t digits = 0;
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
    if (digits == 0 || digits >= name.size() || name[digits] != '.') return std::nullopt;
    const std::string_view rest = name.substr(digits + 1);
    const auto dot = rest.rfind('.');
    if (dot == std::string_view::npos || dot == 0) return std::nullopt;
    return LayerTensor{name.substr(0, digits), rest.substr(0, dot), rest.substr(dot + 1)};
}

std::string layerName(std::string_view layer, std::string_view module, std::string_view part) {
    return "model.layers." + std::string(layer) + "." + std::string(module) + "." + std::string(part);
}

// The expert projection a stacked tensor holds, as the architecture names it.
const std::string* expertModule(const GgufExpertNames& e, std::string_view module) {
    if (module == architectures::kGgufExpertsGate) return &e.gate;
    if (module == architectures::kGgufExpertsUp) return &e.up;
    if (module == architectures::kGgufExpertsDown) return &e.down;
    return nullptr;
}

// Mixtral GGUF files converted before llama.cpp stacked the experts (early 2024) keep one tensor per
// expert, blk.N.ffn_{gate,up,down}.E.weight, which llama.cpp still loads.
std::optional<std::string> legacyExpertName(const GgufExpertNames& e, const LayerTensor& t) {
    const auto dot = t.module.find('.');
    if (e.count == 0 || dot == std::string_view::npos) return std::nullopt;
    const std::string_view expert = t.module.substr(dot + 1);
    if (expert.empty() ||
        !std::ranges::all_of(expert, [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
        return std::nullopt;
    const std::string stacked = std::string(t.module.substr(0, dot)) + "_exps";
    const std::string* module = expertModule(e, stacked);
    if (module == nullptr) return std::nullopt;
    return layerName(t.layer, e.block + ".experts." + std::string(expert) + "." + *module, t.part);
}

}  // namespace

GgufReadNames ggufReadNames(const GgufFile& file) {
    GgufReadNames names;
    if (const std::string* arch = file.metadata().string(keys::kArchitecture)) names.arch = *arch;
    const std::string key = keys::archKey(names.arch, keys::kExpertCount);
    const GgufValue* count = file.metadata().find(key);
    std::optional<std::int64_t> n;
    if (count != nullptr) {
        n = count->asInteger();
        if (!n || *n < 0 || *n > std::numeric_limits<int>::max())
            throw Error(file.path().string() + ": metadata '" + key + "' is not a count of experts");
    }
    // llama.cpp runs Mixtral as llama with experts: the expert count chooses the family.
    names.family = architectures::familyOfGguf(names.arch, n.value_or(0) > 0);
    if (names.family == nullptr) return names;
    if (names.family->ggufNormPlusOne) names.normShift = -1.0f;
    // The experts of every layer are stacked; they come back under the names the family's GGUF reads
    // back with (gpt-oss's gate and up apart: model::ModelConfig::fromCheckpoint reads them so).
    // A stacked tensor without an expert count is refused naming the count (splitStackedExperts): a llama
    // GGUF then takes the names of the family it would be with experts (Mixtral).
    const architectures::Family* withExperts =
        names.family->moe ? names.family : architectures::familyOfGguf(names.arch, /*hasExperts=*/true);
    if (withExperts == nullptr || !withExperts->moe) return names;
    const architectures::ExpertNames& e = withExperts->moe->ggufNames;
    names.experts = {0, e.block, e.gate, e.up, e.down, e.router};
    names.experts.count = static_cast<int>(n.value_or(0));
    return names;
}

std::optional<std::string> hfNameIn(const GgufReadNames& names, std::string_view ggufName) {
    if (const auto t = splitLayerTensor(ggufName)) {
        if (names.experts.count > 0 && t->module == architectures::kGgufRouter)
            return layerName(t->layer, names.experts.block + "." + names.experts.router, t->part);
        if (const auto legacy = legacyExpertName(names.experts, *t)) return legacy;
    }
    return architectures::hfTensorName(names.family, ggufName);
}

bool isGgufNorm(const TensorInfo& t) {
    // Qwen3.5's gated norm (ssm_norm) multiplies by w itself, and the converter stores it as it is.
    return t.name.ends_with("norm.weight") && !t.name.ends_with(".ssm_norm.weight") && t.shape.size() == 1 &&
           t.decodesToF32();
}

std::optional<std::vector<TensorInfo>> splitStackedExperts(const TensorInfo& stacked, const GgufReadNames& names,
                                                           const std::string& file) {
    const GgufExpertNames& e = names.experts;
    const auto t = splitLayerTensor(stacked.name);
    if (e.block.empty() || !t || (t->part != "weight" && t->part != "bias")) return std::nullopt;
    const std::string* module = expertModule(e, t->module);
    if (module == nullptr) return std::nullopt;
    const bool bias = t->part == "bias";
    if (e.count == 0)
        throw Error(file + ": tensor '" + stacked.name + "' " + shapeText(stacked.shape) + " stacks experts, but " +
                    names.arch + ".expert_count is missing or 0");
    if (stacked.shape.size() != (bias ? 2u : 3u) || stacked.shape[0] != e.count)
        throw Error(file + ": tensor '" + stacked.name + "' " + shapeText(stacked.shape) + " is not the " +
                    std::to_string(e.count) + " stacked experts " + (bias ? "[experts, out]" : "[experts, out, in]") +
                    " that " + names.arch + ".expert_count says");
    // An expert is a run of whole rows (of a bias: one row), so its bytes are a slice of the stacked ones.
    const std::vector<std::int64_t> shape(stacked.shape.begin() + 1, stacked.shape.end());
    const std::int64_t rows = bias ? 1 : shape[0];
    const std::uint64_t bytes = static_cast<std::uint64_t>(rows) * ggmlRowBytes(*stacked.ggmlType, shape.back());
    std::vector<TensorInfo> experts;
    for (int x = 0; x < e.count; ++x) {
        TensorInfo one = stacked;
        one.name = "model.layers." + std::string(t->layer) + "." + e.block + ".experts." + std::to_string(x) + "." +
                   *module + "." + std::string(t->part);
        one.shape = shape;
        one.begin = stacked.begin + static_cast<std::uint64_t>(x) * bytes;
        one.end = one.begin + bytes;
        experts.push_back(std::move(one));
    }
    return experts;
}

}  // namespace qs::io::detail
