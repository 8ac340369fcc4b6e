// config.json from GGUF metadata: the keys llama.cpp's converter writes (gguf-py constants.py,
// convert_hf_to_gguf.py's set_gguf_parameters) read back into the Hugging Face fields they came from.
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>

#include "qs/architectures/registry.h"
#include "qs/io/gguf_keys.h"

#include "gguf_checkpoint.h"

namespace qs::io::detail {

namespace keys = io::gguf_keys;

namespace {

using nlohmann::json;

// An f32 metadata value as the shortest decimal that reads back as the same float, so 1e-5 stored
// as f32 becomes 1e-05 again rather than 9.99999974737875e-06.
double shortestDecimal(const GgufValue& v) {
    const double d = *v.asNumber();
    if (v.type() != GgufValueType::F32) return d;
    char text[64];
    const auto r = std::to_chars(text, text + sizeof text, static_cast<float>(d));
    double out = d;
    std::from_chars(text, r.ptr, out);
    return out;
}

// An integer key, or an array of integers that are all equal (llama.cpp allows per-layer arrays).
std::optional<std::int64_t> uniformInteger(const GgufMetadata& m, const std::string& key) {
    const GgufValue* v = m.find(key);
    if (v == nullptr) return std::nullopt;
    if (const auto i = v->asInteger()) return i;
    const GgufArray* a = v->asArray();
    if (a == nullptr || a->items.empty()) return std::nullopt;
    const auto first = a->items.front().asInteger();
    for (const auto& item : a->items)
        if (item.asInteger() != first) return std::nullopt;
    return first;
}

void putInteger(json& c, const char* field, std::optional<std::int64_t> value) {
    if (value) c[field] = *value;
}

// Llama-3's rope scaling reaches GGUF only as the rope_freqs tensor of per-frequency factors. With
// the parameters every Llama 3.x release uses (low 1, high 4, original context 8192) and the largest
// factor as `factor`, recomputing the tensor as the converter does must give it back; otherwise
// the scaling cannot be stated as a config and is named so that the model loader refuses it.
json llama3RopeScaling(const std::vector<float>& factors, double theta, std::int64_t headDim) {
    const json unknown = {{"rope_type", "gguf_rope_freqs"}};
    if (factors.empty() || headDim <= 0 || static_cast<std::int64_t>(factors.size()) * 2 != headDim) return unknown;
    double factor = 0.0;
    for (const float f : factors) factor = std::max(factor, static_cast<double>(f));
    const double low = 1.0, context = 8192.0;
    // high_freq_factor 4 (Llama 3.x), or 1 (Llama 4: no band between the kept and the slowed frequencies).
    for (const double high : {4.0, 1.0}) {
        bool matches = true;
        for (std::size_t i = 0; i < factors.size() && matches; ++i) {
            const double freq = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(headDim));
            const double wavelen = 2.0 * std::numbers::pi / freq;
            double expected = factor;
            if (wavelen < context / high) {
                expected = 1.0;
            } else if (wavelen <= context / low && high != low) {
                const double smooth = (context / wavelen - low) / (high - low);
                expected = 1.0 / ((1.0 - smooth) / factor + smooth);
            }
            matches = std::abs(expected - factors[i]) <= 1e-4 * std::max(1.0, expected);
        }
        if (matches)
            return {{"rope_type", "llama3"},
                    {"factor", factor},
                    {"low_freq_factor", low},
                    {"high_freq_factor", high},
                    {"original_max_position_embeddings", static_cast<int>(context)}};
    }
    return unknown;
}

json ropeScaling(const GgufFile& file, const std::string& arch, double theta, std::int64_t headDim) {
    const auto& m = file.metadata();
    if (const TensorInfo* freqs = file.find(keys::kRopeFreqs); freqs != nullptr && freqs->decodesToF32())
        return llama3RopeScaling(file.view(*freqs).toF32(), theta, headDim);
    const std::string* type = m.string(keys::archKey(arch, keys::kRopeScalingType));
    const auto factor = m.number(keys::archKey(arch, keys::kRopeScalingFactor));
    if (type == nullptr || *type == "none" || !factor) return nullptr;
    json s = {{"rope_type", *type},
              {"factor", shortestDecimal(*m.find(keys::archKey(arch, keys::kRopeScalingFactor)))}};
    putInteger(s, "original_max_position_embeddings",
               m.integer(keys::archKey(arch, keys::kRopeScalingOriginalContext)));
    return s;
}

const char* torchDtypeOfFileType(std::int64_t fileType) {
    switch (fileType) {
        case 0: return "float32";
        case 1: return "float16";
        case 32: return "bfloat16";
        default: return nullptr;
    }
}

bool hasExperts(const GgufMetadata& m, const std::string& arch) {
    return m.integer(keys::archKey(arch, keys::kExpertCount)).value_or(0) > 0;
}

void putArchitecture(json& c, const architectures::Family* family, const std::string& arch) {
    if (family == nullptr) {
        c["model_type"] = arch;  // not one QuantScope runs: the model loader names it and refuses
        return;
    }
    c["model_type"] = family->modelType;
    c["architectures"] = json::array({family->hfClass});
}

// Hugging Face's Llama has one attention_bias flag for q/k/v/o and one mlp_bias (Qwen2's biases are
// implied by its model_type): read from the first layer's tensors.
void putBiases(json& c, const GgufFile& file, const architectures::Family& family) {
    if (!family.ggufMetadata.biasFlagsFromTensors) return;
    c["attention_bias"] = file.find("blk.0.attn_q.bias") != nullptr;
    c["mlp_bias"] = file.find("blk.0.ffn_up.bias") != nullptr;
}

// GLM's router (llama.cpp's glm4moe keys) under Glm4MoeConfig's names; llama.cpp's defaults where a key is
// absent (no leading dense layer, no shared expert, no scale, renormalised, one group).
void putSigmoidRouter(json& c, const GgufMetadata& m, const std::string& arch, const architectures::MoeSpec& moe) {
    const auto key = [&](const char* suffix) { return keys::archKey(arch, suffix); };
    if (!moe.firstDenseKey.empty())
        c[std::string(moe.firstDenseKey)] = m.integer(key(keys::kLeadingDenseBlockCount)).value_or(0);
    if (!moe.sharedExpertsKey.empty())
        c[std::string(moe.sharedExpertsKey)] = m.integer(key(keys::kExpertSharedCount)).value_or(0);
    const GgufValue* scale = m.find(key(keys::kExpertWeightsScale));
    c["routed_scaling_factor"] =
        scale && scale->isNumber() && *scale->asNumber() != 0.0 ? shortestDecimal(*scale) : 1.0;
    const GgufValue* norm = m.find(key(keys::kExpertWeightsNorm));
    c["norm_topk_prob"] = norm == nullptr || norm->asBool().value_or(true);
    c["n_group"] = std::max<std::int64_t>(1, m.integer(key(keys::kExpertGroupCount)).value_or(1));
    c["topk_group"] = std::max<std::int64_t>(1, m.integer(key(keys::kExpertGroupUsedCount)).value_or(1));
}

// The sparse MoE block's fields (LLM_KV_EXPERT_*) under the family's config keys: llama.cpp always
// renormalises the top-k weights and puts experts in every layer.
void putExperts(json& c, const GgufMetadata& m, const std::string& arch, const architectures::Family& family) {
    if (!hasExperts(m, arch) || !family.moe) return;
    const architectures::MoeSpec& moe = *family.moe;
    const auto key = [&](const char* suffix) { return keys::archKey(arch, suffix); };
    putInteger(c, "num_experts_per_tok", m.integer(key(keys::kExpertUsedCount)));
    putInteger(c, std::string(moe.numExpertsKey).c_str(), m.integer(key(keys::kExpertCount)));
    if (!moe.expertSizeKey.empty())
        putInteger(c, std::string(moe.expertSizeKey).c_str(), m.integer(key(keys::kExpertFeedForwardLength)));
    if (moe.normTopkDefault) c["norm_topk_prob"] = true;
    if (moe.sparseLayers) {
        c["decoder_sparse_step"] = 1;
        c["mlp_only_layers"] = json::array();
    }
    if (family.ggufMetadata.sigmoidRouterKeys) putSigmoidRouter(c, m, arch, moe);
}

// The windows as llama.cpp's graph fixes them (GgufFixed): every n-th layer global (gemma3), or even
// layers sliding and odd ones full (gpt-oss); the window itself from <arch>.attention.sliding_window.
void putWindows(json& c, const GgufMetadata& m, const std::string& arch, const architectures::Family& family) {
    if (family.slidingWindow == architectures::SlidingWindow::Refused) return;
    putInteger(c, "sliding_window", m.integer(keys::archKey(arch, keys::kSlidingWindow)));
    const architectures::GgufFixed& fixed = family.ggufFixed;
    if (fixed.globalEvery == 0 && !fixed.evenLayersSliding) return;
    const int layers = c.value("num_hidden_layers", 0);
    json types = json::array();
    for (int i = 0; i < layers; ++i) {
        const bool sliding = fixed.globalEvery > 0 ? (i + 1) % fixed.globalEvery != 0 : i % 2 == 0;
        types.push_back(sliding ? "sliding_attention" : "full_attention");
    }
    c["layer_types"] = types;
}

// Gemma 3 as llama.cpp's gemma3 runs it (llama_model_loader, LLM_ARCH_GEMMA3): the sliding layers' RoPE
// base rope.freq_base_swa (10000 when absent), gelu-tanh, and the score scale 1/sqrt(head_dim)
// (hidden / heads for the 62-layer 27B), which the export checked the model had.
void putGemma3(json& c, const GgufMetadata& m, const std::string& arch, const architectures::Family& family) {
    c.erase("hidden_act");
    c["hidden_activation"] = "gelu_pytorch_tanh";
    const GgufValue* local = m.find(keys::archKey(arch, keys::kRopeFreqBaseSwa));
    c["rope_local_base_freq"] = local && local->isNumber() ? shortestDecimal(*local) : family.ggufFixed.localRopeBase;
    const int layers = c.value("num_hidden_layers", 0);
    const int heads = c.value("num_attention_heads", 0), hidden = c.value("hidden_size", 0);
    if (layers == 62 && heads > 0)
        c["query_pre_attn_scalar"] = hidden / heads;
    else if (c.contains("head_dim"))
        c["query_pre_attn_scalar"] = c["head_dim"];
}

// gpt-oss as llama.cpp's gpt-oss (LLM_ARCH_OPENAI_MOE) runs it: biased attention, the clamped SwiGLU at
// 7, and YaRN with betas 32 / 1 whose correction range it always rounds out to whole dimensions
// (transformers' truncate true).
void putGptOss(json& c, const GgufFile& file, const architectures::Family& family) {
    c["attention_bias"] = file.find("blk.0.attn_q.bias") != nullptr;
    c["swiglu_limit"] = family.ggufFixed.swigluLimit;
    if (family.ggufFixed.yarnBetas && c["rope_scaling"].is_object() &&
        c["rope_scaling"].value("rope_type", "") == "yarn") {
        c["rope_scaling"]["beta_fast"] = 32.0;
        c["rope_scaling"]["beta_slow"] = 1.0;
        c["rope_scaling"]["truncate"] = true;
    }
}

// The f32 values of a factor tensor as the decimals they were written from.
json factorList(const GgufFile& file, const TensorInfo& t) {
    json out = json::array();
    for (const float f : file.view(t).toF32()) out.push_back(shortestDecimal(GgufValue::f32(f)));
    return out;
}

// A partial rotary part (rope.dimension_count below head_dim) as partial_rotary_factor.
void putPartialRotary(json& c, const GgufMetadata& m, const std::string& arch) {
    const std::int64_t headDim = c.value("head_dim", std::int64_t{0});
    if (const auto dims = m.integer(keys::archKey(arch, keys::kRopeDimensionCount));
        dims && headDim > 0 && *dims > 0 && *dims < headDim) {
        double partial = static_cast<double>(*dims) / static_cast<double>(headDim);
        // transformers takes int(head_dim * partial_rotary_factor): make sure that gives the count back.
        while (static_cast<std::int64_t>(static_cast<double>(headDim) * partial) < *dims)
            partial = std::nextafter(partial, 2.0);
        c["partial_rotary_factor"] = partial;
    }
}

// Phi-3 as llama.cpp's converter writes it: a partial rotary part as rope.dimension_count, the window,
// and LongRoPE as the factor tensors rope_factors_long / _short with the original context and the
// attention factor (left to its default, as transformers computes it, when it is that value in f32).
// Llama 4 as llama.cpp's llama4 graph runs it (llama_model_llama4::load_arch_hparams): the experts
// expert_feed_forward_length wide and the dense layers feed_forward_length, a MoE block every
// interleave_moe_layer_step-th layer, NoPE every 4th layer (Llama4TextConfig's default), the others chunked by 8192
// (or as sliding_window_pattern says), temperature tuning with floor 8192 and scale 0.1 (the config's defaults), the
// L2 q/k norm unless there are 128 experts. A sliding_window of 0 (MobileLLM) rotates every layer, unchunked.
void putLlama4(json& c, const GgufMetadata& m, const std::string& arch) {
    const auto key = [&](const char* suffix) { return keys::archKey(arch, suffix); };
    if (c.contains("intermediate_size")) c["intermediate_size_mlp"] = c["intermediate_size"];
    putInteger(c, "intermediate_size", m.integer(key(keys::kExpertFeedForwardLength)));
    putInteger(c, "interleave_moe_layer_step", m.integer(key(keys::kInterleaveMoeLayerStep)));
    c["use_qk_norm"] = m.integer(key(keys::kExpertCount)).value_or(0) != 128;
    const int layers = c.value("num_hidden_layers", 0);
    json types = json::array(), rope = json::array();
    const auto window = m.integer(key(keys::kSlidingWindow));
    const std::int64_t period = m.integer(key(keys::kSlidingWindowPattern)).value_or(4);
    for (int i = 0; i < layers; ++i) {
        const bool unchunked = window && *window == 0;
        rope.push_back(unchunked || (i + 1) % 4 != 0 ? 1 : 0);
        types.push_back(!unchunked && (period == 0 || i % period < period - 1) ? "chunked_attention"
                                                                               : "full_attention");
    }
    c["no_rope_layers"] = rope;
    c["layer_types"] = types;
    c["attention_chunk_size"] = window && *window == 0 ? json(nullptr) : json(8192);
    c["attn_temperature_tuning"] = true;
    c["floor_scale"] = 8192;
    c["attn_scale"] = 0.1;
}

// Qwen3.5 as llama.cpp's qwen35 / qwen35moe runs it (llama_model_qwen35::load_arch_hparams): every
// full_attention_interval-th layer full attention, the others Gated DeltaNet of the ssm.* sizes (group_count key
// heads of state_size, time_step_rank value heads sharing inner_size), the rotary part as rope.dimension_count says
// (stated even when whole: Qwen3_5TextConfig's default is a quarter), the shared expert's width.
void putQwen35(json& c, const GgufMetadata& m, const std::string& arch) {
    const auto key = [&](const char* suffix) { return keys::archKey(arch, suffix); };
    const int layers = c.value("num_hidden_layers", 0);
    const std::int64_t interval = m.integer(key(keys::kFullAttentionInterval)).value_or(4);
    c["full_attention_interval"] = interval;
    json types = json::array();
    for (int i = 0; i < layers; ++i)
        types.push_back(interval > 0 && (i + 1) % interval == 0 ? "full_attention" : "linear_attention");
    c["layer_types"] = types;
    putInteger(c, "linear_conv_kernel_dim", m.integer(key(keys::kSsmConvKernel)));
    putInteger(c, "linear_key_head_dim", m.integer(key(keys::kSsmStateSize)));
    putInteger(c, "linear_num_key_heads", m.integer(key(keys::kSsmGroupCount)));
    const auto valueHeads = m.integer(key(keys::kSsmTimeStepRank));
    putInteger(c, "linear_num_value_heads", valueHeads);
    if (const auto inner = m.integer(key(keys::kSsmInnerSize)); inner && valueHeads && *valueHeads > 0)
        c["linear_value_head_dim"] = *inner / *valueHeads;
    if (!c.contains("partial_rotary_factor")) c["partial_rotary_factor"] = 1.0;
    putInteger(c, "shared_expert_intermediate_size", m.integer(key(keys::kExpertSharedFeedForwardLength)));
}

void putPhi3(json& c, const GgufFile& file, const std::string& arch) {
    const GgufMetadata& m = file.metadata();
    putPartialRotary(c, m, arch);
    const TensorInfo* longFactors = file.find(keys::kRopeFactorsLong);
    const TensorInfo* shortFactors = file.find(keys::kRopeFactorsShort);
    if (longFactors == nullptr || shortFactors == nullptr || !longFactors->decodesToF32() ||
        !shortFactors->decodesToF32())
        return;
    json s = {{"type", "longrope"},
              {"long_factor", factorList(file, *longFactors)},
              {"short_factor", factorList(file, *shortFactors)}};
    const auto original = m.integer(keys::archKey(arch, keys::kRopeScalingOriginalContext));
    const auto context = c.value("max_position_embeddings", std::int64_t{0});
    if (original && *original > 0) c["original_max_position_embeddings"] = *original;
    if (const GgufValue* attn = m.find(keys::archKey(arch, keys::kRopeScalingAttnFactor)); attn && attn->isNumber()) {
        const double factor =
            original && *original > 0 ? static_cast<double>(context) / static_cast<double>(*original) : 1.0;
        const double standard =
            factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(static_cast<double>(*original)));
        if (static_cast<float>(standard) != static_cast<float>(*attn->asNumber()))
            s["attention_factor"] = shortestDecimal(*attn);
    }
    c["rope_scaling"] = s;
}

