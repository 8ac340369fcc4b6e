#include "qs/pipeline/layer_statistics.h"

#include <algorithm>
#include <set>

#include "qs/error.h"

namespace qs::pipeline {

LayerStatistics::LayerStatistics(const Backend* backend, quant::GramInputs inputs)
    : backend_(backend), gramInputs_(inputs) {
    static const std::shared_ptr<Backend> cpu = makeCpuBackend();
    if (!backend_) backend_ = cpu.get();
}

model::LinearInputHook LayerStatistics::hook() {
    return [this](const model::LinearInput& input) { add(input); };
}

namespace {

void appendRowMaxAbs(const MatrixF& x, std::vector<float>& out) {
    const VectorF rowMax = x.cwiseAbs().rowwise().maxCoeff();
    out.insert(out.end(), rowMax.data(), rowMax.data() + rowMax.size());
}

}  // namespace

PairedInputHook LayerStatistics::pairedHook() {
    return [this](const model::LinearInput& input, const MatrixF& fullPrecision) { addPaired(input, fullPrecision); };
}

model::KeyValueHook LayerStatistics::keyValueHook() {
    return [this](const model::KeyValues& kv) {
        appendRowMaxAbs(kv.keys, keyTokenMaxAbs_);
        appendRowMaxAbs(kv.values, valueTokenMaxAbs_);
    };
}

void LayerStatistics::add(const model::LinearInput& input) {
    if (input.modules.empty()) return;
    auto found = inputs_.find(input.modules.front());
    std::shared_ptr<InputStatistics> stats;
    if (found == inputs_.end()) {
        stats = std::make_shared<InputStatistics>(input.x.cols(), *backend_, gramInputs_);
        for (auto module : input.modules) {
            inputs_.emplace(std::string(module), stats);
            stats->modules.emplace_back(module);
        }
    } else {
        stats = found->second;
    }
    for (std::size_t i = 0; i < input.modules.size(); ++i) {
        const std::int64_t routed = input.routedPerModule.empty() ? input.routedTokens : input.routedPerModule[i];
        if (routed >= 0) routed_[std::string(input.modules[i])] += routed;
    }
    if (input.x.rows() == 0) return;  // an expert no token was routed to: counted, nothing to accumulate
    stats->hessian->add(input.x);
    stats->maxAbs = stats->maxAbs.cwiseMax(input.x.cwiseAbs().colwise().maxCoeff().transpose());
    appendRowMaxAbs(input.x, stats->tokenMaxAbs);
    finalized_.erase(stats.get());
}

// Routed experts see different tokens in the two models (their routers disagree), so their inputs
// do not pair; calibrating every expert on every token shows the same tokens to each.
void LayerStatistics::addPaired(const model::LinearInput& input, const MatrixF& fullPrecision) {
    add(input);
    if (input.modules.empty()) return;
    if (input.routedTokens >= 0 || fullPrecision.rows() != input.x.rows())
        throw Error("GPTAQ pairs each linear's inputs with the full-precision model's over the same tokens, and " +
                    std::string(input.modules.front()) +
                    " saw other tokens in the two models: calibrate every expert (--moe-calibration all)");
    InputStatistics& stats = mutableInput(input.modules.front());
    if (input.x.rows() == 0) return;
    if (!stats.deviation) stats.deviation = std::make_unique<quant::InputDeviationAccumulator>(input.x.cols());
    stats.deviation->add(fullPrecision, input.x);
}

MatrixF LayerStatistics::deviation(std::string_view module) const {
    const InputStatistics& stats = input(module);
    if (!stats.deviation)
        throw Error("no full-precision inputs were paired with " + std::string(module) + "'s (GPTAQ's D)");
    return stats.deviation->finalize();
}

const InputStatistics& LayerStatistics::input(std::string_view module) const {
    auto found = inputs_.find(module);
    if (found == inputs_.end()) throw Error("no calibration inputs were recorded for " + std::string(module));
    return *found->second;
}

std::int64_t LayerStatistics::routedTokens(std::string_view module) const {
    const auto found = routed_.find(module);
    return found == routed_.end() ? -1 : found->second;
}

InputStatistics& LayerStatistics::mutableInput(std::string_view module) {
    return const_cast<InputStatistics&>(static_cast<const LayerStatistics&>(*this).input(module));
}

const MatrixF& LayerStatistics::hessian(std::string_view module) {
    const InputStatistics& stats = input(module);
    if (stats.hessian->released())
        throw Error("the Hessian of " + std::string(module) + "'s input was freed: its modules are done");
    auto cached = finalized_.find(&stats);
    if (cached == finalized_.end()) cached = finalized_.emplace(&stats, stats.hessian->finalize()).first;
    return cached->second;
}

void LayerStatistics::done(std::string_view module) {
    InputStatistics& stats = mutableInput(module);
    if (isDone(module)) return;
    done_.emplace(module);
    if (++stats.done < stats.modules.size()) return;
    finalized_.erase(&stats);
    if (!stats.hessian->released()) stats.hessian->discard();
    stats.deviation.reset();
}

bool LayerStatistics::lastOfInput(std::string_view module) const {
    const InputStatistics& stats = input(module);
    return !isDone(module) && stats.done + 1 == stats.modules.size();
}

MatrixF LayerStatistics::takeHessian(std::string_view module) {
    if (!lastOfInput(module))
        throw Error("takeHessian(" + std::string(module) + "): other modules still read its input");
    InputStatistics& stats = mutableInput(module);
    MatrixF h;
    if (auto cached = finalized_.find(&stats); cached != finalized_.end()) {
        h = std::move(cached->second);
        finalized_.erase(cached);
        stats.hessian->discard();
    } else {
        h = stats.hessian->release();
    }
    done_.emplace(module);
    ++stats.done;
    stats.deviation.reset();  // the caller takes D (deviation()) before H
    return h;
}

std::size_t LayerStatistics::bytes() const {
    std::size_t total = 0;
    std::set<const InputStatistics*> counted;
    for (const auto& [name, stats] : inputs_)
        if (counted.insert(stats.get()).second)
            total += stats->hessian->hostBytes() + (stats->deviation ? stats->deviation->bytes() : 0);
    for (const auto& [stats, h] : finalized_) total += static_cast<std::size_t>(h.size()) * sizeof(float);
    return total;
}

}  // namespace qs::pipeline
