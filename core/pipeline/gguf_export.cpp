// writeGguf: plans every tensor of the model (names, shapes, types) and checks the types before
// anything is written, then decodes, reorders (llama's q/k rows) and encodes one tensor at a time
// into io::GgufWriter.
#include "qs/pipeline/gguf_export.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>

#include <nlohmann/json.hpp>

#include "qs/architectures/gguf_tensor_names.h"
#include "qs/architectures/module_names.h"
#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/formats/config_check.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/gguf_names.h"
#include "qs/io/gguf_writer.h"
#include "qs/io/json_file.h"
#include "qs/io/llama_ftype.h"
#include "qs/io/shape_text.h"
#include "qs/io/tensor_name.h"
#include "qs/model/attention_linears.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/model/layer_weights.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/model_checkpoint.h"
#include "qs/quant/ggml_encode.h"

#include "gguf_expressible.h"
#include "gguf_model_metadata.h"
#include "gguf_value_heads.h"
#include "stacked_expert.h"

namespace qs::pipeline {

namespace modules = architectures::modules;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct PlannedTensor {
    GgufTensorChoice choice;
    io::GgmlType type = io::GgmlType::F32;
    std::string linearPrefix;                 // the linear whose weight this is, decoded through formats; "" otherwise
    std::vector<std::string> stackedLinears;  // experts stacked into one [E, out, in] tensor, in order
    std::vector<std::string> stackedBiases;   // their biases (a gpt-oss GGUF read back), stacked into one [E, out]
    bool keepF32 = false;  // a MoE router: dense in F32 whatever the chooser says, as llama.cpp's converter keeps it
    // gpt-oss's experts, stacked in one tensor "<block>.experts.<module>" (or its MXFP4 blocks): which of
    // the rows of each expert's [out, in] weight (or its bias) this GGUF tensor holds.
    struct StackedSlice {
        std::string module;        // "...mlp.experts.gate_up_proj": the stacked tensor, or the linear the codec decodes
        std::string expertPrefix;  // "...mlp.experts.": with e and "." + linear, the expert's linear a Job quantized
        std::string linear;        // "gate_up_proj"
        int experts = 0;
        int rowParity = -1;  // 0: even rows (gate), 1: odd rows (up); -1: every row
        bool bias = false;
    };
    std::optional<StackedSlice> stackedSlice;
    // DeepSeek's kv_b_proj [heads * (nope + v), kv_lora_rank] as llama.cpp's deepseek2 reads it (its converter's
    // split): attn_k_b [heads, kv_lora_rank, nope] holds each head's key rows transposed, attn_v_b
    // [heads, v, kv_lora_rank] each head's value rows.
    struct LatentSplit {
        std::string linear;  // "...self_attn.kv_b_proj"
        int heads = 0, nope = 0, v = 0;
        bool key = false;
    };
    std::optional<LatentSplit> latentSplit;
    bool zeros = false;        // llama.cpp needs it and the checkpoint lacks it: zeros (GLM's correction bias)
    float addend = 0.0f;       // added to every value: Gemma's norms, stored as 1 + w (convert_hf_to_gguf)
    int interleavedHeads = 0;  // llama q/k: reorder rows as llama.cpp's converter does
    // Qwen3.5's linear attention as llama.cpp's converter writes it: value heads tiled (gguf_value_heads.h), A_log
    // as -exp(A_log).
    std::optional<ValueHeadOrder> valueHeads;
    bool negativeExp = false;
    std::vector<std::int64_t> squeezedFrom;  // the checkpoint's shape when it differs by unit dims (conv1d)
};

bool storesPlainly(io::GgmlType t) {
    return t == io::GgmlType::F32 || t == io::GgmlType::F16 || t == io::GgmlType::BF16;
}

class Planner {
public:
    // `checkpoint` (may be null) adds the biases it stores that the config does not announce.
    Planner(const io::Checkpoint* checkpoint, const model::ModelConfig& config, const architectures::Family& family)
        : checkpoint_(checkpoint),
          config_(config),
          names_(architectures::textFamilyOf(family)),
          permuteQk_(family.ggufPermutesQk) {}

