#pragma once
// What a checkpoint holds: its quantization format (from quantization_config, quantize_config.json,
// hf_quant_config.json, or else from tensor names) and how each linear layer is stored.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/formats/linear_codec.h"

namespace qs::formats {

enum class Format {
    Dense,
    Gptq,
    Awq,
    Fp8,
    CompressedTensors,
    ModelOpt,
    Mxfp4,
    Bitsandbytes,
    Exl3,
    QuantscopeTrellis,
    Gguf,
    Unknown
};

std::string_view formatName(
    Format f);  // "dense", "gptq", "awq", "fp8", "compressed-tensors", ..., "quantscope-trellis", "gguf"

struct FormatInfo {
    Format format = Format::Dense;
    // The layout variant: GPTQ "gptq" | "gptq_v2"; AWQ "gemm" | "gemv"; FP8 "block" | "tensor";
    // compressed-tensors its `format`; ModelOpt its quant_algo; bitsandbytes "nf4" | "fp4" | "int8";
    // GGUF llama.cpp's name of general.file_type ("Q4_K_M", "F16", ...; "" when absent).
    std::string variant;
    bool decodable = true;     // false for Marlin/BitBLAS GPTQ and unknown methods
    std::string whyNot;        // the reason when !decodable
    nlohmann::json config;     // normalised quantization config; {} for dense or name-inferred formats
    std::string configSource;  // where config came from ("<root>/config.json: quantization_config"), for messages
    std::vector<LayerQuantInfo> layers;     // every quantized linear, in tensor-name order
    std::vector<std::string> denseLinears;  // linears left unquantized (lm_head, routers, ...)
    // What a loader passes over with a warning and QuantScope reads as that loader does: tensors that
    // name no decoder layer, a bitsandbytes 4-bit type that disagrees with the tensors' quant_state.
    // One line each, naming the tensor or key; inspect and the model commands print them.
    std::vector<std::string> warnings;

    // The scheme shared by every quantized layer, or nullopt when layers differ (mixed precision).
    std::optional<LayerQuantInfo> uniformScheme() const;
};

}  // namespace qs::formats
