#pragma once
// Private to qs_io: transformers 5's fused experts (Qwen3MoeExperts, Glm4MoeExperts, ...: one tensor per
// projection for all experts of a layer) read as the per-expert tensors of transformers 4:
//   <block>.experts.gate_up_proj [E, 2I, H]  ->  <block>.experts.<e>.gate_proj.weight [I, H] (rows 0..I-1 of
//                                                expert e) and <block>.experts.<e>.up_proj.weight (rows I..2I-1)
//   <block>.experts.down_proj    [E, H, I]   ->  <block>.experts.<e>.down_proj.weight [H, I]
// (transformers' forward: linear(x, gate_up_proj[e]).chunk(2) -> gate, up; linear(., down_proj[e])).
// Each expert's rows are a contiguous run of the fused tensor's bytes, so a twin is the same bytes under
// another name: reading the fused checkpoint and its per-expert twin gives the same values, bit for bit.
// Float tensors only: quantized fused experts (FP8 with "_scale_inv" blocks) are not split.
#include <string>
#include <vector>

#include "qs/io/tensor.h"

namespace qs::io::detail {

// The family's per-expert module names ("gate_proj", "up_proj", "down_proj"; Mixtral "w1", "w3", "w2").
struct ExpertModuleNames {
    std::string gate, up, down;
};

// Whether `name` is a fused expert tensor ("...experts.gate_up_proj", "...experts.down_proj").
bool isFusedExpertTensor(const std::string& name);

// The per-expert twins of one fused tensor, at its offsets; throws qs::Error naming `file` when its
// shape cannot be split (rank, an odd gate_up, a packed dtype).
std::vector<TensorInfo> splitFusedExperts(const TensorInfo& fused, const ExpertModuleNames& names,
                                          const std::string& file);

}  // namespace qs::io::detail