    std::vector<PlannedTensor> plan() {
        const std::int64_t h = config_.hiddenSize, q = config_.qDim(), kv = config_.kvDim(),
                           ff = config_.intermediateSize;
        const model::Architecture& arch = config_.arch;
        add(arch.tensorPrefix + "embed_tokens.weight", {config_.vocabSize, h});
        for (int layer = 0; layer < config_.numLayers; ++layer) {
            const std::string p = config_.layerPrefix(layer);
            norm(p + arch.inputNorm + ".weight", h);
            if (config_.isLinearAttentionLayer(layer)) {
                gatedDeltaNet(p);
            } else if (config_.mla.active()) {
                latentAttention(p);
            } else if (!arch.fusedQkv.empty()) {  // Phi-3: attn_qkv holds q, k, v rows as the checkpoint does
                linear(p + arch.fusedQkv, q + 2 * kv, h, config_.qkvBias, 0);
            } else {
                linear(p + modules::kQProj, config_.attentionOutputGate ? 2 * q : q, h, config_.qkvBias,
                       permuteQk_ ? config_.numHeads : 0);
                linear(p + modules::kKProj, kv, h, config_.qkvBias, permuteQk_ ? config_.numKvHeads : 0);
                linear(p + modules::kVProj, kv, h, config_.qkvBias, 0);
            }
            if (!config_.mla.active() && !config_.isLinearAttentionLayer(layer))
                linear(p + modules::kOProj, h, q, config_.outputBias, 0);
            if (config_.qkNorm && !config_.isLinearAttentionLayer(layer)) {
                norm(p + modules::kQNorm + ".weight", config_.headDim);
                norm(p + modules::kKNorm + ".weight", config_.headDim);
            }
            if (arch.attentionSinks) addAs(p + modules::kSinks, ggufNameOf(p + modules::kSinks), {config_.numHeads});
            // llama.cpp names the norms by role, each family as its table says (Family::ggufNames).
            if (!arch.attentionOutputNorm.empty()) norm(p + arch.attentionOutputNorm + ".weight", h);
            norm(p + arch.preMlpNorm + ".weight", h);
            if (!arch.mlpOutputNorm.empty()) norm(p + arch.mlpOutputNorm + ".weight", h);
            if (config_.isMoeLayer(layer)) {
                experts(layer);
                continue;
            }
            if (!arch.fusedGateUp.empty()) {  // Phi-3: llama.cpp's ffn_up holds gate then up (its swiglu splits it)
                if (config_.mlpBias) throw Error(arch.fusedGateUp + ": a biased fused MLP has no GGUF name here");
                addAs(p + arch.fusedGateUp + ".weight", ggufNameOf(p + arch.fusedGateUp + ".weight"), {2 * ff, h},
                      p + arch.fusedGateUp);
            } else {
                linear(p + modules::kGateProj, ff, h, config_.mlpBias, 0);
                linear(p + modules::kUpProj, ff, h, config_.mlpBias, 0);
            }
            linear(p + modules::kDownProj, h, ff, config_.mlpBias, 0);
        }
        norm(arch.tensorPrefix + "norm.weight", h);
        if (!config_.tieWordEmbeddings)
            add(arch.lmHead, {config_.vocabSize, h},
                arch.lmHead.substr(0, arch.lmHead.size() - std::string_view(".weight").size()));
        return std::move(planned_);
    }

private:
    // A norm of the model: GGUF stores (normOffset + w), what llama.cpp's RMSNorm multiplies by.
    void norm(const std::string& name, std::int64_t size) {
        addAs(name, ggufNameOf(name), {size}).addend = config_.arch.normOffset;
    }

    // The GGUF name of a tensor of the text decoder, whatever prefix its tower has.
    std::string ggufNameOf(const std::string& name) const {
        if (name == config_.arch.lmHead) return "output.weight";
        const std::string& prefix = config_.arch.tensorPrefix;
        const auto gguf = architectures::ggufTensorName(
            &names_, name.starts_with(prefix) ? "model." + name.substr(prefix.size()) : name);
        if (!gguf) throw Error("'" + name + "' has no GGUF name for llama.cpp's " + std::string(names_.ggufArch));
        return *gguf;
    }

    void add(const std::string& name, std::vector<std::int64_t> shape, std::string linearPrefix = "", int heads = 0) {
        PlannedTensor t;
        t.choice.name = name;
        t.choice.ggufName = ggufNameOf(name);
        t.choice.naming = io::parseTensorName(name);
        t.choice.shape = std::move(shape);
        t.linearPrefix = std::move(linearPrefix);
        t.interleavedHeads = heads;
        planned_.push_back(std::move(t));
    }

    // Qwen3.5's Gated DeltaNet under qwen35's names, transformed as llama.cpp's converter does: conv1d squeezed
    // to [channels, kernel], A_log as -exp(A_log), the gated norm as it is (not 1 + w), value heads tiled.
    void gatedDeltaNet(const std::string& p) {
        const model::LinearAttentionConfig& la = config_.linearAttention;
        const std::int64_t h = config_.hiddenSize, heads = la.numValueHeads;
        const int perKey = la.numValueHeads / la.numKeyHeads;
        const auto order = [&](PlannedTensor& t, int block, std::int64_t offset, bool columns) {
            if (perKey > 1) t.valueHeads = ValueHeadOrder{la.numKeyHeads, perKey, block, offset, columns};
        };
        for (const model::LinearShape& l : model::attentionLinears(config_, io::parseTensorName(p + "x").layer)) {
            linear(p + l.module, l.out, l.in, false, 0);
            if (l.module == modules::kInProjQkv) order(planned_.back(), la.valueHeadDim, 2 * la.keyDim(), false);
            if (l.module == modules::kInProjZ) order(planned_.back(), la.valueHeadDim, 0, false);
            if (l.module == modules::kDeltaOutProj) order(planned_.back(), la.valueHeadDim, 0, true);
        }
        for (const char* module : {modules::kInProjB, modules::kInProjA}) {  // dense in the Job, as a router
            PlannedTensor& t =
                addAs(p + module + ".weight", ggufNameOf(p + module + ".weight"), {heads, h}, p + module);
            t.keepF32 = true;
            order(t, 1, 0, false);
        }
        const std::string conv = p + modules::kDeltaConv + ".weight";
        PlannedTensor& c = addAs(conv, ggufNameOf(conv), {la.convDim(), la.convKernel});
        c.keepF32 = true;
        c.squeezedFrom = {la.convDim(), 1, la.convKernel};
        order(c, la.valueHeadDim, 2 * la.keyDim(), false);
        PlannedTensor& a = addAs(p + modules::kDeltaALog, ggufNameOf(p + modules::kDeltaALog), {heads});
        a.negativeExp = true;
        order(a, 1, 0, false);
        order(addAs(p + modules::kDeltaDtBias, ggufNameOf(p + modules::kDeltaDtBias), {heads}), 1, 0, false);
        addAs(p + modules::kDeltaNorm + ".weight", ggufNameOf(p + modules::kDeltaNorm + ".weight"), {la.valueHeadDim});
    }

