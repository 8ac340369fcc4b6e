#include "serving_scales.h"

#include <cmath>
#include <initializer_list>
#include <limits>

#include "qs/error.h"

#include "tensor_encoding.h"

namespace qs::formats::detail {
namespace {}  // namespace

std::vector<EncodedTensor> kvCacheScaleTensors(const std::string& prefix, const quant::QuantizedLinear& q,
                                               KvScaleNaming naming) {
    if (!(q.cacheScale > 0.0f)) return {};
    const bool keys = prefix.ends_with(".k_proj"), values = prefix.ends_with(".v_proj");
    if (!keys && !values) throw Error(prefix + ": a KV-cache scale belongs to k_proj or v_proj, not to this module");
    const std::string scaleName = keys ? "k_scale" : "v_scale";
    const std::string owner = naming == KvScaleNaming::Projection ? prefix : prefix.substr(0, prefix.size() - 7);
    return {floatTensor(owner + "." + scaleName, io::DType::F32, {}, &q.cacheScale)};
}

bool anyKvCacheScale(const ExportScheme& scheme) {
    for (const auto& [prefix, q] : scheme.linears)
        if (q->cacheScale > 0.0f) return true;
    return false;
}

quant::ActivationFormat commonInputFormat(const ExportScheme& scheme, std::string_view encoder) {
    if (scheme.linears.empty()) return quant::ActivationFormat::None;
    const auto& [firstPrefix, first] = scheme.linears.front();
    for (const auto& [prefix, q] : scheme.linears)
        if (q->input.format != first->input.format)
            throw Error(std::string(encoder) + " states one input quantization for the whole model, but " + prefix +
                        " has " + std::string(quant::activationFormatName(q->input.format)) + " and " + firstPrefix +
                        " " + std::string(quant::activationFormatName(first->input.format)));
    return first->input.format;
}

float exactReciprocal(float scale) {
    const float nearest = 1.0f / scale;
    const float below = std::nextafter(nearest, 0.0f),
                above = std::nextafter(nearest, std::numeric_limits<float>::infinity());
    for (const float candidate : {nearest, below, above, std::nextafter(below, 0.0f),
                                  std::nextafter(above, std::numeric_limits<float>::infinity())})
        if (1.0f / candidate == scale) return candidate;
    return nearest;
}

}  // namespace qs::formats::detail
