#include "fused_experts.h"

#include <optional>
#include <string_view>

#include "qs/error.h"
#include "qs/io/shape_text.h"

namespace qs::io::detail {

namespace {

constexpr std::string_view kGateUp = "experts.gate_up_proj";
constexpr std::string_view kDown = "experts.down_proj";
struct FusedName {
    std::string block;  // "model.layers.3.mlp."
    bool gateUp = false;
};

std::optional<FusedName> parse(std::string_view name) {
    FusedName f;
    for (const std::string_view kind : {kGateUp, kDown}) {
        if (!name.ends_with(kind)) continue;
        const std::string_view block = name.substr(0, name.size() - kind.size());
        if (!block.empty() && block.back() != '.') return std::nullopt;
        f.block = std::string(block);
        f.gateUp = kind == kGateUp;
        return f;
    }
    return std::nullopt;
}

// Rows [first, first + rows) of expert `e` of `fused` [E, R, C] as a tensor of its own.
TensorInfo slice(const TensorInfo& fused, std::string name, std::int64_t e, std::int64_t first, std::int64_t rows) {
    const std::int64_t expertRows = fused.shape[1], cols = fused.shape[2];
    const std::uint64_t rowBytes = fused.byteSize() / static_cast<std::uint64_t>(fused.shape[0] * expertRows);
    TensorInfo t = fused;
    t.name = std::move(name);
    t.shape = {rows, cols};
    t.begin = fused.begin + static_cast<std::uint64_t>(e * expertRows + first) * rowBytes;
    t.end = t.begin + static_cast<std::uint64_t>(rows) * rowBytes;
    return t;
}

}  // namespace

bool isFusedExpertTensor(const std::string& name) { return parse(name).has_value(); }

std::vector<TensorInfo> splitFusedExperts(const TensorInfo& fused, const ExpertModuleNames& names,
                                          const std::string& file) {
    const auto f = parse(fused.name);
    if (!f) throw Error(file + ": '" + fused.name + "' is no fused expert tensor");
    if (fused.shape.size() != 3 || fused.shape[0] < 1 || fused.byteSize() != fused.storedSize() ||
        (f->gateUp && fused.shape[1] % 2 != 0))
        throw Error(file + ": tensor '" + fused.name + "' " + shapeText(fused.shape) + " is not " +
                    (f->gateUp ? "[experts, 2 x intermediate, hidden]" : "[experts, hidden, intermediate]") +
                    " as transformers 5 fuses experts");
    const std::string part = ".weight";
    std::vector<TensorInfo> twins;
    for (std::int64_t e = 0; e < fused.shape[0]; ++e) {
        const std::string expert = f->block + "experts." + std::to_string(e) + ".";
        if (!f->gateUp) {
            twins.push_back(slice(fused, expert + names.down + part, e, 0, fused.shape[1]));
            continue;
        }
        const std::int64_t half = fused.shape[1] / 2;
        twins.push_back(slice(fused, expert + names.gate + part, e, 0, half));
        twins.push_back(slice(fused, expert + names.up + part, e, half, half));
    }
    return twins;
}

}  // namespace qs::io::detail
