#pragma once
// Private to qs_io: what Checkpoint::open makes of a GGUF file. Its tensors under Hugging Face names
// with row-major shapes (and the llama q/k row order noted, TensorInfo::ropeInterleavedHeads), and a
// config.json synthesized from the metadata, so that everything above io sees a GGUF like any
// other checkpoint.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/gguf_file.h"

namespace qs::io::detail {

// Qwen3.5's value heads, which llama.cpp's converter moves from grouped (transformers: value head h reads key head
// h / perKey) to tiled order (h % keyHeads), as runs of `run` rows from row `offset`, or with `columns` as each
// row's runs of `run` columns from column `offset`.
struct GgufValueHeads {
    int keyHeads = 0, perKey = 0;
    std::int64_t run = 0, offset = 0;
    bool columns = false;
};

// One tensor (index into GgufCheckpoint::tensors) read back through the inverse of a converter transform.
struct GgufRewrite {
    std::size_t index = 0;
    float shift = 0.0f;         // added to every value: norms stored as 1 + w (gemma3, qwen35)
    bool logOfNegated = false;  // A_log from ssm_a = -exp(A_log), the float whose -exp gives ssm_a back
    std::optional<GgufValueHeads> groupValueHeads;  // value heads from tiled back to grouped order
    std::vector<std::int64_t> shape;                // the Hugging Face shape, when it has unit dims more (conv1d)
};

// `data`, `rows` rows of `rowBytes` bytes, with the value heads moved from tiled back to grouped order; `offset`
// and `run` count rows, or with `columns` bytes within a row. False, `data` untouched, when the heads' runs do not
// fit in the tensor (a file whose shapes disagree with its ssm.* keys).
bool groupValueHeads(std::vector<std::byte>& data, std::int64_t rows, std::int64_t rowBytes, const GgufValueHeads& v,
                     std::int64_t offset, std::int64_t run);

// The float whose -std::exp gives `ssmA` back (nearest log(-ssmA) first): Qwen3.5's A_log.
float aLogOfSsmA(float ssmA);

struct GgufCheckpoint {
    std::vector<TensorInfo> tensors;       // same data as file.tensors(), renamed and reshaped
    std::vector<std::string> sourceNames;  // per tensors[i]: the file's tensor it is read from (its GGUF name)
    nlohmann::json config;                 // as config.json would say it
    nlohmann::json quantConfig;            // {"quant_method": "gguf", ...} when a tensor is quantized, else {}
    // Tensors stored transformed by llama.cpp's converter, read back as the Hugging Face weight (Checkpoint keeps
    // the computed values, a few small tensors per layer and Qwen3.5's reordered linears, in memory).
    std::vector<GgufRewrite> rewrites;
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
