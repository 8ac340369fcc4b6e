#pragma once
// llama.cpp's tensor names (gguf-py constants.py, MODEL_TENSOR -> TENSOR_NAMES) beside the Hugging Face
// names, in one table that the GGUF writer (pipeline) and reader (io) share:
//   token_embd.weight           <-> model.embed_tokens.weight
//   output_norm.weight          <-> model.norm.weight
//   output.weight               <-> lm_head.weight
//   blk.N.attn_norm.weight      <-> model.layers.N.input_layernorm.weight
//   blk.N.attn_{q,k,v}.*        <-> model.layers.N.self_attn.{q,k,v}_proj.*
//   blk.N.attn_output.*         <-> model.layers.N.self_attn.o_proj.*
//   blk.N.attn_{q,k}_norm.weight<-> model.layers.N.self_attn.{q,k}_norm.weight
//   blk.N.ffn_norm.weight       <-> model.layers.N.post_attention_layernorm.weight
//   blk.N.ffn_{gate,up,down}.*  <-> model.layers.N.mlp.{gate,up,down}_proj.*
// A family overrides the per-layer modules it names otherwise (Family::ggufNames: Gemma 3's sandwich
// norms, Phi-3's fused gate/up, gpt-oss's sinks). The MoE tensors are named by the constants below.
#include <optional>
#include <string>
#include <string_view>

#include "qs/architectures/family.h"

namespace qs::architectures {

// A sparse MoE block's tensors in llama.cpp: the router and each projection of all experts stacked.
inline constexpr std::string_view kGgufRouter = "ffn_gate_inp";
inline constexpr std::string_view kGgufExpertsGate = "ffn_gate_exps";
inline constexpr std::string_view kGgufExpertsUp = "ffn_up_exps";
inline constexpr std::string_view kGgufExpertsDown = "ffn_down_exps";

// The GGUF name of a Hugging Face tensor of the text decoder under "model." ("model.layers.3.self_attn.q_proj.weight"
// -> "blk.3.attn_q.weight"), with `family`'s overrides (nullptr: the shared table only); nullopt when
// llama.cpp has no such tensor.
std::optional<std::string> ggufTensorName(const Family* family, std::string_view hfName);
// The Hugging Face name of a GGUF tensor, with `family`'s overrides; nullopt when it has none
// (rope_freqs.weight, the stacked experts: io's reader splits those).
std::optional<std::string> hfTensorName(const Family* family, std::string_view ggufName);

}  // namespace qs::architectures
