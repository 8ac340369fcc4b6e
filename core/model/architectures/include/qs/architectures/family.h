#pragma once
// Family: everything QuantScope knows about one model architecture, as data, stated once. The config
// reader (qs_model), the GGUF reader and writer (qs_io, qs_pipeline) and the format checks (qs_formats)
// read these fields instead of comparing model types, so that a new family is one file in this folder
// (core/model/architectures/<family>.cpp) plus what is new maths.
//
// This module sits below qs_io (it depends on nothing but the standard library): the GGUF edge in io
// needs the same names as the model code above it.
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace qs::architectures {

// One per-layer module whose GGUF name is not the shared table's (gguf_tensor_names.h): llama.cpp's
// name for it, and Hugging Face's relative to the layer ("post_attention_norm" <-> "post_attention_layernorm").
// The GGUF writer and reader both use it. `parameter`: the Hugging Face side is a parameter of its
// module ("self_attn.sinks"), with no ".weight" part; the GGUF side is "<gguf>.weight".
struct GgufName {
    std::string_view gguf{};
    std::string_view hf{};
    bool parameter = false;
    // A parameter's GGUF suffix (GLM's exp_probs_b is "<gguf>.bias"); empty: none (qwen35's "blk.N.ssm_a").
    std::string_view ggufPart = "weight";
};

// A sparse MoE block's Hugging Face names, relative to the layer.
struct ExpertNames {
    std::string block{};  // "mlp" (Qwen3-MoE, gpt-oss), "block_sparse_moe" (Mixtral)
    std::string gate{};   // "gate_proj", "w1"; gpt-oss: "gate_up_proj", gate and up interleaved
    std::string up{};     // "up_proj", "w3"; empty when gate holds both
    std::string down{};   // "down_proj", "w2"
    std::string router = "gate";
    std::string shared{};  // the always-on shared expert's module: "shared_experts" (GLM, DeepSeek); empty: none
};

// How the router turns its logits into the chosen experts and their weights.
enum class RouterScoring {
    Softmax,  // softmax over all experts, top-k (Qwen3-MoE, Mixtral, gpt-oss)
    // Sigmoid scores; the choice adds e_score_correction_bias and keeps the best topk_group of n_group
    // expert groups; the weights are the chosen sigmoid scores, renormalised as norm_topk_prob says,
    // times routed_scaling_factor (transformers' Glm4MoeTopkRouter / DeepseekV3TopkRouter).
    SigmoidGrouped,
    // Llama 4's Llama4Router: the top-k logits choose the experts, and each chosen expert's input (not its
    // output) is scaled by the sigmoid of its logit; no renormalisation.
    SigmoidScalesInput,
};

// How a MoE family's config spells its block (the semantics are shared: model::MoeConfig).
struct MoeSpec {
    std::string_view numExpertsKey{};       // "num_experts" (Qwen3-MoE), "num_local_experts" (Mixtral, gpt-oss)
    std::string_view expertSizeKey{};       // "moe_intermediate_size"; empty: the experts are intermediate_size wide
    std::optional<bool> normTopkDefault{};  // norm_topk_prob's default; nullopt: always renormalised, no key
    bool sparseLayers = false;              // decoder_sparse_step and mlp_only_layers are read
    ExpertNames names{};                    // as the checkpoint names the experts
    ExpertNames ggufNames{};                // as a GGUF of the family reads back (gpt-oss: gate and up apart)
    bool clampedSwiglu = false;             // gpt-oss's clamped SwiGLU (swiglu_limit)
    bool stacked = false;                   // gpt-oss: all experts in one tensor per projection
    RouterScoring scoring = RouterScoring::Softmax;
    std::string_view sharedExpertsKey{};  // "n_shared_experts": the shared expert is that many experts wide
    std::string_view firstDenseKey{};     // "first_k_dense_replace": the first k layers keep a dense MLP
    // Llama 4: transformers fuses the experts as experts.gate_up_proj [E, H, 2I] (gate columns, then up) and
    // experts.down_proj [E, I, H], x @ W, not transformers 5's [E, 2I, H] / [E, H, I].
    bool fusedTransposed = false;
    // Qwen3.5-MoE: the shared expert's width is this key's value ("shared_expert_intermediate_size"), and
    // with sharedExpertGate its output is scaled by sigmoid(<block>.shared_expert_gate(x)).
    std::string_view sharedExpertSizeKey{};
    bool sharedExpertGate = false;
};

// Where a vision-language model's text tower lives: the tensor prefix, the lm_head and the tensors of the
// vision tower and projector that pass through untouched.
struct TowerLayout {
    std::string tensorPrefix{};
    std::string lmHead{};
    std::vector<std::string> passThroughPrefixes{};
};

// A vision-language model whose text tower is a family we run. Names checked against transformers'
// _checkpoint_conversion_mapping (current: >= 4.52, old: the layout written before it).
struct VisionLanguage {
    std::string_view textModelType{};         // the family its text config is read as
    std::set<std::string> textConfigTypes{};  // text_config.model_type values accepted for it
    bool textConfigRequired = true;           // else the text fields may sit at the top level
    bool multimodalRope = false;              // rope_scaling may hold mrope_section / mrope_interleaved
    bool deepstack = false;                   // vision_config.deepstack_visual_indexes is counted (Qwen3-VL)
    TowerLayout current{};
    TowerLayout old{};
};

// How attention's biases follow from the config.
enum class AttentionBias {
    Flag,           // attention_bias gives q/k/v and o_proj biases (Llama's), default false
    FlagDefaultOn,  // attention_bias, default true (gpt-oss)
    QkvAlways,      // q/k/v always biased, o_proj never, whatever the config says (Qwen2)
    QkvFlag,        // attention_bias gives q/k/v biases, o_proj never has one (GLM-4.5)
};

// Which sliding windows the config may ask for.
enum class SlidingWindow {
    Refused,     // use_sliding_window true is refused (Qwen's per-layer windows are not implemented)
    EveryLayer,  // sliding_window applies to every layer (Mistral, Mixtral, Phi-3)
    PerLayer,    // layer_types: sliding and full layers (Gemma 3, gpt-oss), read by the family's own code
};

// The family-specific part of the config reader, in qs_model (core/model/architectures/*_config.cpp).
enum class ConfigExtra { None, Gemma3, Phi3, GptOss, DeepseekV3, Llama4, Qwen35 };

// Which config.json of a GGUF general.architecture reads back as this family.
enum class GgufReadBack {
    No,  // another family owns the architecture (Mistral and Mistral 3 write "llama")
    Always,
    Dense,        // only without <arch>.expert_count (llama: Llama; with experts it is Mixtral)
    WithExperts,  // only with experts (Mixtral)
};

// What llama.cpp's graph for the architecture fixes that a config could set otherwise: an export that
// differs is refused (pipeline::writeGguf), and a GGUF read back gets these values.
struct GgufFixed {
    int globalEvery = 0;             // every n-th layer full attention, the others sliding (gemma3: 6)
    bool evenLayersSliding = false;  // gpt-oss: even layers sliding, odd full
    double localRopeBase = 0.0;      // rope.freq_base_swa's default (gemma3: 10000); 0: none
    float swigluLimit = 0.0f;        // the clamped SwiGLU's limit (gpt-oss: 7); 0: none
    bool yarnBetas = false;          // YaRN betas 32 / 1, attention factor 0.1 ln(factor) + 1 (gpt-oss)
    // deepseek2: YaRN betas 32 / 1, cos and sin unscaled (mscale = mscale_all_dim) and the scores scaled by
    // get_mscale(factor, mscale_all_dim)² (rope.scaling.yarn_log_multiplier), as its graph computes them.
    bool yarnLogMultiplier = false;
    bool gemmaQueryScale = false;  // query_pre_attn_scalar head_dim, or hidden / heads for 62 layers (gemma3)
    bool expertsEveryLayerRenormalised = false;  // qwen3moe: experts in every layer, top-k renormalised
};

// How the family's GGUF metadata departs from the keys every architecture writes.
struct GgufMetadataSpec {
    bool expertWidthKey = true;          // <arch>.expert_feed_forward_length (llama's Mixtral: none)
    bool windowOnEveryLayerKey = false;  // <arch>.attention.sliding_window for an every-layer window (phi3)
    bool deepstackKey = false;           // <arch>.n_deepstack_layers (qwen3vl)
    bool biasFlagsFromTensors = false;   // attention_bias / mlp_bias read back from blk.0's biases (llama)
    bool sigmoidRouterKeys = false;  // expert_gating_func, _weights_scale/_norm, _group_count, shared experts (glm4moe)
    bool interleaveMoeStepKey = false;  // <arch>.interleave_moe_layer_step: every n-th layer a MoE block (llama4)
};

struct Family {
    std::string_view modelType{};    // config.json model_type
    std::string_view hfClass{};      // config.json architectures[0] of a causal LM of the family
    std::string_view displayName{};  // for people: "Qwen3-MoE"
    // Refused: what is missing, said instead of "not supported" (families users ask for).
    std::string_view notYet{};

    // The config reader.
    AttentionBias attentionBias = AttentionBias::Flag;
    bool qkNorm = false;           // per-head RMSNorm of q and k (Qwen3)
    std::string_view qkNormKey{};  // the config key that turns the q/k norms on (GLM-4.5: use_qk_norm)
    bool partialRotary = false;    // partial_rotary_factor is read (GLM-4.5; Phi-3 reads its own)
    SlidingWindow slidingWindow = SlidingWindow::Refused;
    bool yarn = false;      // rope scaling yarn accepted (checked against transformers and llama.cpp)
    bool longRope = false;  // rope scaling longrope accepted
    ConfigExtra extra = ConfigExtra::None;
    // The text config's rope_parameters may hold mrope_section / mrope_interleaved (Qwen3.5's text model,
    // plain RoPE for text tokens), read as a vision tower's text config reads them.
    bool textMultimodalRope = false;
    // Projections the checkpoint stores fused (Phi-3: "self_attn.qkv_proj" = q, k, v rows; "mlp.gate_up_proj"
    // = gate rows, then up rows); empty: stored apart.
    std::string_view fusedQkv{};
    std::string_view fusedGateUp{};
    std::optional<MoeSpec> moe{};
    std::optional<VisionLanguage> vision{};
    // Layers stored after the decoder's that no forward pass runs, counted by this config key (GLM's
    // and DeepSeek-V3's next-token-prediction layers, num_nextn_predict_layers): copied through untouched.
    std::string_view trailingLayersKey{};
    // Where a dense layer's MLP lives when not under "mlp" (Llama 4: "feed_forward.gate_proj"): io reads it as
    // "mlp.*", the name every other module of QuantScope uses, and the exports write it back so.
    std::string_view denseMlpBlock{};

    // --rotate (model::WeightRotation): the decoder is Llama's shape (pre-norms only, q/k/v/o attention, SwiGLU
    // MLP or experts beside a softmax router), so that a rotation of the residual stream folds into its weights.
    // A family opts in once a test shows its rotated model computes the original's logits.
    bool foldsRotation = false;

    // The GGUF edge.
    std::string_view ggufArch{};  // llama.cpp's general.architecture; empty: none
    GgufReadBack ggufReadBack = GgufReadBack::Always;
    // What keeps a GGUF of ggufArch from reading back as this family (its model is refused saying so); empty:
    // nothing.
    std::string_view ggufReadBackMissing{};
    bool ggufPermutesQk = false;        // llama.cpp's converter interleaves q/k rows (llama's "normal" rope)
    bool ggufNormPlusOne = false;       // the converter stores norms as 1 + w (gemma3)
    std::vector<GgufName> ggufNames{};  // per-layer modules named otherwise than the shared table
    GgufMetadataSpec ggufMetadata{};
    GgufFixed ggufFixed{};
    // llama.cpp's llama_model_type calls an 80-layer model of the architecture 70B (which its K-quant mixes
    // treat apart): never, only with grouped-query attention (llama), or always (qwen2).
    enum class Seventy { Never, WithGqa, Always } ggufSeventyBAt80Layers = Seventy::Never;

    // The format checks: the q/k norms and q/k/v biases a checkpoint of the family must (not) hold.
    std::optional<bool> tensorsHoldQkNorm{};  // nullopt: either
    bool tensorsHoldQkvBias = false;
};

}  // namespace qs::architectures
