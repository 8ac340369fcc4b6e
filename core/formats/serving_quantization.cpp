#include "qs/formats/serving_quantization.h"

#include <cmath>
#include <initializer_list>
#include <utility>

#include "qs/error.h"

#include "tensor_access.h"

namespace qs::formats {
namespace {

constexpr std::string_view kKinds[] = {"input_scale", "input_global_scale", "k_scale", "v_scale"};

// The kind of a scale tensor's name ("...k_proj.input_scale" -> "input_scale"), or "" for other tensors.
std::string_view kindOf(std::string_view name) {
    for (std::string_view kind : kKinds)
        if (name.size() > kind.size() && name.ends_with(kind) && name[name.size() - kind.size() - 1] == '.')
            return kind;
    return {};
}

float checkedScale(const io::Checkpoint& checkpoint, std::string_view name) {
    const io::TensorView t = checkpoint.tensor(name);
    detail::requireDtype(checkpoint, t, {io::DType::F32, io::DType::BF16, io::DType::F16});
    if (!detail::isScalar(t))
        detail::failTensor(checkpoint, name, "shape " + detail::shapeText(t.shape()) + ", expected one value");
    const float value = t.toF32()[0];
    if (!std::isfinite(value) || !(value > 0.0f))
        detail::failTensor(checkpoint, name,
                           "is " + std::to_string(value) +
                               ", but a quantization scale must be finite and positive (the engine divides by it)");
    return value;
}

// The value of the first of `names` the checkpoint holds, 0 when it holds none.
float firstScale(const io::Checkpoint& checkpoint, std::initializer_list<std::string> names) {
    for (const auto& name : names)
        if (checkpoint.find(name)) return checkedScale(checkpoint, name);
    return 0.0f;
}

// Whether a compressed-tensors config quantizes inputs per token at run time (FP8_DYNAMIC): every config
// group that states input activations says so.
bool dynamicTokenInputs(const nlohmann::json& config) {
    const auto groups = config.find("config_groups");
    if (groups == config.end() || !groups->is_object() || groups->empty()) return false;
    for (const auto& [name, group] : groups->items()) {
        if (!group.is_object()) return false;
        const auto inputs = group.find("input_activations");
        if (inputs == group.end() || !inputs->is_object()) return false;
        if (inputs->value("strategy", std::string()) != "token" ||
            inputs->value("dynamic", nlohmann::json(false)) != true ||
            inputs->value("type", std::string()) != "float" || inputs->value("num_bits", nlohmann::json(0)) != 8)
            return false;
    }
    return true;
}

}  // namespace

bool isServingScale(std::string_view tensorName) { return !kindOf(tensorName).empty(); }

std::vector<ServingScale> readServingScales(const io::Checkpoint& checkpoint) {
    std::vector<ServingScale> scales;
    for (const auto& t : checkpoint.tensors()) {
        const std::string_view kind = kindOf(t.info->name);
        if (kind.empty()) continue;
        scales.push_back({t.info->name, std::string(kind), t.naming.layer, checkedScale(checkpoint, t.info->name)});
    }
    return scales;
}

ServingQuantization readServingQuantization(const io::Checkpoint& checkpoint, const FormatInfo& format,
                                            std::string_view prefixView, bool nvfp4Weights) {
    const std::string prefix(prefixView);
    ServingQuantization serving;
    if (const float s = firstScale(checkpoint, {prefix + ".input_global_scale"}); s > 0.0f) {
        serving.input = {quant::ActivationFormat::Nvfp4, 1.0f / s};  // compressed-tensors stores the divisor
    } else if (const float s2 = firstScale(checkpoint, {prefix + ".input_scale"}); s2 > 0.0f) {
        serving.input = {nvfp4Weights ? quant::ActivationFormat::Nvfp4 : quant::ActivationFormat::Fp8Tensor, s2};
    } else if (format.format == Format::CompressedTensors && dynamicTokenInputs(format.config)) {
        serving.input = {quant::ActivationFormat::Fp8Token, 0.0f};
    }
    for (const auto& [projection, kind] : {std::pair{".k_proj", "k_scale"}, std::pair{".v_proj", "v_scale"}}) {
        if (!prefix.ends_with(projection)) continue;
        const std::string attention = prefix.substr(0, prefix.size() - std::string_view(projection).size());
        serving.cacheScale = firstScale(checkpoint, {attention + "." + kind, prefix + "." + kind});
    }
    return serving;
}

}  // namespace qs::formats
