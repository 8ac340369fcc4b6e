#pragma once
// ModelConfig: the architecture of a decoder-only transformer as Hugging Face's config.json describes
// it, for the families QuantScope runs (Llama 1-3, Mistral, Qwen2/2.5, Qwen3, the mixture-of-experts
// Qwen3-MoE, Mixtral, gpt-oss, GLM-4.5 and DeepSeek-V3 / Kimi-K2 (multi-head latent attention), Gemma 3,
// Phi-3 / Phi-4, and the text towers of the Gemma 3, Qwen2.5-VL, Qwen3-VL and Mistral 3 vision-language
// models). Only what the forward pass needs is kept; anything the forward pass cannot honour is rejected
// by fromJson() rather than silently ignored, so that a KL measured on a wrong model can never be reported.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace qs::io {
class Checkpoint;
}

namespace qs::model {

enum class RopeScalingType { None, Linear, Llama3, LongRope, Yarn };

struct RopeScaling {
    RopeScalingType type = RopeScalingType::None;
    double factor = 1.0;
    double lowFreqFactor = 1.0;                // llama3 only
    double highFreqFactor = 4.0;               // llama3 only
    int originalMaxPositionEmbeddings = 8192;  // llama3, longrope and yarn
    // LongRoPE (Phi-3.5 / Phi-4): inv_freq[i] is divided by shortFactor[i], or by longFactor[i] when a
    // forward call reaches beyond originalMaxPositionEmbeddings; cos and sin are scaled by attentionFactor.
    std::vector<double> shortFactor, longFactor;
    // YaRN (transformers' _compute_yarn_parameters): the rotation counts bounding the ramp between the
    // extrapolated and the interpolated frequencies, whether that range is rounded out to whole
    // dimensions (truncate), and the factor cos and sin are multiplied by (0.1 ln(factor) + 1 unless given).
    double betaFast = 32.0;
    double betaSlow = 1.0;
    bool truncate = true;
    double attentionFactor = 1.0;
    // YaRN's mscale and mscale_all_dim (DeepSeek's keys; 0: absent). transformers' attention factor is
    // get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) when both are set, and DeepSeek-V3's
    // attention multiplies its softmax scale by get_mscale(factor, mscale_all_dim)² (LatentAttention::scoreFactor).
    double mscale = 0.0;
    double mscaleAllDim = 0.0;
};

// The Hugging Face names of a sparse MoE block, relative to the layer ("mlp.gate.weight",
// "mlp.experts.3.up_proj.weight"): each architecture spells them its own way (moeNamesOf()).
struct MoeNames {
    std::string block;  // "mlp" (Qwen3-MoE, gpt-oss), "block_sparse_moe" (Mixtral)
    std::string gate;   // the expert's gate projection: "gate_proj", "w1"; gpt-oss: "gate_up_proj", gate and up fused
    std::string up;     // "up_proj", "w3"; empty when gate holds both (gpt-oss: rows 2i gate_i, 2i + 1 up_i)
    std::string down;   // "down_proj", "w2"
    std::string routerName = "gate";  // "gate"; gpt-oss: "router"
    std::string shared = {};          // the shared expert: "shared_experts" (GLM-4.5); empty: the model has none
    bool sharedGate = false;          // Qwen3.5-MoE: sharedExpertGate() scales the shared expert's output