    // DeepSeek's latent attention: its linears and the latents' norms under deepseek2's names, kv_b_proj split.
    void latentAttention(const std::string& p) {
        const model::LatentAttention& a = config_.mla;
        for (const model::LinearShape& l : model::attentionLinears(config_)) {
            if (l.module != modules::kKvBProj) {
                linear(p + l.module, l.out, l.in, l.bias, 0);
                continue;
            }
            const std::string blk = "blk." + std::to_string(io::parseTensorName(p + l.module).layer) + ".";
            const std::int64_t heads = config_.numHeads;
            addAs(p + l.module + ".weight[k_b]", blk + "attn_k_b.weight", {heads, a.kvLoraRank, a.qkNopeHeadDim})
                .latentSplit =
                PlannedTensor::LatentSplit{p + l.module, config_.numHeads, a.qkNopeHeadDim, a.vHeadDim, true};
            addAs(p + l.module + ".weight[v_b]", blk + "attn_v_b.weight", {heads, a.vHeadDim, a.kvLoraRank})
                .latentSplit =
                PlannedTensor::LatentSplit{p + l.module, config_.numHeads, a.qkNopeHeadDim, a.vHeadDim, false};
        }
        if (a.qLoraRank > 0) norm(p + modules::kQANorm + ".weight", a.qLoraRank);
        norm(p + modules::kKvANorm + ".weight", a.kvLoraRank);
    }

    // A sparse MoE block as llama.cpp's converter writes it: the router as blk.N.ffn_gate_inp and each
    // of the experts' projections stacked into one 3-D tensor blk.N.ffn_{gate,up,down}_exps.
    void experts(int layer) {
        const model::MoeConfig& moe = config_.moe;
        const std::int64_t h = config_.hiddenSize, ff = moe.expertIntermediateSize, e = moe.numExperts;
        const std::string p = config_.layerPrefix(layer);
        const std::string blk = "blk." + std::to_string(layer) + ".";
        const std::string router = blk + std::string(architectures::kGgufRouter);
        addAs(p + moe.names.router() + ".weight", router + ".weight", {e, h}, p + moe.names.router()).keepF32 = true;
        // gpt-oss's router (GptOssTopKRouter) always has a bias; the others' only when the checkpoint stores one.
        const bool routerBias = checkpoint_ == nullptr ? moe.stackedExperts
                                                       : checkpoint_->find(p + moe.names.router() + ".bias") != nullptr;
        if (routerBias) addAs(p + moe.names.router() + ".bias", router + ".bias", {e});
        if (moe.scoring == model::RouterScoring::SigmoidGrouped) {  // glm4moe requires exp_probs_b
            const std::string bias = p + moe.names.routerScoreBias();
            addAs(bias, ggufNameOf(bias), {e}).zeros = checkpoint_ != nullptr && checkpoint_->find(bias) == nullptr;
        }
        if (moe.sharedExpertIntermediateSize > 0) sharedExpert(p);
        if (moe.sharedExpertGate) {  // Qwen3.5-MoE: ffn_gate_inp_shexp, dense as the router
            const std::string gate = p + moe.names.sharedExpertGate();
            addAs(gate + ".weight", ggufNameOf(gate + ".weight"), {1, h}, gate).keepF32 = true;
        }
        if (moe.stackedExperts) {
            stackedExperts(layer);
            return;
        }
        const std::array<std::pair<const std::string*, std::string>, 3> parts{
            {{&moe.names.gate, std::string(architectures::kGgufExpertsGate)},
             {&moe.names.up, std::string(architectures::kGgufExpertsUp)},
             {&moe.names.down, std::string(architectures::kGgufExpertsDown)}}};
        for (const auto& [module, gguf] : parts) {
            const bool down = module == &moe.names.down;
            PlannedTensor& t = addAs(p + moe.names.experts() + *module + ".weight", blk + gguf + ".weight",
                                     {e, down ? h : ff, down ? ff : h});
            for (int x = 0; x < moe.numExperts; ++x) t.stackedLinears.push_back(p + moe.names.expert(x) + *module);
            // Per-expert biases (gpt-oss read back from its GGUF) go back into the stacked bias they came from.
            if (checkpoint_ == nullptr || checkpoint_->find(p + moe.names.expert(0) + *module + ".bias") == nullptr)
                continue;
            PlannedTensor& b =
                addAs(p + moe.names.experts() + *module + ".bias", blk + gguf + ".bias", {e, down ? h : ff});
            for (int x = 0; x < moe.numExperts; ++x)
                b.stackedBiases.push_back(p + moe.names.expert(x) + *module + ".bias");
        }
    }

    // GLM's shared expert: ffn_{gate,up,down}_shexp (the family's names).
    void sharedExpert(const std::string& p) {
        const model::MoeConfig& moe = config_.moe;
        const std::int64_t h = config_.hiddenSize, width = moe.sharedExpertIntermediateSize;
        const std::string x = p + moe.names.sharedExpert();
        linear(x + moe.names.gate, width, h, false, 0);
        linear(x + moe.names.up, width, h, false, 0);
        linear(x + moe.names.down, h, width, false, 0);
    }

