#pragma once
// Private to qs_pipeline: the GGUF metadata of a model (general.* and the architecture's keys) as
// llama.cpp's converter writes them for a Hugging Face config (convert_hf_to_gguf.py's
// set_gguf_parameters and LlamaModel's), and the rope_freqs tensor of Llama-3's rope scaling.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "qs/architectures/family.h"
#include "qs/io/gguf_value.h"
#include "qs/model/model_config.h"

namespace qs::pipeline {

// Keys: general.architecture/type/name/file_type, {arch}.context_length, embedding_length,
// block_count, feed_forward_length, vocab_size, attention.head_count(_kv), key/value_length,
// layer_norm_rms_epsilon, rope.dimension_count, rope.freq_base and a linear rope scaling.
// The family says which keys its architecture adds (Family::ggufMetadata).
io::GgufMetadata ggufModelMetadata(const model::ModelConfig& config, const architectures::Family& family,
                                   const std::string& name, int fileType);

// Llama-3's per-frequency rope factors (rope_freqs.weight, head_dim / 2 values) when the config has
// llama3 rope scaling, else nullopt.
std::optional<std::vector<float>> llama3RopeFactors(const model::ModelConfig& config);

// LongRoPE's factors as llama.cpp's phi3 reads them: rope_factors_long.weight and rope_factors_short.weight
// (rotary dimensions / 2 values each); empty without LongRoPE.
std::vector<std::pair<std::string, std::vector<float>>> longRopeFactors(const model::ModelConfig& config);

}  // namespace qs::pipeline
