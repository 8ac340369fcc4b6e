#pragma once
// Private to qs_io: what Checkpoint::open makes of a GGUF file. Its tensors under Hugging Face names
// with row-major shapes (and the llama q/k row order noted, TensorInfo::ropeInterleavedHeads), and a
// config.json synthesized from the metadata, so that everything above io sees a GGUF like any
// other checkpoint.
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/gguf_file.h"

namespace qs::io::detail {

struct GgufCheckpoint {
    std::vector<TensorInfo> tensors;  // same data as file.tensors(), renamed and reshaped
    nlohmann::json config;            // as config.json would say it
    nlohmann::json quantConfig;       // {"quant_method": "gguf", ...} when a tensor is quantized, else {}
    // Tensors (index into `tensors`) whose every value reads back with this added: gemma3's norms, which
    // llama.cpp's converter stores as 1 + w (Checkpoint keeps the shifted values, a few per layer, in memory).
    std::vector<std::pair<std::size_t, float>> valueShifts;
    // deepseek2's kv_b_proj [heads * (nope + v), kv_lora_rank], which llama.cpp stores split: attn_k_b
    // [heads, kv_lora_rank, nope] (each head's key rows transposed) and attn_v_b [heads, v, kv_lora_rank]. The
    // tensor (index into `tensors`) is rebuilt at opening from the two (Checkpoint keeps it in memory): byte for
    // byte in their type when both are F32, F16 or BF16, else decoded to F32.
    struct LatentJoin {
        std::size_t index = 0;
        TensorInfo keys, values;  // the file's attn_k_b and attn_v_b
    };
    std::vector<LatentJoin> latentJoins;
};

GgufCheckpoint describeGgufCheckpoint(const GgufFile& file);

// config.json's fields from the metadata (gguf_config.cpp): model_type and architectures, sizes,
// heads, head_dim, rope theta and scaling, rms eps, vocabulary, tied embeddings, context length.
nlohmann::json hfConfigOfGguf(const GgufFile& file);

// The one .gguf file of a folder that holds no safetensors, nullopt when it has none; throws
// qs::Error when it holds several.
std::optional<std::filesystem::path> singleGgufIn(const std::filesystem::path& dir);

}  // namespace qs::io::detail