    // gpt-oss's stacked experts as llama.cpp's converter splits them: gate_up_proj's interleaved rows into
    // ffn_gate_exps (even) and ffn_up_exps (odd), each with its bias, and down_proj with its bias.
    void stackedExperts(int layer) {
        const model::MoeConfig& moe = config_.moe;
        const std::int64_t h = config_.hiddenSize, ff = moe.expertIntermediateSize, e = moe.numExperts;
        const std::string x = config_.layerPrefix(layer) + moe.names.experts();
        const std::string blk = "blk." + std::to_string(layer) + ".";
        const auto slice = [&](const std::string& module, std::string_view gguf, std::vector<std::int64_t> shape,
                               int parity, bool bias) {
            PlannedTensor& t = addAs(x + module + (bias ? "_bias" : "") +
                                         (parity == 1   ? "[up]"
                                          : parity == 0 ? "[gate]"
                                                        : ""),
                                     blk + std::string(gguf) + (bias ? ".bias" : ".weight"), std::move(shape));
            t.stackedSlice = PlannedTensor::StackedSlice{x + module, x, module, moe.numExperts, parity, bias};
        };
        using architectures::kGgufExpertsDown, architectures::kGgufExpertsGate, architectures::kGgufExpertsUp;
        slice(moe.names.gate, kGgufExpertsGate, {e, ff, h}, 0, false);
        slice(moe.names.gate, kGgufExpertsGate, {e, ff}, 0, true);
        slice(moe.names.gate, kGgufExpertsUp, {e, ff, h}, 1, false);
        slice(moe.names.gate, kGgufExpertsUp, {e, ff}, 1, true);
        slice(moe.names.down, kGgufExpertsDown, {e, h, ff}, -1, false);
        slice(moe.names.down, kGgufExpertsDown, {e, h}, -1, true);
    }

    PlannedTensor& addAs(const std::string& name, const std::string& ggufName, std::vector<std::int64_t> shape,
                         std::string linearPrefix = "") {
        PlannedTensor t;
        t.choice.name = name;
        t.choice.ggufName = ggufName;
        t.choice.naming = io::parseTensorName(name);
        t.choice.shape = std::move(shape);
        t.linearPrefix = std::move(linearPrefix);
        planned_.push_back(std::move(t));
        return planned_.back();
    }

    // The weight, and the bias when the config announces one or the checkpoint stores it.
    void linear(const std::string& prefix, std::int64_t out, std::int64_t in, bool bias, int heads) {
        add(prefix + ".weight", {out, in}, prefix, heads);
        if (bias || (checkpoint_ != nullptr && checkpoint_->find(prefix + ".bias") != nullptr))
            add(prefix + ".bias", {out}, "", heads);
    }

    const io::Checkpoint* checkpoint_;
    const model::ModelConfig& config_;
    const architectures::Family& names_;  // whose GGUF names the tensors take: a VLM's text family
    bool permuteQk_;
    std::vector<PlannedTensor> planned_;
};

using io::shapeText;

void checkType(const PlannedTensor& t, const fs::path& destination) {
    const auto& traits = io::ggmlTypeTraits(t.type);
    const std::int64_t row = t.choice.shape.back();
    std::string why;
    if (!storesPlainly(t.type) && !quant::ggmlEncodes(t.type))
        why = "QuantScope cannot encode it";
    else if (row % traits.blockElements != 0)
        why = "its rows of " + std::to_string(row) + " are not whole blocks of " + std::to_string(traits.blockElements);
    if (!why.empty())
        throw Error(destination.string() + ": tensor '" + t.choice.name + "' " + shapeText(t.choice.shape) +
                    " cannot be stored as " + std::string(traits.name) + ": " + why);
}

// Row r of llama.cpp's order holds row h*d + a*d/2 + j of Hugging Face's, r = h*d + 2j + a. Rows
// move whole, so this serves f32 values and encoded blocks (a block never spans rows) alike.
template <typename Element>
std::vector<Element> interleaveRows(const Element* values, std::size_t size, std::int64_t rows, int heads) {
    const std::size_t rowSize = size / static_cast<std::size_t>(rows);
    const std::int64_t headRows = rows / heads, half = headRows / 2;
    std::vector<Element> out(size);
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t head = r / headRows, within = r % headRows;
        const std::int64_t source = head * headRows + (within % 2) * half + within / 2;
        std::copy_n(values + static_cast<std::size_t>(source) * rowSize, rowSize,
                    out.begin() + static_cast<std::ptrdiff_t>(r * rowSize));
    }
    return out;
}

// An encoded linear must be blocks of the planned tensor's shape.
const quant::QuantizedLinear& checkedEncoded(const quant::QuantizedLinear& q, const PlannedTensor& t,
                                             const fs::path& destination) {
    if (q.codeKind != quant::CodeKind::GgmlBlocks || q.rows != t.choice.shape[0] || q.cols != t.choice.shape[1])
        throw Error(destination.string() + ": the quantized '" + t.linearPrefix + "' is not ggml blocks of shape " +
                    shapeText(t.choice.shape));
    return q;
}

// The blocks as the file stores them (llama's q/k rows reordered).
std::vector<std::byte> storedBlocks(const quant::QuantizedLinear& q, int heads) {
    const auto* bytes = reinterpret_cast<const std::byte*>(q.blocks.data());
    if (heads > 0) return interleaveRows(bytes, q.blocks.size(), q.rows, heads);
    return {bytes, bytes + q.blocks.size()};
}

// A Job's linear of Qwen3.5's linear attention, its value heads tiled as llama.cpp's converter writes them.
std::vector<std::byte> jobBlocksTiled(const PlannedTensor& t, const GgufExportOptions& options,
                                      const quant::QuantizedLinear& header) {
    if (!options.completeLinear) return tiledBlocks(storedBlocks(header, 0), header, *t.valueHeads);
    const auto q = options.completeLinear(t.linearPrefix);
    return tiledBlocks(storedBlocks(*q, 0), *q, *t.valueHeads);
}

// The experts' linears a Job encoded for a stacked tensor, in expert order (their headers when the result
// is on disk); empty when the Job left them to the chooser. The rows each expert gives the tensor.
struct EncodedExperts {
    std::vector<std::string> prefixes;
    std::vector<const quant::QuantizedLinear*> linears;
};

