#pragma once
// LinearEncoder: the inverse of LinearCodec. Writes QuantizedLinears in one on-disk layout that a
// consumer (vLLM, Hugging Face transformers, QuantScope itself) loads, and says what the consumer
// needs in config.json. One encoder per layout (one file each, core/formats/*_encoder.cpp);
// formats::encoderNamed picks one. docs/formats/ describes every bit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/dtype.h"
#include "qs/quant/quantized_linear.h"

namespace qs::formats {

// One tensor as the layout stores it: full name ("model.layers.0.self_attn.q_proj.qweight"),
// dtype, shape and little-endian row-major bytes.
struct EncodedTensor {
    std::string name;
    io::DType dtype = io::DType::F32;
    std::vector<std::int64_t> shape;
    std::vector<std::byte> bytes;
};

// Everything an encoder may need to describe the whole export in its config.
struct ExportScheme {
    // The quantized linears by module prefix ("model.layers.0.mlp.down_proj"), in model order.
    std::vector<std::pair<std::string, const quant::QuantizedLinear*>> linears;
    // Linears kept in the source dtype (lm_head, and any the user excluded), by prefix.
    std::vector<std::string> denseLinears;
    io::DType sourceDType = io::DType::BF16;  // the dtype of everything left unquantized
};

class LinearEncoder {
public:
    virtual ~LinearEncoder() = default;
    // The name users pass to --format ("gptq", "gptq_v2", "awq", "fp8", "ct-fp8-dynamic", "ct-nvfp4",
    // "modelopt-nvfp4", "ct-mxfp4", "bnb-nf4", "quantscope-trellis", "ct-mixed").
    virtual std::string_view name() const = 0;
    // One line for --help and the GUI: what it is and who loads it.
    virtual std::string_view description() const = 0;
    // Why `q` cannot be stored in this layout (wrong method, bits, symmetry, a shape the layout cannot
    // hold, or an input or KV-cache quantization its config cannot state), or "" when it can. The
    // exporter asks for every linear before writing anything.
    std::string refusal(const quant::QuantizedLinear& q) const;
    // The weight's part of refusal().
    virtual std::string layoutRefusal(const quant::QuantizedLinear& q) const = 0;
    // Whether the layout states this quantization of a linear's input (and stores its scale), so that
    // the consumer quantizes as measured. Weight-only layouts state none.
    virtual bool storesInput(quant::ActivationFormat format) const { return format == quant::ActivationFormat::None; }
    // Whether the layout stores the FP8 KV cache's k_scale / v_scale (and says so in its config).
    virtual bool storesKvCacheScales() const { return false; }
    // The tensors of one linear; `prefix` is its module prefix. Throws qs::Error when refusal() is not empty.
    virtual std::vector<EncodedTensor> encode(const std::string& prefix, const quant::QuantizedLinear& q) const = 0;
    // config.json's "quantization_config" for the whole export.
    virtual nlohmann::json quantizationConfig(const ExportScheme& scheme) const = 0;
    // Other JSON files the consumers read (quantize_config.json, hf_quant_config.json), by file name.
    virtual std::vector<std::pair<std::string, nlohmann::json>> extraFiles(const ExportScheme&) const { return {}; }
};

// Every encoder, in the order --help lists them.
std::vector<const LinearEncoder*> allEncoders();
// Throws qs::Error listing the known names when `name` is not one of them.
const LinearEncoder& encoderNamed(std::string_view name);
// The layout a method's result is written in by default: symmetric GPTQ/RTN int → "gptq",
// asymmetric → "gptq_v2", AWQ → "awq", FP8 → "fp8", NVFP4 → "ct-nvfp4", MXFP4 → "ct-mxfp4",
// NF4 → "bnb-nf4", trellis → "quantscope-trellis".
const LinearEncoder& defaultEncoderFor(const quant::QuantizedLinear& q);

}  // namespace qs::formats
