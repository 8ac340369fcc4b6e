#include "qs/pipeline/job_report.h"

#include <cmath>
#include <limits>

namespace qs::pipeline {

namespace modules = architectures::modules;
namespace {

// JSON has no NaN: unmeasured values are written as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json toJson(const analysis::ValueWithUncertainty& v) {
    return {{"value", number(v.value)}, {"uncertainty", number(v.uncertainty)}};
}

nlohmann::json toJson(const analysis::Distribution& d) {
    return {{"min", number(d.minimum)}, {"0.1%", number(d.p0_1)},     {"1%", number(d.p1)},      {"5%", number(d.p5)},
            {"10%", number(d.p10)},     {"median", number(d.median)}, {"90%", number(d.p90)},    {"95%", number(d.p95)},
            {"99%", number(d.p99)},     {"99.9%", number(d.p99_9)},   {"max", number(d.maximum)}};
}

}  // namespace

nlohmann::json toJson(const ModuleLog& m) {
    return {{"method", m.method},
            {"layer", m.layer},
            {"module", m.module},
            {"in_features", m.inFeatures},
            {"out_features", m.outFeatures},
            {"output_error", number(m.outputError)},
            {"loss", number(m.loss)},
            {"samples", m.samples},
            {"damp", number(m.damp)},
            {"time_s", number(m.seconds)},
            {"bits_per_weight", number(m.bitsPerWeight)},
            {"rss_bytes", m.residentBytes},
            {"routed_tokens", m.routedTokens >= 0 ? nlohmann::json(m.routedTokens) : nlohmann::json()},
            {"starved", m.starved()}};
}

ModuleLog moduleLogFromJson(const nlohmann::json& j) {
    const auto numberAt = [&j](const char* key) {
        return j.at(key).is_null() ? std::numeric_limits<double>::quiet_NaN() : j.at(key).get<double>();
    };
    ModuleLog m;
    m.method = j.at("method").get<std::string>();
    m.layer = j.at("layer").get<int>();
    m.module = j.at("module").get<std::string>();
    m.inFeatures = j.at("in_features").get<std::int64_t>();
    m.outFeatures = j.at("out_features").get<std::int64_t>();
    m.outputError = numberAt("output_error");
    m.loss = numberAt("loss");
    m.samples = j.at("samples").get<std::int64_t>();
    m.damp = numberAt("damp");
    m.seconds = numberAt("time_s");
    m.bitsPerWeight = numberAt("bits_per_weight");
    m.residentBytes = j.at("rss_bytes").get<std::uint64_t>();
    m.routedTokens = j.at("routed_tokens").is_null() ? -1 : j.at("routed_tokens").get<std::int64_t>();
    return m;
}

nlohmann::json toJson(const analysis::KlReport& r) {
    return {{"positions", r.count},
            {"ppl_q", toJson(r.pplQ)},
            {"ppl_base", toJson(r.pplBase)},
            {"cor_ln_ppl", number(r.lnPplCorrelation)},
            {"ln_ppl_ratio", toJson(r.lnPplRatio)},
            {"ppl_ratio", toJson(r.pplRatio)},
            {"ppl_diff", toJson(r.pplDiff)},
            {"mean_kld", toJson(r.meanKld)},
            {"kld", toJson(r.kld)},
            {"mean_delta_p", toJson(r.meanDeltaP)},
            {"delta_p", toJson(r.deltaP)},
            {"rms_delta_p", toJson(r.rmsDeltaP)},
            {"same_top_p", toJson(r.sameTop)}};
}

namespace {

// The calibrated scales the serving engine is given: one row per linear with a static input scale or a
// KV-cache scale (layer, module, input format and scale, cache scale).
nlohmann::json servingScalesJson(const MethodResult& r) {
    nlohmann::json rows = nlohmann::json::array();
    const auto& layers = linearHeaders(r);
    for (std::size_t layer = 0; layer < layers.size(); ++layer)
        for (const auto& [module, q] : layers[layer]) {
            if (!(q->input.scale > 0.0f) && !(q->cacheScale > 0.0f)) continue;
            nlohmann::json row = {{"layer", layer}, {"module", module}};
            if (q->input.scale > 0.0f) row["input_scale"] = q->input.scale;
            if (q->cacheScale > 0.0f) row[module == modules::kKProj ? "k_scale" : "v_scale"] = q->cacheScale;
            rows.push_back(std::move(row));
        }
    return rows;
}

}  // namespace

nlohmann::json toJson(const MethodResult& r) {
    nlohmann::json out = {{"method", r.method.name}, {"label", r.label()}};
    // What the KL's reference was: null for a dense source, else the source's quantization.
    out["source_quantization"] = r.quantizedSource ? toJson(*r.quantizedSource) : nlohmann::json(nullptr);
    if (r.rotationSeed) out["rotation_seed"] = *r.rotationSeed;  // quantized rotated (--rotate)
    if (!r.error.empty()) {
        out["error"] = r.error;
        return out;
    }
    out["bits_per_weight"] = number(r.bitsPerWeight);
    out["activations"] = quant::activationFormatName(r.method.activations);
    out["kv_cache"] = r.method.kvCacheFp8 ? "fp8" : "model dtype";
    if (auto serving = servingScalesJson(r); !serving.empty()) out["serving_scales"] = std::move(serving);
    out["linear_bytes"] = r.linearBytes;
    out["checkpoint_bytes"] = r.checkpointBytes;
    out["time_s"] = number(r.seconds);
    if (r.kl.count > 0) out["kl"] = toJson(r.kl);
    if (!r.perLayerKl.empty()) {
        nlohmann::json layers = nlohmann::json::array();
        for (double v : r.perLayerKl) layers.push_back(number(v));
        out["per_layer_mean_kld"] = layers;
    }
    nlohmann::json modules = nlohmann::json::array();
    for (const auto& m : r.modules) modules.push_back(toJson(m));
    out["modules"] = modules;
    return out;
}

nlohmann::json toJson(const JobResult& r) {
    nlohmann::json methods = nlohmann::json::array();
    for (const auto& m : r.methods) methods.push_back(toJson(m));
    nlohmann::json out = {
        {"source_quantization", r.quantizedSource ? toJson(*r.quantizedSource) : nlohmann::json(nullptr)},
        {"calibration_tokens", r.calibrationTokens},
        {"evaluation_tokens", r.evaluationTokens},
        {"time_s", number(r.seconds)},
        {"calibration_matmul", r.bf16Calibration ? "bf16" : "f32"},
        {"methods", methods}};
    if (r.kvCacheOnlyKl) out["kv_cache_fp8_only_kl"] = toJson(*r.kvCacheOnlyKl);
    return out;
}

}  // namespace qs::pipeline