EncodedExperts encodedExperts(const PlannedTensor& t, const GgufExportOptions& options, const fs::path& destination) {
    std::vector<std::string> prefixes = t.stackedLinears;
    if (t.stackedSlice && !t.stackedSlice->bias)
        for (int e = 0; e < t.stackedSlice->experts; ++e)
            prefixes.push_back(t.stackedSlice->expertPrefix + std::to_string(e) + "." + t.stackedSlice->linear);
    EncodedExperts out;
    for (const std::string& prefix : prefixes)
        if (const auto it = options.encodedLinears.find(prefix); it != options.encodedLinears.end())
            out.linears.push_back(it->second.get());
    if (out.linears.empty()) return out;
    if (out.linears.size() != prefixes.size())
        throw Error(destination.string() + ": " + std::to_string(out.linears.size()) + " of the " +
                    std::to_string(prefixes.size()) + " experts of '" + t.choice.name +
                    "' are quantized, and the GGUF file stores them as one tensor");
    const std::int64_t rows = t.choice.shape[1] * (t.stackedSlice && t.stackedSlice->rowParity >= 0 ? 2 : 1);
    for (std::size_t e = 0; e < prefixes.size(); ++e) {
        const quant::QuantizedLinear& q = *out.linears[e];
        if (q.codeKind != quant::CodeKind::GgmlBlocks || q.rows != rows || q.cols != t.choice.shape[2] ||
            q.ggmlType != out.linears[0]->ggmlType)
            throw Error(destination.string() + ": the quantized '" + prefixes[e] + "' is not ggml blocks of shape [" +
                        std::to_string(rows) + ", " + std::to_string(t.choice.shape[2]) + "] in " +
                        std::string(io::ggmlTypeTraits(out.linears[0]->ggmlType).name) +
                        ", as the other experts of its stacked tensor " + shapeText(t.choice.shape));
    }
    out.prefixes = std::move(prefixes);
    return out;
}

// The stacked tensor's bytes: each expert's blocks after the other (of gpt-oss's gate_up_proj, its even or
// odd rows: a block never spans rows).
std::vector<std::byte> stackedBlocks(const PlannedTensor& t, const EncodedExperts& experts,
                                     const GgufExportOptions& options) {
    const int parity = t.stackedSlice ? t.stackedSlice->rowParity : -1;
    std::vector<std::byte> bytes;
    for (std::size_t e = 0; e < experts.prefixes.size(); ++e) {
        const auto complete = options.completeLinear ? options.completeLinear(experts.prefixes[e]) : nullptr;
        const quant::QuantizedLinear& q = complete ? *complete : *experts.linears[e];
        const auto* blocks = reinterpret_cast<const std::byte*>(q.blocks.data());
        const std::size_t rowBytes = io::ggmlRowBytes(q.ggmlType, q.cols);
        for (std::int64_t r = 0; r < q.rows; ++r)
            if (parity < 0 || r % 2 == parity)
                bytes.insert(bytes.end(), blocks + static_cast<std::size_t>(r) * rowBytes,
                             blocks + static_cast<std::size_t>(r + 1) * rowBytes);
    }
    return bytes;
}

std::vector<std::byte> encode(io::GgmlType type, const std::vector<float>& values, std::int64_t row) {
    const std::size_t rows = row == 0 ? 0 : values.size() / static_cast<std::size_t>(row);
    std::vector<std::byte> bytes(rows * io::ggmlRowBytes(type, row));
    if (type == io::GgmlType::F32)
        std::memcpy(bytes.data(), values.data(), bytes.size());
    else if (type == io::GgmlType::F16)
        io::convertFromF32(io::DType::F16, values.data(), values.size(), bytes.data());
    else if (type == io::GgmlType::BF16)
        io::convertFromF32(io::DType::BF16, values.data(), values.size(), bytes.data());
    else {
        const std::size_t rowBytes = io::ggmlRowBytes(type, row);
#pragma omp parallel for schedule(static)
        for (std::int64_t r = 0; r < static_cast<std::int64_t>(rows); ++r)
            quant::ggmlEncodeRow(type, values.data() + r * row,
                                 reinterpret_cast<std::uint8_t*>(bytes.data()) + static_cast<std::size_t>(r) * rowBytes,
                                 row);
    }
    return bytes;
}

std::vector<float> stackedValues(const PlannedTensor& t, const io::Checkpoint& checkpoint,
                                 const formats::LinearReader& reader) {
    const PlannedTensor::StackedSlice& s = *t.stackedSlice;
    std::vector<float> values;
    for (int e = 0; e < s.experts; ++e) {
        const model::Linear l = decodeStackedExpert(checkpoint, reader, s.module, s.experts, e);
        const std::int64_t rows = t.choice.shape[1];
        if (l.weight.rows() != (s.rowParity < 0 ? rows : 2 * rows) ||
            (!s.bias && l.weight.cols() != t.choice.shape[2]) || l.bias.size() != l.weight.rows())
            throw Error(checkpoint.root().string() + ": expert " + std::to_string(e) + " of " + s.module +
                        " decodes to [" + std::to_string(l.weight.rows()) + ", " + std::to_string(l.weight.cols()) +
                        "] with " + std::to_string(l.bias.size()) + " biases, the config implies " +
                        shapeText(t.choice.shape));
        for (std::int64_t r = 0; r < rows; ++r) {
            const Eigen::Index source = s.rowParity < 0 ? r : 2 * r + s.rowParity;
            if (s.bias) {
                values.push_back(l.bias[source]);
            } else {
                const auto row = l.weight.row(source);
                values.insert(values.end(), row.data(), row.data() + row.size());
            }
        }
    }
    return values;
}

