#pragma once
// The GGUF metadata keys llama.cpp's loader reads (llama-arch.cpp's LLM_KV_NAMES; gguf-py's Keys), in one
// table that the GGUF writer (pipeline's gguf_model_metadata.cpp) and the config a GGUF reads back as
// (io's gguf_config.cpp) both use. Per-architecture keys are "<general.architecture>.<suffix>": archKey.
#include <string>
#include <string_view>

namespace qs::io::gguf_keys {

inline constexpr const char* kArchitecture = "general.architecture";
inline constexpr const char* kType = "general.type";
inline constexpr const char* kName = "general.name";
inline constexpr const char* kFileType = "general.file_type";  // llama_ftype (qs/io/llama_ftype.h)
inline constexpr const char* kBosTokenId = "tokenizer.ggml.bos_token_id";
inline constexpr const char* kEosTokenId = "tokenizer.ggml.eos_token_id";

// Suffixes of the per-architecture keys.
inline constexpr const char* kVocabSize = "vocab_size";
inline constexpr const char* kContextLength = "context_length";
inline constexpr const char* kEmbeddingLength = "embedding_length";
inline constexpr const char* kBlockCount = "block_count";
inline constexpr const char* kFeedForwardLength = "feed_forward_length";
inline constexpr const char* kHeadCount = "attention.head_count";
inline constexpr const char* kHeadCountKv = "attention.head_count_kv";
inline constexpr const char* kKeyLength = "attention.key_length";
inline constexpr const char* kValueLength = "attention.value_length";
inline constexpr const char* kRmsEpsilon = "attention.layer_norm_rms_epsilon";
inline constexpr const char* kSlidingWindow = "attention.sliding_window";
inline constexpr const char* kSlidingWindowPattern = "attention.sliding_window_pattern";  // llama4: its chunked layers
inline constexpr const char* kRopeDimensionCount = "rope.dimension_count";
inline constexpr const char* kRopeDimensionSections = "rope.dimension_sections";
inline constexpr const char* kRopeFreqBase = "rope.freq_base";
inline constexpr const char* kRopeFreqBaseSwa = "rope.freq_base_swa";
inline constexpr const char* kRopeScalingType = "rope.scaling.type";
inline constexpr const char* kRopeScalingFactor = "rope.scaling.factor";
inline constexpr const char* kRopeScalingAttnFactor = "rope.scaling.attn_factor";
inline constexpr const char* kRopeScalingOriginalContext = "rope.scaling.original_context_length";
inline constexpr const char* kExpertCount = "expert_count";
inline constexpr const char* kExpertUsedCount = "expert_used_count";
inline constexpr const char* kExpertFeedForwardLength = "expert_feed_forward_length";
inline constexpr const char* kInterleaveMoeLayerStep = "interleave_moe_layer_step";  // llama4: every n-th layer MoE
// The sigmoid router of glm4moe / deepseek2 (llama.cpp's LLM_KV_EXPERT_* and LEADING_DENSE_BLOCK_COUNT).
inline constexpr const char* kExpertSharedCount = "expert_shared_count";
inline constexpr const char* kExpertWeightsScale = "expert_weights_scale";
inline constexpr const char* kExpertWeightsNorm = "expert_weights_norm";
inline constexpr const char* kExpertGatingFunc = "expert_gating_func";  // 1 softmax, 2 sigmoid
inline constexpr const char* kExpertGroupCount = "expert_group_count";
inline constexpr const char* kExpertGroupUsedCount = "expert_group_used_count";
inline constexpr const char* kLeadingDenseBlockCount = "leading_dense_block_count";
inline constexpr int kGatingSigmoid = 2;
inline constexpr const char* kDeepstackLayers = "n_deepstack_layers";
// The next-token-prediction (MTP) layers that llama.cpp's glm4moe / deepseek2 count in block_count, after the
// decoder's (LLM_KV_NEXTN_PREDICT_LAYERS).
inline constexpr const char* kNextnPredictLayers = "nextn_predict_layers";
// deepseek2's multi-head latent attention: the low ranks, and each head's query/key and value widths after
// kv_b (key_length / value_length are then those of the latent's MQA head: kv_lora_rank + rope, kv_lora_rank).
inline constexpr const char* kQLoraRank = "attention.q_lora_rank";
inline constexpr const char* kKvLoraRank = "attention.kv_lora_rank";
inline constexpr const char* kKeyLengthMla = "attention.key_length_mla";
inline constexpr const char* kValueLengthMla = "attention.value_length_mla";
// 0.1 · mscale_all_dim, as llama.cpp's converter writes it (its deepseek2 divides by 0.1 on reading).
inline constexpr const char* kRopeScalingYarnLogMultiplier = "rope.scaling.yarn_log_multiplier";
// qwen35 / qwen35moe's Gated DeltaNet (llama.cpp's LLM_KV_SSM_*, as its Qwen3-Next converter writes them) and
// the full attention layers' period; the MoE's shared expert width.
inline constexpr const char* kSsmConvKernel = "ssm.conv_kernel";
inline constexpr const char* kSsmStateSize = "ssm.state_size";
inline constexpr const char* kSsmGroupCount = "ssm.group_count";
inline constexpr const char* kSsmTimeStepRank = "ssm.time_step_rank";
inline constexpr const char* kSsmInnerSize = "ssm.inner_size";
inline constexpr const char* kFullAttentionInterval = "full_attention_interval";
inline constexpr const char* kExpertSharedFeedForwardLength = "expert_shared_feed_forward_length";

// The tensors that carry RoPE's factors (Llama 3's, LongRoPE's), outside the layers.
inline constexpr const char* kRopeFreqs = "rope_freqs.weight";
inline constexpr const char* kRopeFactorsLong = "rope_factors_long.weight";
inline constexpr const char* kRopeFactorsShort = "rope_factors_short.weight";

inline std::string archKey(std::string_view arch, const char* suffix) { return std::string(arch) + "." + suffix; }

}  // namespace qs::io::gguf_keys