    std::string router() const { return block + "." + routerName; }  // "mlp.gate"
    // GLM's e_score_correction_bias, a parameter of the router: "mlp.gate.e_score_correction_bias".
    std::string routerScoreBias() const { return router() + ".e_score_correction_bias"; }
    std::string sharedExpert() const { return block + "." + shared + "."; }  // "mlp.shared_experts."
    // Qwen3.5-MoE's gate of the shared expert, a [1, hidden] linear: "mlp.shared_expert_gate".
    std::string sharedExpertGate() const { return block + "." + shared + "_gate"; }
    bool fusedGateUp() const { return up.empty(); }
    std::string experts() const { return block + ".experts."; }                      // "mlp.experts."
    std::string expert(int e) const { return experts() + std::to_string(e) + "."; }  // "mlp.experts.3."
};

// The mixture of experts of Qwen3-MoE / Mixtral: a router picks numExpertsPerToken of numExperts SwiGLU
// experts per token (softmax over all experts, then top-k, renormalised when normTopkProb), and the
// block's output is the weighted sum of the chosen experts' outputs. numExperts == 0: a dense model.
// The experts' activation: SwiGLU, or gpt-oss's clamped one on the interleaved gate_up output:
// g = min(gate, limit), u = clamp(up, -limit, limit), out = (u + 1) * g * sigmoid(alpha * g).
enum class ExpertActivation { Swiglu, ClampedSwiglu };

// How the router scores experts: softmax over all of them (Qwen3-MoE, Mixtral, gpt-oss), or sigmoid scores
// chosen with a correction bias among the best expert groups (GLM-4.5, DeepSeek-V3: MoeConfig's fields).
// Llama 4's (SigmoidScalesInput): the top-k logits choose, and each chosen expert reads its input times the
// sigmoid of its logit (its output is summed unweighted).
enum class RouterScoring { Softmax, SigmoidGrouped, SigmoidScalesInput };

struct MoeConfig {
    int numExperts = 0;
    int numExpertsPerToken = 0;
    int expertIntermediateSize = 0;  // moe_intermediate_size (Qwen3-MoE); intermediate_size (Mixtral)
    bool normTopkProb = true;        // Mixtral always renormalises; Qwen3-MoE as norm_topk_prob says
    int sparseStep = 1;              // decoder_sparse_step: layer i is sparse when (i + 1) % step == 0
    std::vector<int> denseLayers;    // mlp_only_layers: dense MLP (intermediate_size) whatever the step
    MoeNames names;
    ExpertActivation activation = ExpertActivation::Swiglu;
    float swigluLimit = 7.0f;    // gpt-oss: swiglu_limit
    float swigluAlpha = 1.702f;  // gpt-oss: fixed in GptOssExperts
    // gpt-oss: the experts are stored stacked, "mlp.experts.gate_up_proj" [E, hidden, 2I] (+ "_bias" [E, 2I])
    // and "mlp.experts.down_proj" [E, I, hidden], x @ W; the forward pass still sees one Linear per expert.
    bool stackedExperts = false;
    // GLM-4.5's router (RouterScoring::SigmoidGrouped): experts split into numGroups groups, of which each
    // token keeps the topkGroups whose two best biased scores sum highest; the chosen sigmoid scores are
    // renormalised (normTopkProb) and multiplied by routedScalingFactor.
    RouterScoring scoring = RouterScoring::Softmax;
    int numGroups = 1;   // n_group
    int topkGroups = 1;  // topk_group
    double routedScalingFactor = 1.0;
    int sharedExpertIntermediateSize = 0;  // moe_intermediate_size * n_shared_experts; 0: no shared expert
    int firstDenseLayers = 0;              // first_k_dense_replace: layers below it keep the dense MLP
    // Qwen3.5-MoE: the shared expert's output is scaled by sigmoid(names.sharedExpertGate()(x)).
    bool sharedExpertGate = false;
};

// DeepSeek-V3's multi-head latent attention (transformers' DeepseekV3Attention), active when kvLoraRank > 0:
//   q = q_b_proj(rms(q_a_proj(x))) with qLoraRank, else q_proj(x); per head [nope | rope]
//   [c | k_rot] = kv_a_proj_with_mqa(x); [k_nope | v] per head = kv_b_proj(rms(c))
//   k = [k_nope | rope(k_rot)], k_rot one head that every head shares; q = [q_nope | rope(q_rot)]
// RoPE rotates only the rope parts (qkRopeHeadDim wide); with ropeInterleave their pairs are adjacent
// elements (transformers' apply_rotary_pos_emb_interleave), else rotate_half. Scores scale by
// (nope + rope)^-1/2 times YaRN's mscale² (scoreFactor). Values are vHeadDim wide per head.
struct LatentAttention {
    int qLoraRank = 0;  // q_lora_rank; 0 (null in config.json): q_proj
    int kvLoraRank = 0;
    int qkNopeHeadDim = 0;
    int qkRopeHeadDim = 0;
    int vHeadDim = 0;
    bool ropeInterleave = true;
    // What the scores' (nope + rope)^-1/2 is multiplied by: YaRN's get_mscale(factor, mscale_all_dim)² when
    // rope_scaling sets mscale_all_dim, else 1 (DeepseekV3Attention.scaling; latentScoreFactor).
    double scoreFactor = 1.0;

    bool active() const { return kvLoraRank > 0; }
    int qkHeadDim() const { return qkNopeHeadDim + qkRopeHeadDim; }
};

// Qwen3.5's Gated DeltaNet linear attention (gated_delta_net.h), on the layers `layers` marks (layer_types'
// linear_attention); the other layers run the gated full attention (ModelConfig::attentionOutputGate).
struct LinearAttentionConfig {
    int numKeyHeads = 0;       // linear_num_key_heads
    int numValueHeads = 0;     // linear_num_value_heads: a multiple of the key heads
    int keyHeadDim = 0;        // linear_key_head_dim
    int valueHeadDim = 0;      // linear_value_head_dim
    int convKernel = 0;        // linear_conv_kernel_dim
    std::vector<bool> layers;  // true: a linear_attention layer; empty: none