// attn_k_b's or attn_v_b's values (PlannedTensor::LatentSplit) from kv_b_proj's [heads * (nope + v), rank].
std::vector<float> latentSplitValues(const PlannedTensor::LatentSplit& s, const MatrixF& kvB) {
    const Eigen::Index rank = kvB.cols(), stride = s.nope + s.v;
    std::vector<float> values;
    values.reserve(static_cast<std::size_t>(s.heads) * static_cast<std::size_t>(s.key ? s.nope : s.v) *
                   static_cast<std::size_t>(rank));
    for (Eigen::Index h = 0; h < s.heads; ++h) {
        if (s.key) {  // [rank, nope]: element (j, i) is key row i's column j
            for (Eigen::Index j = 0; j < rank; ++j)
                for (Eigen::Index i = 0; i < s.nope; ++i) values.push_back(kvB(h * stride + i, j));
        } else {
            for (Eigen::Index i = 0; i < s.v; ++i) {
                const auto row = kvB.row(h * stride + s.nope + i);
                values.insert(values.end(), row.data(), row.data() + row.size());
            }
        }
    }
    return values;
}

// A Job's kv_b_proj for a split tensor: an element-wise type (F32 / F16 / BF16), whose values the split moves
// unchanged, so the file holds what the Job measured. Null when the Job left it to the chooser.
const quant::QuantizedLinear* encodedLatent(const PlannedTensor& t, const GgufExportOptions& options,
                                            const fs::path& destination) {
    const auto it = options.encodedLinears.find(t.latentSplit->linear);
    if (it == options.encodedLinears.end()) return nullptr;
    const quant::QuantizedLinear& q =
        options.completeLinear ? *options.completeLinear(t.latentSplit->linear) : *it->second;
    if (q.codeKind != quant::CodeKind::GgmlBlocks || !storesPlainly(q.ggmlType))
        throw Error(destination.string() + ": the quantized '" + t.latentSplit->linear +
                    "' is not F32, F16 or BF16, which llama.cpp's split of it into attn_k_b and attn_v_b keeps exact");
    return &q;
}

// A tensor that is one tensor of the source (not split, stacked or made up) as the result replaces it.
std::optional<std::vector<float>> replacedValues(const PlannedTensor& t, const GgufExportOptions& options,
                                                 const fs::path& destination) {
    if (!options.replacedValues || t.latentSplit || t.zeros || t.stackedSlice || !t.stackedBiases.empty() ||
        !t.stackedLinears.empty())
        return std::nullopt;
    auto values = options.replacedValues(t.choice.name);
    const std::int64_t size =
        std::accumulate(t.choice.shape.begin(), t.choice.shape.end(), std::int64_t{1}, std::multiplies<>());
    if (values && static_cast<std::int64_t>(values->size()) != size)
        throw Error(destination.string() + ": the result's '" + t.choice.name + "' has " +
                    std::to_string(values->size()) + " values, the config implies " + shapeText(t.choice.shape));
    return values;
}

std::vector<float> valuesOf(const PlannedTensor& t, const io::Checkpoint& checkpoint,
                            const formats::LinearReader& reader, const quant::QuantizedLinear* encoded = nullptr,
                            std::optional<std::vector<float>> replaced = std::nullopt) {
    std::vector<float> values;
    if (replaced) {
        values = std::move(*replaced);
    } else if (t.latentSplit) {
        const MatrixF kvB = encoded ? encoded->dequantize() : reader.decodeF32(t.latentSplit->linear);
        if (kvB.rows() != std::int64_t(t.latentSplit->heads) * (t.latentSplit->nope + t.latentSplit->v))
            throw Error(checkpoint.root().string() + ": " + t.latentSplit->linear + " decodes to " +
                        std::to_string(kvB.rows()) + " rows, the config implies " +
                        std::to_string(t.latentSplit->heads * (t.latentSplit->nope + t.latentSplit->v)));
        values = latentSplitValues(*t.latentSplit, kvB);
    } else if (t.zeros) {
        values.assign(static_cast<std::size_t>(t.choice.shape.back()), 0.0f);
    } else if (t.stackedSlice) {
        values = stackedValues(t, checkpoint, reader);
    } else if (!t.stackedBiases.empty()) {
        for (const std::string& name : t.stackedBiases) {
            const io::TensorView view = checkpoint.tensor(name);
            if (view.shape() != std::vector<std::int64_t>{t.choice.shape[1]})
                throw Error(checkpoint.root().string() + ": tensor '" + name + "' has shape " +
                            shapeText(view.shape()) + ", the config implies [" + std::to_string(t.choice.shape[1]) +
                            "]");
            const std::vector<float> bias = view.toF32();
            values.insert(values.end(), bias.begin(), bias.end());
        }
    } else if (!t.stackedLinears.empty()) {
        for (const std::string& prefix : t.stackedLinears) {
            const MatrixF w = reader.decodeF32(prefix);
            if (w.rows() != t.choice.shape[1] || w.cols() != t.choice.shape[2])
                throw Error(checkpoint.root().string() + ": " + prefix + " decodes to [" + std::to_string(w.rows()) +
                            ", " + std::to_string(w.cols()) + "], the config implies [" +
                            std::to_string(t.choice.shape[1]) + ", " + std::to_string(t.choice.shape[2]) + "]");
            values.insert(values.end(), w.data(), w.data() + w.size());
        }
    } else if (!t.linearPrefix.empty()) {
        const MatrixF w = reader.decodeF32(t.linearPrefix);
        if (w.rows() != t.choice.shape[0] || w.cols() != t.choice.shape[1])
            throw Error(checkpoint.root().string() + ": " + t.linearPrefix + " decodes to [" +
                        std::to_string(w.rows()) + ", " + std::to_string(w.cols()) + "], the config implies " +
                        shapeText(t.choice.shape));
        values.assign(w.data(), w.data() + w.size());
    } else {
        const io::TensorView view = checkpoint.tensor(t.choice.name);
        if (view.shape() != (t.squeezedFrom.empty() ? t.choice.shape : t.squeezedFrom))
            throw Error(checkpoint.fileOf(*checkpoint.find(t.choice.name)).string() + ": tensor '" + t.choice.name +
                        "' has shape " + shapeText(view.shape()) + ", the config implies " + shapeText(t.choice.shape));
        values = view.toF32();
    }
    if (t.addend != 0.0f)
        for (float& v : values) v += t.addend;
    if (t.negativeExp)
        for (float& v : values) v = -std::exp(v);
    if (t.valueHeads) tileValueHeads(values, t.choice.shape, *t.valueHeads);
    return t.interleavedHeads > 0 ? interleaveRows(values.data(), values.size(), t.choice.shape[0], t.interleavedHeads)
                                  : values;
}