// The next-token-prediction layers that block_count counts after the decoder's (glm4moe, deepseek2 with
// nextn_predict_layers): the family's trailing layers, stored and not run, as in the Hugging Face checkpoint.
void putTrailingLayers(json& c, const GgufMetadata& m, const std::string& arch, const architectures::Family& family) {
    if (family.trailingLayersKey.empty()) return;
    const std::int64_t nextn = m.integer(keys::archKey(arch, keys::kNextnPredictLayers)).value_or(0);
    const std::int64_t layers = c.value("num_hidden_layers", std::int64_t{0});
    c[std::string(family.trailingLayersKey)] = nextn > 0 && nextn < layers ? nextn : 0;
    if (nextn > 0 && nextn < layers) c["num_hidden_layers"] = layers - nextn;
}

// DeepSeek-V3 / Kimi-K2 as llama.cpp's deepseek2 runs them (llama_model_deepseek2's hparams): the latent
// attention's ranks (q_lora_rank null without attn_q_a: q_proj), each head's query/key and value widths (key_length_mla /
// value_length_mla; files from before llama.cpp's MLA cache have them as key_length / value_length), the rotary
// part rope.dimension_count with adjacent pairs (rope_interleave), one key/value head per query head. The router is
// DeepseekV3TopkRouter's when expert_gating_func says sigmoid (a file without it is DeepSeek-V2's softmax, which
// the config reader refuses by its scoring_func). YaRN: deepseek2 fixes betas 32 / 1 and cancels the rope's
// attention factor, scaling the scores by mscale(factor, 0.1 · log multiplier)²: transformers' mscale equal to
// mscale_all_dim; without the multiplier, neither (attention_factor 1).
void putDeepseek2(json& c, const GgufFile& file, const std::string& arch) {
    const GgufMetadata& m = file.metadata();
    const auto key = [&](const char* suffix) { return keys::archKey(arch, suffix); };
    // q_proj (no attn_q_a: DeepSeek-V2-Lite, Kimi-K2's tiny test model), else the rank the key or attn_q_a says.
    const TensorInfo* qA = file.find("blk.0.attn_q_a.weight");
    const auto qLora = m.integer(key(keys::kQLoraRank)).value_or(qA && !qA->shape.empty() ? qA->shape.front() : 0);
    c["q_lora_rank"] = qA != nullptr && qLora > 0 ? json(qLora) : json(nullptr);
    putInteger(c, "kv_lora_rank", m.integer(key(keys::kKvLoraRank)));
    const auto mla = m.integer(key(keys::kKeyLengthMla));
    const auto keyLength = mla ? mla : m.integer(key(keys::kKeyLength));
    const auto valueLength = mla ? m.integer(key(keys::kValueLengthMla)) : m.integer(key(keys::kValueLength));
    c.erase("head_dim");  // the config reader takes the heads' widths from the latent attention's sizes
    if (const auto rope = m.integer(key(keys::kRopeDimensionCount)); keyLength && rope) {
        c["qk_rope_head_dim"] = *rope;
        c["qk_nope_head_dim"] = *keyLength - *rope;
    }
    putInteger(c, "v_head_dim", valueLength);
    c["rope_interleave"] = true;
    if (c.contains("num_attention_heads")) c["num_key_value_heads"] = c["num_attention_heads"];
    c["attention_bias"] = file.find("blk.0.attn_kv_a_mqa.bias") != nullptr;
    const bool sigmoid = m.integer(key(keys::kExpertGatingFunc)).value_or(0) == keys::kGatingSigmoid;
    c["scoring_func"] = sigmoid || !hasExperts(m, arch) ? "sigmoid" : "softmax";
    c["topk_method"] = "noaux_tc";
    if (!c["rope_scaling"].is_object() || c["rope_scaling"].value("rope_type", "") != "yarn") return;
    json& s = c["rope_scaling"];
    s["beta_fast"] = 32.0;
    s["beta_slow"] = 1.0;
    const GgufValue* logMultiplier = m.find(key(keys::kRopeScalingYarnLogMultiplier));
    if (logMultiplier != nullptr && logMultiplier->isNumber() && *logMultiplier->asNumber() > 0.0) {
        // The converter writes 0.1 · mscale_all_dim in f32: the decimal it came from, through f32 once more.
        const double all = shortestDecimal(GgufValue::f32(static_cast<float>(shortestDecimal(*logMultiplier) / 0.1)));
        s["mscale"] = all;
        s["mscale_all_dim"] = all;
    } else {
        s["attention_factor"] = 1.0;
    }
}

}  // namespace