    bool active() const { return !layers.empty(); }
    int keyDim() const { return numKeyHeads * keyHeadDim; }
    int valueDim() const { return numValueHeads * valueHeadDim; }
    int convDim() const { return 2 * keyDim() + valueDim(); }  // in_proj_qkv's rows: q, k, v
};

// The linears a layer's attention is made of (attention_linears.h names and shapes them).
enum class AttentionLayout {
    QueryKeyValue,       // q_proj, k_proj, v_proj, o_proj (fused or not)
    Latent,              // DeepSeek without q_lora_rank: q_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj
    LatentLowRankQuery,  // DeepSeek: q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj
    // Qwen3.5's linear attention: linear_attn.in_proj_qkv, in_proj_z, out_proj (quantized) and the per-head
    // in_proj_b, in_proj_a (kept dense, as a router is)
    GatedDeltaNet,
};

// A projection the checkpoint stores fused: `fused` ("self_attn.qkv_proj") holds the parts' rows one after
// the other, in the order of `parts` (module, rows): q, k, v; gate, up.
struct FusedProjection {
    std::string fused;
    std::vector<std::pair<std::string, int>> parts;
};

enum class Activation { Silu, GeluTanh };  // the gated MLP's activation: SiLU, or gelu_pytorch_tanh (Gemma)

// How an architecture's decoder layer departs from the Llama shape, as data the layer code reads
// (filled by fromJson from model_type), so that no layer code asks which family it runs.
struct Architecture {
    // Where the text decoder's tensors live: "model." ("model.layers.N.", "model.embed_tokens"), or the
    // text tower of a vision-language model ("model.language_model.", older exports "language_model.model.").
    std::string tensorPrefix = "model.";
    // The lm_head when untied: "lm_head.weight" (older VLM exports: "language_model.lm_head.weight").
    std::string lmHead = "lm_head.weight";
    // RMSNorm scales by (normOffset + w): 0 for Llama, 1 for Gemma's x·(1 + w). Every norm of the model.
    float normOffset = 0.0f;
    // The Hugging Face names of a layer's norms. preMlpNorm runs before the MLP; attentionOutputNorm and
    // mlpOutputNorm (Gemma's sandwich norms, empty: none) normalise a sub-block's output before the
    // residual add — they are not foldable into a linear (AWQ folds only into inputNorm / preMlpNorm).
    std::string inputNorm = "input_layernorm";
    std::string preMlpNorm = "post_attention_layernorm";
    std::string attentionOutputNorm;
    std::string mlpOutputNorm;
    Activation activation = Activation::Silu;
    // Checkpoints whose vision tower and projector are copied through untouched (a VLM's): prefixes.
    std::vector<std::string> passThroughPrefixes;
    // Projections the checkpoint stores fused (Phi-3: "self_attn.qkv_proj" = q, k, v rows stacked;
    // "mlp.gate_up_proj" = gate rows, then up rows). Empty: stored apart. Reading splits them into the
    // usual linears; every export writes them fused again.
    std::string fusedQkv;
    std::string fusedGateUp;
    // gpt-oss: a learned logit per head ("self_attn.sinks") joins each softmax's denominator, with no value.
    bool attentionSinks = false;
};

// The projections `arch` stores fused and their parts' modules in row order ({"self_attn.qkv_proj",
// {q_proj, k_proj, v_proj}}); ModelConfig::fusedProjections adds the rows of each part.
std::vector<std::pair<std::string, std::vector<std::string>>> fusedModules(const Architecture& arch);

// Llama 4's attention (llama4_text): what its RoPE and NoPE layers do beyond Llama's. Inactive (the default)
// for every other family.
struct Llama4Attention {
    // Per layer: whether it rotates (no_rope_layers[i] == 1). RoPE layers rotate interleaved pairs (2i, 2i + 1)
    // as transformers' complex apply_rotary_emb, then L2-normalise each q and k head without a weight when
    // l2QkNorm (use_qk_norm), and see only the keys of their own chunk of chunkSize positions (0: all) when
    // chunked (layer_types "chunked_attention"). NoPE layers scale their queries at position p by
    // log1p(floor((p + 1) / floorScale)) * attnScale + 1 when temperatureTuning.
    std::vector<bool> rope;
    std::vector<bool> chunked;
    int chunkSize = 0;
    bool l2QkNorm = false;
    bool temperatureTuning = false;
    double floorScale = 8192.0;
    double attnScale = 0.1;

