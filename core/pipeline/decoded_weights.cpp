#include "qs/pipeline/decoded_weights.h"

#include <algorithm>
#include <string>
#include <vector>

#include "qs/architectures/module_names.h"
#include "qs/error.h"
#include "qs/formats/serving_quantization.h"
#include "qs/model/attention_linears.h"

#include "stacked_expert.h"

namespace qs::pipeline {

namespace modules = architectures::modules;
namespace {

const std::string kLmHead = "lm_head";

std::string linearPrefix(const model::ModelConfig& c, int layer, std::string_view module) {
    return c.layerPrefix(layer) + std::string(module);
}

bool hasLinear(const formats::LinearReader& reader, const std::string& prefix) {
    return std::ranges::any_of(reader.linears(),
                               [&](const formats::LinearRef& r) { return r.prefix == prefix && r.expert < 0; });
}

// The linears a layer reads outside its experts: the attention's, and a dense layer's MLP.
std::vector<model::LinearShape> plainLinears(const model::ModelConfig& c, int layer) {
    return c.isMoeLayer(layer) ? model::attentionLinears(c, layer) : model::denseLayerLinears(c, layer);
}

}  // namespace

DecodedWeights::DecodedWeights(io::Checkpoint checkpoint, model::ModelConfig config, formats::DecodeOptions decode)
    : checkpoint_(std::make_unique<const io::Checkpoint>(std::move(checkpoint))),
      config_(std::move(config)),
      reader_(std::make_unique<const formats::LinearReader>(*checkpoint_, decode)) {
    if (!reader_->format().decodable)
        throw Error(checkpoint_->root().string() + ": cannot decode its " +
                    std::string(formats::formatName(format().format)) + " layers: " + format().whyNot);
    // A tied lm_head is the embedding, which stays dense in every format read here.
    quantizedLmHead_ = !config_.tieWordEmbeddings && hasLinear(*reader_, kLmHead) &&
                       reader_->codecOf(formats::LinearRef{kLmHead, -1}).name() != "dense";
    dense_ = std::make_unique<const model::CheckpointWeights>(
        *checkpoint_, config_, model::CheckpointWeights::Options{.linears = false, .lmHead = !quantizedLmHead_});
    requireLinears();
}

void DecodedWeights::requireLinears() const {
    for (int layer = 0; layer < config_.numLayers; ++layer)
        for (const std::string& module : storedLinears(layer))
            if (!hasLinear(*reader_, linearPrefix(config_, layer, module)))
                throw Error(checkpoint_->root().string() + ": no linear layer " + linearPrefix(config_, layer, module) +
                            " that the " + std::string(formats::formatName(format().format)) + " reader can decode");
}

// The linears decoder layer `layer` stores: the attention's and the MLP's (fused ones under their own name)
// or, in a sparse MoE layer, the attention's, the router, every expert's gate, up and down and the shared
// expert's.
std::vector<std::string> DecodedWeights::storedLinears(int layer) const {
    std::vector<std::string> modules;
    for (const model::LinearShape& l : plainLinears(config_, layer)) {
        const std::string stored = fusedOwner(l.module).empty() ? l.module : fusedOwner(l.module);
        if (std::ranges::find(modules, stored) == modules.end()) modules.push_back(stored);
    }
    if (config_.isLinearAttentionLayer(layer))  // Qwen3.5: kept dense, as a router
        for (const char* module : {modules::kInProjB, modules::kInProjA}) modules.emplace_back(module);
    if (!config_.isMoeLayer(layer)) return modules;
    const model::MoeNames& names = config_.moe.names;
    modules.push_back(names.router());
    if (config_.moe.sharedExpertGate) modules.push_back(names.sharedExpertGate());
    if (config_.moe.stackedExperts)
        return modules;  // gpt-oss: one tensor per kind, decoded per expert (decodeStackedExpert)
    for (int e = 0; e < config_.moe.numExperts; ++e)
        for (const std::string& part : {names.gate, names.up, names.down}) modules.push_back(names.expert(e) + part);
    if (config_.moe.sharedExpertIntermediateSize > 0)
        for (const std::string& part : {names.gate, names.up, names.down})
            modules.push_back(names.sharedExpert() + part);
    return modules;
}

// The fused projection the checkpoint stores `module` in (Phi-3's qkv_proj for q_proj), "" when apart.
std::string DecodedWeights::fusedOwner(std::string_view module) const {
    for (const auto& f : config_.fusedProjections())
        for (const auto& part : f.parts)
            if (part.first == module) return f.fused;
    return "";
}

model::Linear DecodedWeights::decodeLinear(int layer, std::string_view module, std::int64_t out,
                                           std::int64_t in) const {
    const std::string prefix = linearPrefix(config_, layer, module);
    formats::DecodedLinear decoded = reader_->decode(prefix);
    if (decoded.weight.rows() != out || decoded.weight.cols() != in)
        throw Error(checkpoint_->root().string() + ": " + prefix + " decodes to [" +
                    std::to_string(decoded.weight.rows()) + ", " + std::to_string(decoded.weight.cols()) +
                    "], the config implies [" + std::to_string(out) + ", " + std::to_string(in) + "]");
    model::Linear linear;
    const bool nvfp4 = decoded.quantized && decoded.parts.method == quant::Method::Nvfp4;
    const formats::ServingQuantization serving =
        formats::readServingQuantization(*checkpoint_, format(), prefix, nvfp4);
    linear.input = serving.input;
    linear.cacheScale = serving.cacheScale;
    linear.weight = std::move(decoded.weight);
    if (!decoded.bias.empty())
        linear.bias = Eigen::Map<const VectorF>(decoded.bias.data(), Eigen::Index(decoded.bias.size()));
    return linear;
}

void DecodedWeights::requireShape(const model::Linear& l, const std::string& module, int expert, std::int64_t out,
                                  std::int64_t in) const {
    if (l.weight.rows() != out || l.weight.cols() != in || l.bias.size() != out)
        throw Error(checkpoint_->root().string() + ": expert " + std::to_string(expert) + " of " + module +
                    " decodes to [" + std::to_string(l.weight.rows()) + ", " + std::to_string(l.weight.cols()) +
                    "] with " + std::to_string(l.bias.size()) + " biases, the config implies [" + std::to_string(out) +
                    ", " + std::to_string(in) + "]");
}

// A sparse MoE layer's router and experts, decoded (the router is dense in every export).
void DecodedWeights::decodeExperts(int index, model::LayerWeights& weights) const {
    const model::MoeConfig& moe = config_.moe;
    const std::int64_t h = config_.hiddenSize, width = moe.expertIntermediateSize;
    weights.moeNames = moe.names;
    weights.router = decodeLinear(index, moe.names.router(), moe.numExperts, h);
    weights.experts.resize(static_cast<std::size_t>(moe.numExperts));
    if (moe.stackedExperts) {  // gpt-oss: gate holds gate_up_proj ([2I, hidden]), up stays empty
        const std::string x = config_.layerPrefix(index) + moe.names.experts();
        for (int e = 0; e < moe.numExperts; ++e) {
            model::Expert& expert = weights.experts[static_cast<std::size_t>(e)];
            expert.gate = decodeStackedExpert(*checkpoint_, *reader_, x + moe.names.gate, moe.numExperts, e);
            expert.down = decodeStackedExpert(*checkpoint_, *reader_, x + moe.names.down, moe.numExperts, e);
            requireShape(expert.gate, x + moe.names.gate, e, 2 * width, h);
            requireShape(expert.down, x + moe.names.down, e, h, width);
        }
        return;
    }
    for (int e = 0; e < moe.numExperts; ++e) {
        const std::string x = moe.names.expert(e);
        model::Expert& expert = weights.experts[static_cast<std::size_t>(e)];
        expert.gate = decodeLinear(index, x + moe.names.gate, width, h);
        expert.up = decodeLinear(index, x + moe.names.up, width, h);
        expert.down = decodeLinear(index, x + moe.names.down, h, width);
    }
    if (moe.sharedExpertGate) weights.sharedExpertGate = decodeLinear(index, moe.names.sharedExpertGate(), 1, h);
    if (moe.sharedExpertIntermediateSize > 0) {  // GLM's shared expert
        const std::string x = moe.names.sharedExpert();
        const std::int64_t shared = moe.sharedExpertIntermediateSize;
        weights.sharedExpert.gate = decodeLinear(index, x + moe.names.gate, shared, h);
        weights.sharedExpert.up = decodeLinear(index, x + moe.names.up, shared, h);
        weights.sharedExpert.down = decodeLinear(index, x + moe.names.down, h, shared);
    }
}

model::LayerWeights DecodedWeights::layer(int index) const {
    model::LayerWeights weights = dense_->layer(index);  // norms; the linears are left empty
    if (config_.isMoeLayer(index)) decodeExperts(index, weights);
    // A fused projection decodes once; its parts are its rows in order.
    for (const auto& f : config_.fusedProjections()) {
        std::int64_t rows = 0;
        for (const auto& part : f.parts) rows += part.second;
        const model::Linear fused = decodeLinear(index, f.fused, rows, config_.hiddenSize);
        std::int64_t begin = 0;
        for (const auto& [module, partRows] : f.parts) {
            model::Linear& l = weights.linear(module);
            l.weight = fused.weight.middleRows(begin, partRows);
            if (fused.bias.size() > 0) l.bias = fused.bias.segment(begin, partRows);
            l.input = fused.input;
            begin += partRows;
        }
    }
    if (weights.isDeltaNet()) {  // Qwen3.5's dense in_proj_b / in_proj_a
        const int heads = config_.linearAttention.numValueHeads;
        weights.deltaNet.inProjB = decodeLinear(index, modules::kInProjB, heads, config_.hiddenSize);
        weights.deltaNet.inProjA = decodeLinear(index, modules::kInProjA, heads, config_.hiddenSize);
    }
    for (const model::LinearShape& l : plainLinears(config_, index)) {
        if (fusedOwner(l.module).empty()) weights.linear(l.module) = decodeLinear(index, l.module, l.out, l.in);
        if (l.bias && weights.linear(l.module).bias.size() == 0)
            throw Error(checkpoint_->root().string() + ": " + linearPrefix(config_, index, l.module) +
                        " has no bias, which the config announces");
    }
    return weights;
}

MatrixF DecodedWeights::lmHead(const MatrixF& normedHidden, const model::LayerMath& math) const {
    if (!quantizedLmHead_) return dense_->lmHead(normedHidden, math);
    std::call_once(lmHeadOnce_, [&] {
        MatrixF w = reader_->decodeF32(kLmHead);
        if (w.rows() != config_.vocabSize || w.cols() != config_.hiddenSize)
            throw Error(checkpoint_->root().string() + ": lm_head decodes to [" + std::to_string(w.rows()) + ", " +
                        std::to_string(w.cols()) + "], the config implies [" + std::to_string(config_.vocabSize) +
                        ", " + std::to_string(config_.hiddenSize) + "]");
        lmHeadWeight_ = std::move(w);
    });
    return math.product(normedHidden, lmHeadWeight_);
}

}  // namespace qs::pipeline