json hfConfigOfGguf(const GgufFile& file) {
    const auto& m = file.metadata();
    json c = json::object();
    const std::string* archValue = m.string(keys::kArchitecture);
    const std::string arch = archValue ? *archValue : "";
    const architectures::Family* family = architectures::familyOfGguf(arch, hasExperts(m, arch));
    putArchitecture(c, family, arch);
    const auto key = [&](const char* suffix) { return keys::archKey(arch, suffix); };

    putInteger(c, "hidden_size", m.integer(key(keys::kEmbeddingLength)));
    putInteger(c, "intermediate_size", uniformInteger(m, key(keys::kFeedForwardLength)));
    putInteger(c, "num_hidden_layers", m.integer(key(keys::kBlockCount)));
    const auto heads = uniformInteger(m, key(keys::kHeadCount));
    putInteger(c, "num_attention_heads", heads);
    putInteger(c, "num_key_value_heads", uniformInteger(m, key(keys::kHeadCountKv)).value_or(heads.value_or(0)));
    if (!heads) c.erase("num_key_value_heads");
    std::int64_t headDim = 0;
    if (const auto k = m.integer(key(keys::kKeyLength)))
        headDim = *k;
    else if (heads && *heads > 0 && c.contains("hidden_size"))
        headDim = c["hidden_size"].get<std::int64_t>() / *heads;
    if (headDim > 0) c["head_dim"] = headDim;
    putInteger(c, "max_position_embeddings", m.integer(key(keys::kContextLength)));
    if (const GgufValue* eps = m.find(key(keys::kRmsEpsilon)); eps && eps->isNumber())
        c["rms_norm_eps"] = shortestDecimal(*eps);
    const GgufValue* base = m.find(key(keys::kRopeFreqBase));
    const double theta = base && base->isNumber() ? shortestDecimal(*base) : 10000.0;
    c["rope_theta"] = theta;
    c["rope_scaling"] = ropeScaling(file, arch, theta, headDim);
    c["hidden_act"] = "silu";

    if (const TensorInfo* embed = file.find("token_embd.weight"); embed && !embed->shape.empty())
        c["vocab_size"] = embed->shape.front();
    else
        putInteger(c, "vocab_size", m.integer(key(keys::kVocabSize)));
    c["tie_word_embeddings"] = file.find("output.weight") == nullptr;
    putInteger(c, "bos_token_id", m.integer(keys::kBosTokenId));
    putInteger(c, "eos_token_id", m.integer(keys::kEosTokenId));
    if (const auto fileType = m.integer(keys::kFileType))
        if (const char* dtype = torchDtypeOfFileType(*fileType)) c["torch_dtype"] = dtype;
    if (family == nullptr) return c;
    putBiases(c, file, *family);
    if (family->partialRotary) putPartialRotary(c, m, arch);
    // q/k norms the config turns on by a key (GLM's use_qk_norm): as the first layer holds them.
    if (!family->qkNormKey.empty())
        c[std::string(family->qkNormKey)] = file.find("blk.0.attn_q_norm.weight") != nullptr;
    putExperts(c, m, arch, *family);
    putWindows(c, m, arch, *family);
    putTrailingLayers(c, m, arch, *family);
    switch (family->extra) {
        case architectures::ConfigExtra::Gemma3: putGemma3(c, m, arch, *family); break;
        case architectures::ConfigExtra::Phi3: putPhi3(c, file, arch); break;
        case architectures::ConfigExtra::GptOss: putGptOss(c, file, *family); break;
        case architectures::ConfigExtra::Llama4: putLlama4(c, m, arch); break;
        case architectures::ConfigExtra::DeepseekV3: putDeepseek2(c, file, arch); break;
        case architectures::ConfigExtra::Qwen35: putQwen35(c, m, arch); break;
        case architectures::ConfigExtra::None: break;
    }
    return c;
}

}  // namespace qs::io::detail
