#pragma once
// The f32 weights of one decoder layer (Llama / Mistral / Qwen2 / Qwen3, and the MoE layers of
// Qwen3-MoE / Mixtral), as the forward pass uses them. Matrices are row-major [out_features,
// in_features] like the checkpoints; an empty bias or norm vector means the layer has none.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "qs/architectures/module_names.h"
#include "qs/matrix.h"
#include "qs/model/model_config.h"
#include "qs/quant/activation_quant.h"

namespace qs::model {

struct Linear {
    MatrixF weight;  // [out_features, in_features]
    VectorF bias;    // [out_features] or empty
    // What a serving engine quantizes around it (quant::QuantizedLinear's fields of the same names):
    // its input, and for k_proj / v_proj the FP8 KV cache scale of its rotated output (0: none).
    quant::ActivationQuant input;
    float cacheScale = 0.0f;

    // y = x Wᵀ + b for x [T, in_features]; one GEMM, multithreaded by Eigen.
    MatrixF operator()(const MatrixF& x) const;
};

// One SwiGLU expert of a sparse MoE block: down(silu(gate(x)) * up(x)). gpt-oss: gate holds gate_up_proj
// ([2I, hidden], rows 2i gate_i and 2i + 1 up_i, with its bias), up is empty, and the activation is clamped.
struct Expert {
    Linear gate, up, down;
};

// Qwen3.5's Gated DeltaNet (gated_delta_net.h), a linear_attention layer's token mixer. An empty conv or
// in_proj_z means none (a negative control drops it): no convolution, or the norm ungated.
struct DeltaNetWeights {
    Linear inProjQkv, inProjZ, outProj;  // linear_attn.in_proj_qkv, in_proj_z, out_proj
    Linear inProjB, inProjA;             // linear_attn.in_proj_b, in_proj_a ([value heads, hidden]; kept dense)
    MatrixF conv;                        // linear_attn.conv1d.weight as [conv channels, kernel]
    VectorF aLog, dtBias;                // linear_attn.A_log, dt_bias [value heads]
    VectorF norm;                        // linear_attn.norm.weight [value_head_dim]: x · w, no offset
};

struct LayerWeights {
    VectorF inputNorm;          // input_layernorm (Architecture::inputNorm)
    VectorF postAttentionNorm;  // the norm before the MLP: post_attention_layernorm (Gemma: pre_feedforward_layernorm)
    // Gemma's sandwich norms of the attention's and the MLP's outputs (Architecture::attentionOutputNorm,
    // mlpOutputNorm: HF post_attention_layernorm, post_feedforward_layernorm); empty otherwise.
    VectorF attentionOutputNorm, mlpOutputNorm;
    VectorF qNorm, kNorm;   // Qwen3 per-head norms of q and k ([headDim]); empty otherwise
    VectorF sinks;          // gpt-oss: self_attn.sinks, one logit per query head; empty otherwise
    Linear q, k, v, o;      // self_attn.{q,k,v,o}_proj
    Linear gate, up, down;  // mlp.{gate,up,down}_proj; empty in a sparse MoE layer

    // Which linears the attention is made of (attentionModules). DeepSeek's latent attention keeps q
    // (q_proj, without q_lora_rank) and o, leaves k and v empty and adds q_a / q_b, kv_a / kv_b and the
    // latents' norms (an empty norm: none, as a negative control drops it).
    AttentionLayout attention = AttentionLayout::QueryKeyValue;
    Linear qA, qB;             // self_attn.q_a_proj, q_b_proj (q_lora_rank)
    Linear kvA, kvB;           // self_attn.kv_a_proj_with_mqa, kv_b_proj
    VectorF qANorm, kvANorm;   // self_attn.q_a_layernorm, kv_a_layernorm
    DeltaNetWeights deltaNet;  // AttentionLayout::GatedDeltaNet (Qwen3.5's linear_attention layers)

    // A sparse MoE layer (experts non-empty) replaces gate/up/down by a router [numExperts, hidden]
    // (never quantized) and the experts, named by moeNames ("mlp.experts.3.up_proj", ...).
    Linear router;
    std::vector<Expert> experts;
    MoeNames moeNames;        // the architecture's names of the router and experts
    VectorF routerScoreBias;  // GLM's e_score_correction_bias [numExperts]; empty otherwise
    Expert sharedExpert;      // GLM's mlp.shared_experts (moeNames.shared), run on every token
    // Qwen3.5-MoE's mlp.shared_expert_gate [1, hidden] (never quantized): the shared expert's output is scaled
    // by its sigmoid. Empty: ungated.
    Linear sharedExpertGate;

    bool isMoe() const { return !experts.empty(); }
    bool hasSharedExpert() const { return isMoe() && !moeNames.shared.empty(); }
    bool isLatent() const {
        return attention == AttentionLayout::Latent || attention == AttentionLayout::LatentLowRankQuery;
    }
    bool isDeltaNet() const { return attention == AttentionLayout::GatedDeltaNet; }
    // The linears a method quantizes, in the order calibration sees them: the attention's
    // (attentionModules(attention)), then the MLP's gate, up, down for a dense layer, or each expert's gate,
    // up, down and the shared expert's for a sparse MoE layer (the router stays dense).
    std::vector<std::string> linearModules() const;

    // The seven linear modules of Llama's layer, named as in HF checkpoints ("self_attn.q_proj", ...,
    // "mlp.down_proj"); a layer's own are linearModules().
    static constexpr std::array<std::string_view, 7> kLinearModules{
        architectures::modules::kQProj,   architectures::modules::kKProj,    architectures::modules::kVProj,
        architectures::modules::kOProj,   architectures::modules::kGateProj, architectures::modules::kUpProj,
        architectures::modules::kDownProj};

    // The linear called `module`: one of the attention's modules, the dense MLP's gate / up / down (empty in
    // a MoE layer), or of a MoE layer "<block>.gate" and "<block>.experts.<e>.<gate|up|down>",
    // "<block>.<shared>.<gate|up|down>"; throws qs::Error for any other name.
    Linear& linear(std::string_view module);
    const Linear& linear(std::string_view module) const;

private:
    const Linear& attentionLinear(std::string_view module) const;
};

}  // namespace qs::model