// Through the one bounded reader (regular files only, size and depth limits, errors naming the file).
json readJson(const fs::path& path, std::uint64_t maxBytes) {
    return io::readJsonFile(path, io::JsonLimits{.maxBytes = maxBytes});
}

io::GgufMetadata tokenizerMetadata(const io::Checkpoint& checkpoint, const GgufExportOptions& options,
                                   std::int64_t vocabSize) {
    if (const auto& sp = options.sentencePiece)
        return model::ggufTokenizerFromSentencePiece(sp->pieces, sp->bos, sp->eos, sp->addBos);
    const fs::path tokenizerJson = checkpoint.root() / "tokenizer.json",
                   configJson = checkpoint.root() / "tokenizer_config.json";
    if (fs::exists(tokenizerJson))
        return model::ggufTokenizerFromJson(
            readJson(tokenizerJson, io::kMaxTokenizerJsonBytes),
            fs::exists(configJson) ? readJson(configJson, io::kMaxConfigJsonBytes) : json(), vocabSize,
            tokenizerJson.string());
    io::GgufMetadata m;
    if (const io::GgufFile* gguf = checkpoint.gguf())
        for (const auto& [key, value] : gguf->metadata().entries())
            if (key.starts_with("tokenizer.")) m.set(key, value);
    if (m.size() == 0)
        throw Error(checkpoint.root().string() +
                    ": has no tokenizer.json, and llama.cpp needs the tokenizer inside the GGUF "
                    "(pass a SentencePiece vocabulary for a llama2.c model)");
    return m;
}

int commonestMatrixFileType(const std::vector<PlannedTensor>& planned) {
    std::map<io::GgmlType, int> counts;
    for (const auto& t : planned)
        if (t.choice.shape.size() == 2) ++counts[t.type];
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it)
        if (it->second > best->second) best = it;
    return best == counts.end() ? 0 : io::llamaFtypeOfUniform(best->first);
}

// The family of the config, which must have a GGUF architecture.
const architectures::Family& ggufFamilyOf(const model::ModelConfig& config, const std::string& source) {
    const architectures::Family* family = architectures::familyOf(config.modelType);
    if (family == nullptr || family->ggufArch.empty())
        throw Error(source + "model_type '" + config.modelType + "' has no GGUF architecture here");
    return *family;
}

void report(const ProgressCallback& progress, std::size_t done, std::size_t total, const std::string& name) {
    if (progress)
        progress({"export", static_cast<int>(done), static_cast<int>(total), total ? double(done) / double(total) : 1.0,
                  name});
}

}  // namespace

GgufTypeChooser uniformGgufType(io::GgmlType type) {
    return [type](const GgufTensorChoice& t) {
        if (t.shape.size() < 2) return io::GgmlType::F32;
        return t.shape.back() % io::ggmlTypeTraits(type).blockElements == 0 ? type : io::GgmlType::F16;
    };
}

std::vector<GgufTensorChoice> ggufTensorPlan(const model::ModelConfig& config) {
    std::vector<GgufTensorChoice> out;
    for (auto& t : Planner(nullptr, config, ggufFamilyOf(config, "")).plan()) out.push_back(std::move(t.choice));
    // llama_model_loader's weight_name_comparer: by layer (-1 outside the layers), then by name.
    std::stable_sort(out.begin(), out.end(), [](const GgufTensorChoice& a, const GgufTensorChoice& b) {
        const int la = a.naming.layer < 0 ? -1 : a.naming.layer, lb = b.naming.layer < 0 ? -1 : b.naming.layer;
        return la != lb ? la < lb : a.ggufName < b.ggufName;
    });
    return out;
}

std::uint64_t ggufNonLinearBytes(const io::Checkpoint& checkpoint, const model::ModelConfig& config,
                                 const GgufTypeChooser& chooser) {
    const architectures::Family& family = ggufFamilyOf(config, "");
    const auto bytesOf = [](io::GgmlType type, const std::vector<std::int64_t>& shape) {
        const std::int64_t rows = std::accumulate(shape.begin(), shape.end() - 1, std::int64_t{1}, std::multiplies<>());
        return static_cast<std::uint64_t>(rows) * io::ggmlRowBytes(type, shape.back());
    };
    std::uint64_t bytes = 0;
    for (const PlannedTensor& t : Planner(&checkpoint, config, family).plan()) {
        const bool quantizedLinear =
            !t.stackedLinears.empty() || (t.stackedSlice && !t.stackedSlice->bias) || t.latentSplit ||
            (!t.linearPrefix.empty() && !t.keepF32 && t.choice.naming.layer >= 0);  // output is not the result's
        if (!quantizedLinear) bytes += bytesOf(t.keepF32 ? io::GgmlType::F32 : chooser(t.choice), t.choice.shape);
    }
    if (const auto factors = llama3RopeFactors(config)) bytes += factors->size() * sizeof(float);
    for (const auto& [tensor, factors] : longRopeFactors(config)) bytes += factors.size() * sizeof(float);
    return bytes;
}

