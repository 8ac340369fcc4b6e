#pragma once
// Private to qs_io: the names of a GGUF architecture's tensors read back as Hugging Face's, where they
// depend on the architecture (gguf_names.h holds the table every architecture shares): Gemma 3's
// sandwich norms, Phi-3's fused gate/up, and the sparse MoE blocks whose experts llama.cpp's converter
// stacks into one [experts, out, in] tensor per projection. Each stacked tensor comes back as one
// tensor per expert whose bytes are a slice of the stacked ones (an expert is a run of whole rows, so
// block types slice too): nothing is copied.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qs/architectures/family.h"
#include "qs/io/gguf_file.h"

namespace qs::io::detail {

// A MoE block as the Hugging Face checkpoint names it, relative to its layer.
struct GgufExpertNames {
    int count = 0;                // <arch>.expert_count; 0: a dense model
    std::string block;            // "mlp" (qwen3moe, gpt-oss), "block_sparse_moe" (llama with experts: Mixtral)
    std::string gate, up, down;   // "gate_proj", "up_proj", "down_proj"; Mixtral's "w1", "w3", "w2"
    std::string router = "gate";  // the router's module in the block: gpt-oss's "router"
};

struct GgufReadNames {
    std::string arch;                               // general.architecture
    const architectures::Family* family = nullptr;  // the family it reads back as; nullptr: none we run
    GgufExpertNames experts;                        // count 0 unless the architecture's experts are read back
    float normShift = 0.0f;  // added to every norm read: -1 for gemma3 and qwen35, whose converter stores 1 + w
};

// What `file`'s architecture needs; throws qs::Error naming the file when its expert count is not a count.
GgufReadNames ggufReadNames(const GgufFile& file);

// The Hugging Face name of a GGUF tensor that is not a stacked expert tensor, or nullopt.
std::optional<std::string> hfNameIn(const GgufReadNames& names, std::string_view ggufName);

// Whether a GGUF tensor (under its GGUF name) is a norm's weight that normShift applies to: a vector of
// floats named "*norm.weight" but qwen35's ssm_norm, as convert_hf_to_gguf adds 1 to (anything else is left as
// stored).
bool isGgufNorm(const TensorInfo& t);

// The experts of a stacked tensor (blk.N.ffn_{gate,up,down}_exps.weight [E, out, in]) as one 2-D tensor
// each, or of its stacked biases (gpt-oss's blk.N.ffn_*_exps.bias [E, out]) as one vector each, under their
// Hugging Face names; nullopt when `stacked` is no such tensor or the architecture's experts are not read
// back. Throws qs::Error naming `file` and the tensor when its shape is not [expert_count, out(, in)].
std::optional<std::vector<TensorInfo>> splitStackedExperts(const TensorInfo& stacked, const GgufReadNames& names,
                                                           const std::string& file);

}  // namespace qs::io::detail
