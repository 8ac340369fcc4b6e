#pragma once
// Checkpoint: a .safetensors file, a folder with model.safetensors, or a sharded folder with
// model.safetensors.index.json. Opening mmaps every shard and validates every header; no tensor
// data is read until asked. A folder without either may hold exactly one other .safetensors file
// (e.g. an adapter). The index and the shard headers must agree exactly: every indexed tensor is in
// the shard named for it, every shard tensor is indexed, no tensor is in two shards.
// A GGUF file (told by its magic, not its name), or a folder whose only model file is one .gguf,
// opens too: its tensors appear under Hugging Face names with row-major shapes and their ggml types
// (TensorInfo::ggmlType), reading them decodes through ggmlDecodeRow, and config() is synthesized
// from its metadata (qs/io/gguf_names.h, docs/formats/gguf.md).
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/gguf_file.h"
#include "qs/io/safetensors_file.h"
#include "qs/io/tensor_name.h"

namespace qs::io {

struct CheckpointTensor {
    const TensorInfo* info = nullptr;
    std::size_t shard = 0;  // index into Checkpoint::shards() (0 for a GGUF checkpoint)
    TensorName naming;
};

struct CheckpointSummary {
    std::string architecture;  // config.json architectures[0] or model_type, "" when unknown
    std::string modelType;
    int numLayers = 0;  // from config, else from tensor names
    int hiddenSize = 0;
    std::int64_t parameterCount = 0;  // elements of all tensors (packed formats count stored elements)
    std::map<std::string, std::uint64_t> bytesByDtype;  // by TensorInfo::typeName()
    std::uint64_t sizeOnDisk = 0;                       // all shard files
    // "dense", else quantization_config.quant_method ("gguf" for a GGUF with block-quantized tensors) ("gptq", "awq", "fp8", "compressed-tensors",
    // "bitsandbytes", ...; "unknown" when it has none), else for a ModelOpt export the quant_algo of
    // hf_quant_config.json ("FP8", "NVFP4", ...; "modelopt" when it has none).
    std::string quantizationFormat;
    bool hasTokenizer = false;
    bool hasGenerationConfig = false;
};

class Checkpoint {
public:
    static Checkpoint open(const std::filesystem::path& path);

    const std::filesystem::path& root() const;             // the folder (or the file's folder)
    const std::vector<SafetensorsFile>& shards() const;    // empty for a GGUF checkpoint
    const GgufFile* gguf() const;                          // the GGUF file, nullptr for safetensors
    const nlohmann::json& config() const;                  // {} when there is no config.json
    const nlohmann::json& quantizationConfig() const;      // quantization_config or hf_quant_config.json, {} if none
    std::filesystem::path configSource() const;            // config.json, or the GGUF file it is synthesized from
    const std::vector<CheckpointTensor>& tensors() const;  // sorted by name
    const CheckpointTensor* find(std::string_view name) const;
    TensorView tensor(std::string_view name) const;  // throws qs::Error when absent
    TensorView view(const CheckpointTensor& tensor) const;
    const std::filesystem::path& fileOf(const CheckpointTensor& tensor) const;  // its shard or GGUF file
    CheckpointSummary summary() const;
    // Where the family stores a dense layer's MLP when not under "mlp" (Llama 4: "feed_forward"), read here as
    // mlp.*: an export passes it to CheckpointWriterOptions::denseMlpBlock. Empty for every other family.
    std::string denseMlpBlock() const;

private:
    struct Impl;
    explicit Checkpoint(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

}  // namespace qs::io
