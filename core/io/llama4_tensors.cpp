#include "llama4_tensors.h"

#include <array>
#include <cctype>
#include <cstring>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/io/shape_text.h"

namespace qs::io::detail {

namespace {

constexpr std::array<std::string_view, 3> kMlp{"gate_proj.", "up_proj.", "down_proj."};

// Replaces ".layers.<n>.<from>.<proj>." by ".layers.<n>.<to>.<proj>." in `name`, when it is there.
std::optional<std::string> renameBlock(std::string_view name, std::string_view from, std::string_view to) {
    const std::string_view layers = "layers.";
    const auto at = name.find(layers);
    if (at == std::string_view::npos || (at > 0 && name[at - 1] != '.')) return std::nullopt;
    std::size_t i = at + layers.size(), digits = 0;
    while (i + digits < name.size() && std::isdigit(static_cast<unsigned char>(name[i + digits]))) ++digits;
    if (digits == 0 || i + digits >= name.size() || name[i + digits] != '.') return std::nullopt;
    const std::size_t block = i + digits + 1;
    if (name.substr(block, from.size()) != from || name.substr(block + from.size(), 1) != ".") return std::nullopt;
    const std::string_view rest = name.substr(block + from.size() + 1);
    for (const std::string_view proj : kMlp)
        if (rest.starts_with(proj))
            return std::string(name.substr(0, block)) + std::string(to) + "." + std::string(rest);
    return std::nullopt;
}

}  // namespace

std::optional<std::string> denseMlpAlias(std::string_view name, std::string_view block) {
    return renameBlock(name, block, "mlp");
}

std::string denseMlpStoredName(std::string_view name, std::string_view block) {
    if (block.empty()) return std::string(name);
    auto stored = renameBlock(name, "mlp", block);
    return stored ? *stored : std::string(name);
}

std::uint64_t transposedTwinBytes(const TensorInfo& fused) {
    if (!isFusedExpertTensor(fused.name)) return 0;
    const DType d = fused.dtype;
    if (d != DType::F32 && d != DType::F16 && d != DType::BF16) return 0;
    return fused.byteSize();
}

std::vector<TensorInfo> transposedExpertTwins(const TensorInfo& fused, std::span<const std::byte> stored,
                                              const ExpertModuleNames& names, std::span<std::byte> out,
                                              std::uint64_t at, const std::string& file) {
    const bool gateUp = fused.name.ends_with("experts.gate_up_proj");
    if (fused.shape.size() != 3 || fused.shape[0] < 1 || fused.byteSize() != fused.storedSize() ||
        (gateUp && fused.shape[2] % 2 != 0))
        throw Error(file + ": tensor '" + fused.name + "' " + shapeText(fused.shape) + " is not " +
                    (gateUp ? "[experts, hidden, 2 x intermediate]" : "[experts, intermediate, hidden]") +
                    " as Llama 4 fuses experts");
    const std::string block = fused.name.substr(0, fused.name.size() - (gateUp ? 20 : 17));  // "...feed_forward."
    const std::int64_t experts = fused.shape[0], rows = fused.shape[1], cols = fused.shape[2];
    const std::size_t element = static_cast<std::size_t>(fused.byteSize() / static_cast<std::uint64_t>(fused.numel()));
    std::vector<TensorInfo> twins;
    // One twin: columns [first, first + width) of expert e's [rows, cols] block, transposed to [width, rows].
    const auto twin = [&](std::string name, std::int64_t e, std::int64_t first, std::int64_t width) {
        const std::byte* src = stored.data() + static_cast<std::size_t>(e * rows * cols) * element;
        std::byte* dst = out.data() + at;
        for (std::int64_t c = 0; c < width; ++c)
            for (std::int64_t r = 0; r < rows; ++r)
                std::memcpy(dst + static_cast<std::size_t>(c * rows + r) * element,
                            src + static_cast<std::size_t>(r * cols + first + c) * element, element);
        TensorInfo t = fused;
        t.name = std::move(name);
        t.shape = {width, rows};
        t.begin = at;
        t.end = at + static_cast<std::uint64_t>(width * rows) * element;
        at = t.end;
        twins.push_back(std::move(t));
    };
    for (std::int64_t e = 0; e < experts; ++e) {
        const std::string expert = block + "experts." + std::to_string(e) + ".";
        if (!gateUp) {
            twin(expert + names.down + ".weight", e, 0, cols);
            continue;
        }
        twin(expert + names.gate + ".weight", e, 0, cols / 2);
        twin(expert + names.up + ".weight", e, cols / 2, cols / 2);
    }
    return twins;
}

}  // namespace qs::io::detail
