#include "qs/pipeline/mixed_precision_measure.h"

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "qs/architectures/module_names.h"
#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/pipeline/mixed_methods.h"

namespace qs::pipeline {

namespace modules = architectures::modules;
namespace {

const ModuleLog& logOf(const MethodResult& r, int layer, std::string_view module) {
    for (const auto& m : r.modules)
        if (m.layer == layer && m.module == module) return m;
    throw Error(r.method.label() + ": no result for " + moduleName(layer, module));
}

// The groups of every layer, with each candidate's bits and damage.
std::vector<SensitivityGroup> groupsOf(const JobResult& result, Sensitivity measure) {
    const auto& first = result.methods.front();
    const int layers = static_cast<int>(layerCount(first));
    std::vector<SensitivityGroup> groups;
    for (int l = 0; l < layers; ++l) {
        std::int64_t layerParams = 0;
        for (auto module : model::LayerWeights::kLinearModules) {
            const ModuleLog& log = logOf(first, l, module);
            layerParams += log.inFeatures * log.outFeatures;
        }
        for (const auto& fused : kFusedGroups) {
            SensitivityGroup g;
            g.layer = l;
            for (auto module : fused) {
                g.modules.emplace_back(module);
                const ModuleLog& log = logOf(first, l, module);
                g.params += log.inFeatures * log.outFeatures;
            }
            for (const auto& r : result.methods) {
                double bits = 0, damage = 0;
                for (auto module : fused) {
                    const ModuleLog& log = logOf(r, l, module);
                    bits += log.bitsPerWeight * double(log.inFeatures * log.outFeatures);
                    damage += log.outputError * log.outputError;
                }
                if (measure == Sensitivity::LayerKl)  // the layer's KL, shared by size; never below 0 (rounding)
                    damage = std::max(0.0, r.perLayerKl[std::size_t(l)]) * double(g.params) / double(layerParams);
                if (measure == Sensitivity::GroupKl)  // measured for the group itself; never below 0 (rounding)
                    damage = std::max(0.0, r.perGroupKl[std::size_t(l)][std::size_t(&fused - kFusedGroups.data())]);
                if (!std::isfinite(damage))
                    throw Error(r.method.label() + ": no " + std::string(sensitivityName(measure)) + " for " +
                                moduleName(l, fused.front()));
                g.bitsPerWeight.push_back(bits / double(g.params));
                g.damage.push_back(damage);
            }
            groups.push_back(std::move(g));
        }
    }
    return groups;
}

}  // namespace

Sensitivity parseSensitivity(std::string_view name) {
    if (name == "output-error") return Sensitivity::OutputError;
    if (name == "layer-kl") return Sensitivity::LayerKl;
    if (name == "group-kl") return Sensitivity::GroupKl;
    throw Error("--sensitivity '" + std::string(name) + "': expected output-error, layer-kl or group-kl");
}

std::string_view sensitivityName(Sensitivity s) {
    switch (s) {
        case Sensitivity::LayerKl: return "layer-kl";
        case Sensitivity::GroupKl: return "group-kl";
        case Sensitivity::OutputError: break;
    }
    return "output-error";
}

double SensitivityTable::uniformPredictedKl(std::size_t c) const {
    double damage = 0;
    for (const auto& g : groups) damage += g.damage[c];
    return klPerDamage * damage;
}

SensitivityTable sensitivityFromResult(const JobResult& result, Sensitivity measure) {
    if (result.methods.empty()) throw Error("the measurement pass has no candidates");
    SensitivityTable t;
    t.measure = measure;
    for (const auto& r : result.methods) {
        if (!r.error.empty()) throw Error("candidate " + r.method.name + " cannot be applied: " + r.error);
        if (measure == Sensitivity::LayerKl && r.perLayerKl.size() != layerCount(r))
            throw Error("layer-kl sensitivity needs the per-layer KL of every candidate (evaluation text)");
        if (measure == Sensitivity::GroupKl && r.perGroupKl.size() != layerCount(r))
            throw Error("group-kl sensitivity needs the per-group KL of every candidate (evaluation text)");
        t.candidates.push_back(r.method);
        t.uniformKl.push_back(r.kl.count > 0 ? r.kl.meanKld.value : std::numeric_limits<double>::quiet_NaN());
        t.uniformBpw.push_back(r.bitsPerWeight);
    }
    t.groups = groupsOf(result, measure);
    // KL ≈ k · Σ damage: k by least squares through the origin over the candidates with a measured KL.
    double num = 0, den = 0;
    t.klPerDamage = 1.0;
    for (std::size_t c = 0; c < t.candidates.size(); ++c) {
        const double d = t.uniformPredictedKl(c);
        if (!std::isfinite(t.uniformKl[c])) continue;
        num += d * t.uniformKl[c];
        den += d * d;
    }
    if (den > 0 && num > 0) t.klPerDamage = num / den;
    return t;
}

SensitivityTable bitsOnlyTable(const model::ModelConfig& config, const std::vector<MethodSpec>& candidates) {
    const std::map<std::string_view, std::pair<int, int>> shapes = {
        {modules::kQProj, {config.qDim(), config.hiddenSize}},
        {modules::kKProj, {config.kvDim(), config.hiddenSize}},
        {modules::kVProj, {config.kvDim(), config.hiddenSize}},
        {modules::kOProj, {config.hiddenSize, config.qDim()}},
        {modules::kGateProj, {config.intermediateSize, config.hiddenSize}},
        {modules::kUpProj, {config.intermediateSize, config.hiddenSize}},
        {modules::kDownProj, {config.hiddenSize, config.intermediateSize}}};
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::map<std::pair<std::string, std::string_view>, double> bits;  // (candidate, module) -> bpw
    for (const auto& m : candidates)
        for (const auto& [module, shape] : shapes) {
            MatrixF w(std::min(shape.first, 256), shape.second);
            for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng);
            MethodSpec proxy = m;
            if (m.kind == MethodKind::Gptq || m.kind == MethodKind::Awq)
                proxy.kind = MethodKind::Rtn, proxy.actOrder = false;
            bits[{m.name, module}] = m.ggufFileMix() ? 0.0 : quantizeLinear(proxy, w, nullptr, 0.0, 0).bitsPerWeight();
        }
    SensitivityTable t;
    t.candidates = candidates;
    for (int l = 0; l < config.numLayers; ++l)
        for (const auto& fused : kFusedGroups) {
            SensitivityGroup g;
            g.layer = l;
            double total = 0;
            for (auto module : fused) {
                g.modules.emplace_back(module);
                g.params += std::int64_t(shapes.at(module).first) * shapes.at(module).second;
            }
            for (const auto& m : candidates) {
                total = 0;
                for (auto module : fused)
                    total += bits.at({m.name, module}) * double(shapes.at(module).first) * shapes.at(module).second;
                g.bitsPerWeight.push_back(total / double(g.params));
                g.damage.push_back(0.0);
            }
            t.groups.push_back(std::move(g));
        }
    for (std::size_t c = 0; c < candidates.size(); ++c) {
        t.uniformKl.push_back(std::numeric_limits<double>::quiet_NaN());
        t.uniformBpw.push_back(std::numeric_limits<double>::quiet_NaN());
    }
    return t;
}

