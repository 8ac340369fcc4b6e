// "ct-mixed" (docs/formats/compressed-tensors.md): one checkpoint whose linears use different
// schemes: integer grids as pack-quantized (2/4/8-bit, symmetric or not, groups, act-order), FP8 per
// channel or per tensor as float-quantized (dynamic per-token activations), NVFP4 as
// nvfp4-pack-quantized and MXFP4 as mxfp4-pack-quantized. Linears with the same scheme share a
// config group whose targets are their exact module names (compressed-tensors and vLLM match a
// target by equality, or by regex when it starts with "re:"); the top-level format is the one
// format in use or "mixed-precision", and every group names its own format.
#include <algorithm>
#include <optional>

#include "compressed_tensors_config.h"
#include "ct_pack_quantized.h"
#include "encoder_support.h"
#include "encoders.h"
#include "fp8_encoding.h"

namespace qs::formats::detail {

namespace {

enum class CtPart { PackInt, Fp8, Nvfp4, Mxfp4 };

std::optional<CtPart> partOf(const quant::QuantizedLinear& q) {
    switch (q.method) {
        case quant::Method::Rtn:
        case quant::Method::Gptq:
        case quant::Method::Awq: return CtPart::PackInt;
        case quant::Method::Fp8: return CtPart::Fp8;
        case quant::Method::Nvfp4: return CtPart::Nvfp4;
        case quant::Method::Mxfp4: return CtPart::Mxfp4;
        case quant::Method::Nf4:
        case quant::Method::Trellis:
        case quant::Method::Ggml: break;
    }
    return std::nullopt;
}

// The config group a linear belongs to: its scheme without targets.
nlohmann::json schemeOf(const quant::QuantizedLinear& q) {
    switch (*partOf(q)) {
        case CtPart::PackInt: return ctScheme(nullptr, ctPackQuantizedArgs(q), "pack-quantized");
        case CtPart::Fp8:
            return ctScheme(nullptr, ctFp8WeightArgs(fp8PerChannel(q) ? "channel" : "tensor"), "float-quantized",
                            ctDynamicTokenActivations());
        case CtPart::Nvfp4: return ctScheme(nullptr, ctNvfp4WeightArgs(), "nvfp4-pack-quantized");
        case CtPart::Mxfp4: return ctScheme(nullptr, ctMxfp4WeightArgs(), "mxfp4-pack-quantized");
    }
    return nullptr;
}

class CtMixedEncoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "ct-mixed"; }

    std::string_view description() const override {
        return "compressed-tensors with a scheme per linear (int 2/4/8-bit groups, FP8 per channel, NVFP4, MXFP4) in "
               "one config (vLLM, transformers)";
    }

    std::string layoutRefusal(const quant::QuantizedLinear& q) const override {
        const auto part = partOf(q);
        if (!part)
            return "it holds integer (RTN, GPTQ, AWQ), FP8, NVFP4 and MXFP4 results, and this linear was quantized "
                   "with " +
                   std::string(quant::methodName(q.method));
        switch (*part) {
            case CtPart::PackInt: return ctPackQuantizedProblem(q);
            case CtPart::Fp8: return ctFp8DynamicEncoder().refusal(q);
            case CtPart::Nvfp4: return ctNvfp4Encoder().refusal(q);
            case CtPart::Mxfp4: return ctMxfp4Encoder().refusal(q);
        }
        return "";
    }

    std::vector<EncodedTensor> encode(const std::string& prefix, const quant::QuantizedLinear& q) const override {
        requireEncodable(*this, prefix, q);
        switch (*partOf(q)) {
            case CtPart::PackInt: return encodeCtPackQuantized(prefix, q);
            case CtPart::Fp8: return ctFp8DynamicEncoder().encode(prefix, q);
            case CtPart::Nvfp4: return ctNvfp4Encoder().encode(prefix, q);
            case CtPart::Mxfp4: return ctMxfp4Encoder().encode(prefix, q);
        }
        return {};
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        std::vector<nlohmann::json> groups;  // in the order their first linear appears
        for (const auto& [prefix, q] : scheme.linears) {
            nlohmann::json group = schemeOf(*q);
            auto same = std::find_if(groups.begin(), groups.end(), [&](const nlohmann::json& g) {
                nlohmann::json withoutTargets = g;
                withoutTargets["targets"] = nullptr;
                return withoutTargets == group;
            });
            if (same == groups.end()) {
                group["targets"] = nlohmann::json::array();
                same = groups.insert(groups.end(), std::move(group));
            }
            (*same)["targets"].push_back(prefix);
        }
        nlohmann::json configGroups = nlohmann::json::object();
        std::vector<std::string> formats;
        for (std::size_t i = 0; i < groups.size(); ++i) {
            const auto format = groups[i]["format"].get<std::string>();
            if (std::find(formats.begin(), formats.end(), format) == formats.end()) formats.push_back(format);
            configGroups["group_" + std::to_string(i)] = std::move(groups[i]);
        }
        return ctQuantizationConfig(std::move(configGroups), formats.size() == 1 ? formats.front() : "mixed-precision",
                                    scheme.denseLinears);
    }
};

}  // namespace

const LinearEncoder& ctMixedEncoder() {
    static const CtMixedEncoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
