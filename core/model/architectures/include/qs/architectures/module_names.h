#pragma once
// The Hugging Face names of a decoder layer's modules, relative to the layer ("model.layers.N."), as every
// family that stores them apart spells them (Llama's layout); the families' differences are data
// (Family: fused projections, norm roles, MoE names). One place for what twenty files spelled.
#include <array>

namespace qs::architectures::modules {

inline constexpr const char* kAttention = "self_attn.";  // the attention block's prefix
inline constexpr const char* kQProj = "self_attn.q_proj";
inline constexpr const char* kKProj = "self_attn.k_proj";
inline constexpr const char* kVProj = "self_attn.v_proj";
inline constexpr const char* kOProj = "self_attn.o_proj";
inline constexpr const char* kQNorm = "self_attn.q_norm";
inline constexpr const char* kKNorm = "self_attn.k_norm";
inline constexpr const char* kSinks = "self_attn.sinks";       // gpt-oss: a parameter, not a module's weight
inline constexpr const char* kQkvProj = "self_attn.qkv_proj";  // q, k, v fused (Phi-3)
// DeepSeek-V3's multi-head latent attention: q through a low-rank pair with a norm between (or q_proj), and
// the keys and values through a shared latent (kv_a_proj_with_mqa, also carrying the rotary key), its norm
// and kv_b_proj.
inline constexpr const char* kQAProj = "self_attn.q_a_proj";
inline constexpr const char* kQANorm = "self_attn.q_a_layernorm";
inline constexpr const char* kQBProj = "self_attn.q_b_proj";
inline constexpr const char* kKvAProj = "self_attn.kv_a_proj_with_mqa";
inline constexpr const char* kKvANorm = "self_attn.kv_a_layernorm";
inline constexpr const char* kKvBProj = "self_attn.kv_b_proj";
// Qwen3.5's Gated DeltaNet (linear_attention layers).
inline constexpr const char* kInProjQkv = "linear_attn.in_proj_qkv";
inline constexpr const char* kInProjZ = "linear_attn.in_proj_z";
inline constexpr const char* kInProjB = "linear_attn.in_proj_b";
inline constexpr const char* kInProjA = "linear_attn.in_proj_a";
inline constexpr const char* kDeltaOutProj = "linear_attn.out_proj";
inline constexpr const char* kDeltaConv = "linear_attn.conv1d";
inline constexpr const char* kDeltaNorm = "linear_attn.norm";
inline constexpr const char* kDeltaALog = "linear_attn.A_log";      // a parameter
inline constexpr const char* kDeltaDtBias = "linear_attn.dt_bias";  // a parameter
inline constexpr const char* kGateProj = "mlp.gate_proj";
inline constexpr const char* kUpProj = "mlp.up_proj";
inline constexpr const char* kDownProj = "mlp.down_proj";
inline constexpr const char* kGateUpProj = "mlp.gate_up_proj";  // gate, up fused (Phi-3)
inline constexpr const char* kInputNorm = "input_layernorm";
inline constexpr const char* kPostAttentionNorm = "post_attention_layernorm";

// The seven linears of a dense layer, in the order the forward pass runs them.
inline constexpr std::array<const char*, 7> kDenseLinears{kQProj,    kKProj,  kVProj,   kOProj,
                                                          kGateProj, kUpProj, kDownProj};

}  // namespace qs::architectures::modules