SensitivityTable measureSensitivity(JobPlan plan, const std::vector<MethodSpec>& candidates, Sensitivity measure,
                                    const ProgressCallback& progress, const CancelToken& cancel, JobResult* measured) {
    if (candidates.empty()) throw Error("no candidate methods to measure");
    // The allocator chooses per fused group of a dense layer's seven linears: refused before any work.
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(plan.checkpoint));
    config.requireDense(plan.checkpoint.string(), "a mix of methods (the budget's allocation)");
    if (config.linearAttention.active())  // Qwen3.5: its linear attention's linears are in none of the groups
        throw Error(plan.checkpoint.string() +
                    ": a mix of methods (the budget's allocation) is not offered for "
                    "model_type '" +
                    config.modelType +
                    "' yet: its linear attention's linears are in none of "
                    "Llama's groups");
    if (measure == Sensitivity::OutputError && plan.calibration.empty())
        throw Error("output-error sensitivity needs calibration text");
    if (measure != Sensitivity::OutputError && plan.evaluation.empty())
        throw Error(std::string(sensitivityName(measure)) + " sensitivity needs evaluation text");
    plan.methods = candidates;
    plan.mixed.clear();
    plan.perLayerKl = plan.perLayerKl || measure == Sensitivity::LayerKl;
    plan.perGroupKl = plan.perGroupKl || measure == Sensitivity::GroupKl;
    JobResult result = Job(std::move(plan)).run(progress, cancel);
    SensitivityTable table = sensitivityFromResult(result, measure);
    if (measured) *measured = std::move(result);
    return table;
}

}  // namespace qs::pipeline
