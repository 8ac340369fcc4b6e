#pragma once
// The two names of a GGUF checkpoint's tensors: the file's own (llama.cpp's "blk.0.attn_q.weight") and
// the Hugging Face name the checkpoint shows it under ("model.layers.0.self_attn.q_proj.weight"), as
// Checkpoint::open renames them (gguf_checkpoint.h), for views that show both.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/gguf_file.h"

namespace qs::io {

struct GgufTensorName {
    std::string gguf;  // the file's tensor
    std::string hf;    // the checkpoint's tensor read from it
};

// One entry per checkpoint tensor, in file order. A stacked expert tensor (blk.N.ffn_gate_exps) gives one
// entry per expert, all with its GGUF name; DeepSeek's kv_b_proj is read from attn_k_b and attn_v_b and
// listed under attn_k_b. A GGUF tensor the checkpoint does not rename keeps its name as both.
std::vector<GgufTensorName> ggufTensorNames(const GgufFile& file);

// The checkpoint tensor read from the file's tensor `ggufName` (a stacked one's first expert), or nullopt.
std::optional<std::string> hfNameInGguf(const std::vector<GgufTensorName>& names, std::string_view ggufName);

}  // namespace qs::io