fs::path writeGguf(const io::Checkpoint& checkpoint, const fs::path& destination, const GgufExportOptions& options,
                   const ProgressCallback& progress, const CancelToken& cancel) {
    model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
    if (options.untieLmHead) config.tieWordEmbeddings = false;
    const architectures::Family& family = ggufFamilyOf(config, checkpoint.configSource().string() + ": ");
    requireGgufExpressible(family, config, checkpoint.configSource().string());
    const formats::LinearReader reader(checkpoint, formats::DecodeOptions{.allowNonFinite = options.allowNonFinite});
    if (!reader.format().decodable)
        throw Error(checkpoint.root().string() + ": its " + std::string(formats::formatName(reader.format().format)) +
                    " layers cannot be decoded: " + reader.format().whyNot);
    // As for a dense export: the written config must describe these tensors, and dense linears are
    // copied without a decode that would check them.
    formats::requireConfigMatchesTensors(checkpoint, reader.format());
    requireFiniteDenseLinears(checkpoint, reader.format(), options.allowNonFinite);

    std::vector<PlannedTensor> planned = Planner(&checkpoint, config, family).plan();
    const GgufTypeChooser chooser = options.chooser ? options.chooser : uniformGgufType(io::GgmlType::F16);
    std::vector<EncodedExperts> experts(planned.size());
    for (std::size_t i = 0; i < planned.size(); ++i) {
        PlannedTensor& t = planned[i];
        const auto encoded = options.encodedLinears.find(t.linearPrefix);
        experts[i] = encodedExperts(t, options, destination);
        const quant::QuantizedLinear* latent = t.latentSplit ? encodedLatent(t, options, destination) : nullptr;
        if (t.valueHeads && encoded != options.encodedLinears.end() &&
            !tilesBlocks(*t.valueHeads, encoded->second->ggmlType))
            throw Error(destination.string() + ": the quantized '" + t.linearPrefix +
                        "' would need its value heads reordered by columns as llama.cpp's converter does (fewer key "
                        "heads than value heads), and a head's " +
                        std::to_string(t.valueHeads->block) + " columns are no whole blocks of " +
                        std::string(io::ggmlTypeTraits(encoded->second->ggmlType).name));
        t.type = latent                                    ? latent->ggmlType
                 : !experts[i].linears.empty()             ? experts[i].linears.front()->ggmlType
                 : encoded != options.encodedLinears.end() ? checkedEncoded(*encoded->second, t, destination).ggmlType
                 : t.keepF32                               ? io::GgmlType::F32
                                                           : chooser(t.choice);
        checkType(t, destination);
    }
    const io::GgufMetadata tokenizer = tokenizerMetadata(checkpoint, options, config.vocabSize);
    const std::string name =
        options.name.empty() ? fs::absolute(checkpoint.root()).lexically_normal().filename().string() : options.name;
    io::GgufMetadata metadata =
        ggufModelMetadata(config, family, name, options.fileType.value_or(commonestMatrixFileType(planned)));
    const bool quantized = std::ranges::any_of(planned, [](const PlannedTensor& t) { return !storesPlainly(t.type); });
    if (quantized) metadata.set("general.quantization_version", io::GgufValue::u32(2));

    const io::GgufWriterOptions writerOptions{.overwrite = options.overwrite};
    io::GgufWriter writer =
        options.measuredBytes ? io::GgufWriter::measuring(writerOptions) : io::GgufWriter(destination, writerOptions);
    for (const auto& [key, value] : metadata.entries()) writer.set(key, value);
    for (const auto& [key, value] : tokenizer.entries()) writer.set(key, value);
    for (const auto& [key, value] : options.extraMetadata.entries()) writer.set(key, value);
    if (const auto factors = llama3RopeFactors(config))
        writer.addTensor("rope_freqs.weight", io::GgmlType::F32, {static_cast<std::int64_t>(factors->size())},
                         std::as_bytes(std::span<const float>(*factors)));
    for (const auto& [tensor, factors] : longRopeFactors(config))
        writer.addTensor(tensor, io::GgmlType::F32, {static_cast<std::int64_t>(factors.size())},
                         std::as_bytes(std::span<const float>(factors)));
    for (std::size_t i = 0; i < planned.size(); ++i) {
        cancel.throwIfCancelled();
        const PlannedTensor& t = planned[i];
        if (options.measuredBytes) {
            writer.addTensor(t.choice.ggufName, t.type, t.choice.shape, {});
            continue;
        }
        const auto encoded = options.encodedLinears.find(t.linearPrefix);
        const std::vector<std::byte> bytes =
            t.latentSplit ? encode(t.type, valuesOf(t, checkpoint, reader, encodedLatent(t, options, destination)),
                                   t.choice.shape.back())
            : !experts[i].linears.empty() ? stackedBlocks(t, experts[i], options)
            : encoded == options.encodedLinears.end()
                ? encode(t.type, valuesOf(t, checkpoint, reader, nullptr, replacedValues(t, options, destination)),
                         t.choice.shape.back())
            : t.valueHeads           ? jobBlocksTiled(t, options, *encoded->second)
            : options.completeLinear ? storedBlocks(*options.completeLinear(t.linearPrefix), t.interleavedHeads)
                                     : storedBlocks(*encoded->second, t.interleavedHeads);
        writer.addTensor(t.choice.ggufName, t.type, t.choice.shape, bytes);
        report(progress, i + 1, planned.size(), t.choice.ggufName);
    }
    fs::path written = writer.finish();
    if (options.measuredBytes) *options.measuredBytes = writer.bytes();
    return written;
}

}  // namespace qs::pipeline
