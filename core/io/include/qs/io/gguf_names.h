#pragma once
// llama.cpp's tensor names (gguf-py's TENSOR_NAMES) and the Hugging Face names QuantScope uses
// everywhere else, for the decoder-only architectures it runs (llama, mistral, qwen2, qwen3):
//   token_embd.weight           <-> model.embed_tokens.weight
//   output_norm.weight          <-> model.norm.weight
//   output.weight               <-> lm_head.weight
//   blk.N.attn_norm.weight      <-> model.layers.N.input_layernorm.weight
//   blk.N.attn_{q,k,v}.*        <-> model.layers.N.self_attn.{q,k,v}_proj.*
//   blk.N.attn_output.*         <-> model.layers.N.self_attn.o_proj.*
//   blk.N.attn_{q,k}_norm.weight<-> model.layers.N.self_attn.{q,k}_norm.weight
//   blk.N.ffn_norm.weight       <-> model.layers.N.post_attention_layernorm.weight
//   blk.N.ffn_{gate,up,down}.*  <-> model.layers.N.mlp.{gate,up,down}_proj.*
// Architectures: GGUF's general.architecture "llama" is Hugging Face's llama and mistral (llama.cpp's
// converter writes Mistral as llama, and Mixtral as llama with experts), "qwen2" and "qwen3" are
// themselves, "qwen3moe" is qwen3_moe, "gemma3" gemma3_text and "phi3" phi3. The names that depend on
// the architecture (Gemma's sandwich norms, Phi-3's fused gate/up, stacked experts) are mapped where a
// GGUF is opened as a checkpoint (core/io/gguf_read_names.h).
// The mapping is applied at the edge (Checkpoint::open, the GGUF exporter) so that everything
// above sees one naming.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qs::io {

struct HfArchitecture {
    std::string modelType;     // config.json model_type
    std::string architecture;  // config.json architectures[0]
};

// The Hugging Face architecture a GGUF general.architecture stands for, or nullopt when QuantScope
// does not run it.
std::optional<HfArchitecture> hfArchitectureOfGguf(std::string_view ggufArchitecture);
// The GGUF general.architecture llama.cpp uses for a config.json model_type, or nullopt.
std::optional<std::string> ggufArchitectureOfModelType(std::string_view modelType);
// Whether llama.cpp's converter interleaves the q/k rows of this GGUF architecture for its rotary
// kernel (llama's "normal" rope); the others use the Hugging Face order ("neox" rope).
bool ggufArchitecturePermutesQk(std::string_view ggufArchitecture);

// llama.cpp's name of a general.file_type (llama_ftype): "F32", "F16", "Q8_0", "Q4_K_M", ...; "type N"
// for numbers it does not know.
std::string ggufFileTypeName(std::int64_t fileType);

// The Hugging Face name of a GGUF tensor name, or nullopt when it has none (e.g. rope_freqs.weight).
std::optional<std::string> hfNameOfGgufTensor(std::string_view ggufName);
// The GGUF name of a Hugging Face tensor name, or nullopt when llama.cpp has no such tensor.
std::optional<std::string> ggufNameOfHfTensor(std::string_view hfName);

}  // namespace qs::io