    bool active() const { return !rope.empty(); }
};

struct ModelConfig {
    // "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "gemma3_text"; a VLM keeps its own
    // ("gemma3", "qwen2_5_vl", "qwen3_vl", "mistral3") while the fields describe its text tower.
    std::string modelType;
    int hiddenSize = 0;
    int intermediateSize = 0;
    int numLayers = 0;
    int numHeads = 0;
    int numKvHeads = 0;  // GQA: numHeads is a multiple of it
    int headDim = 0;     // hidden_size / num_attention_heads unless config says head_dim
    int vocabSize = 0;
    int maxPositionEmbeddings = 0;
    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;
    RopeScaling ropeScaling;
    int rotaryDim = 0;  // partial_rotary_factor: the first rotaryDim of each head rotate; 0 = all of it
    bool tieWordEmbeddings = false;
    bool qkvBias = false;     // q/k/v projections carry a bias (Qwen2, attention_bias)
    bool outputBias = false;  // o_proj carries a bias (Llama's attention_bias covers it too)
    bool mlpBias = false;
    bool qkNorm = false;    // per-head RMSNorm of q and k before RoPE (Qwen3)
    int slidingWindow = 0;  // 0 = full causal attention; else key j is seen from i when i - j < window

    MoeConfig moe;  // numExperts == 0 for the dense families
    // DeepSeek-V3's latent attention; headDim is then its q/k head (nope + rope) and numKvHeads numHeads.
    LatentAttention mla;
    Llama4Attention llama4;  // active for llama4_text / llama4 only
    // Qwen3.5: the Gated DeltaNet layers, and the full attention's output gate (q_proj gives each head its
    // query, then as many gate logits; the attention output is multiplied by their sigmoid before o_proj).
    LinearAttentionConfig linearAttention;
    bool attentionOutputGate = false;

    Architecture arch;                // the layer's shape beyond Llama's (Gemma's norms, activation, prefix)
    double embeddingScale = 1.0;      // embeddings are multiplied by it (Gemma: sqrt(hidden) in the embedding dtype)
    double queryPreAttnScalar = 0.0;  // attention scores scale by its -1/2 power; 0: head_dim's (Gemma sets it)
    // Per-layer attention (Gemma's layer_types): sliding layers see slidingWindow keys and rotate with
    // ropeLocalTheta (no scaling); the others attend to everything with ropeTheta and ropeScaling.
    // Empty: every layer uses slidingWindow and the global RoPE (Mistral, Llama).
    std::vector<bool> slidingLayers;
    double ropeLocalTheta = 0.0;
    // Qwen-VL's multimodal RoPE (rope_scaling.mrope_section, mrope_interleaved): how the rotary
    // frequencies split over the temporal / height / width positions. Text tokens have three equal
    // positions, so the text tower rotates as plain RoPE; kept for the GGUF export (rope sections).
    std::vector<int> mropeSection;
    bool mropeInterleaved = false;
    int deepstackLayers =
        0;  // Qwen3-VL: vision layers whose features are added into the first decoder layers (image tokens only)

    // The window of layer `layer` (0: full causal) and whether it rotates with the local RoPE base.
    int windowOf(int layer) const;
    bool usesLocalRope(int layer) const;
    // "model.layers.3." (or the text tower's prefix): where layer `layer`'s tensors are named.
    std::string layerPrefix(int layer) const { return arch.tensorPrefix + "layers." + std::to_string(layer) + "."; }

    int qDim() const { return numHeads * headDim; }
    int rotaryDims() const { return mla.active() ? mla.qkRopeHeadDim : rotaryDim > 0 ? rotaryDim : headDim; }
    // Each head's values and attention output: headDim, or the latent attention's v_head_dim.
    int valueHeadDim() const { return mla.active() ? mla.vHeadDim : headDim; }
    // Layer `layer`'s attention; -1: the full attention layers' (every layer's but in a hybrid model).
    AttentionLayout attentionLayout(int layer = -1) const;
    bool isLinearAttentionLayer(int layer) const {
        return layer >= 0 && static_cast<std::size_t>(layer) < linearAttention.layers.size() &&
               linearAttention.layers[static_cast<std::size_t>(layer)];
    }
    bool isMoe() const { return moe.numExperts > 0; }
    // Whether decoder layer `layer` holds a sparse MoE block (router + experts) instead of a dense MLP.
    bool isMoeLayer(int layer) const;
    int kvDim() const { return numKvHeads * headDim; }

    // The projections this architecture's checkpoints store fused (none for Llama's layout).
    std::vector<FusedProjection> fusedProjections() const;

    // Throws qs::Error naming `source` when a field is missing, inconsistent or unsupported.
    static ModelConfig fromJson(const nlohmann::json& config, const std::string& source = "config.json");
    // fromJson of the checkpoint's config.json, errors naming that file.
    static ModelConfig fromCheckpoint(const io::Checkpoint& checkpoint);
    // Throws qs::Error naming `source` when the model is a mixture of experts: for the steps that
    // only know the seven linears of a dense layer (`what`, e.g. "calibration").
    void requireDense(const std::string& source, const std::string& what) const;
    // Checks the invariants the forward pass relies on (for configs built in code); throws qs::Error.
    void validate(const std::string& source = "model config") const;
};

}  // namespace qs::model
