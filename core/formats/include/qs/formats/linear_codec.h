#pragma once
// LinearCodec: reads one on-disk layout of quantized linear layers (GPTQ, AWQ, FP8, ...) and turns a
// stored linear into f32 [out_features, in_features] and into its unpacked parts (QuantizedLinear).
// One codec per layout; formats::LinearReader picks the codecs that the detected format needs.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/checkpoint.h"
#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"

namespace qs::formats {

// One linear layer of a checkpoint: its module prefix ("model.layers.0.self_attn.q_proj") and, for
// experts stacked into one tensor (gpt-oss "model.layers.0.mlp.experts.gate_up_proj"), the expert.
struct LinearRef {
    std::string prefix;
    int expert = -1;  // index into the stacked expert dimension; -1 when the tensors are not stacked

    std::string label() const;  // prefix, or "prefix[expert]"
    bool operator==(const LinearRef&) const = default;
};

// How one linear is quantized: its scheme as the config states it, checked against the tensor shapes.
struct LayerQuantInfo {
    LinearRef ref;
    std::string codec;   // the layout that stores it: "gptq", "awq", "fp8", "dense", ...
    std::string scheme;  // "int", "fp8", "nvfp4", "mxfp4", "nf4", "fp4", "int8", "dense"
    int bits = 16;
    int groupSize = -1;       // input columns per scale; -1 = the whole row
    int blockRows = 1;        // output rows per scale (128 for FP8 blocks; rows when per tensor)
    std::string granularity;  // "group", "channel", "tensor" or "block"
    bool actOrder = false;    // GPTQ desc_act / compressed-tensors actorder (a g_idx is stored)
    bool symmetric = true;
    std::int64_t rows = 0;  // out_features
    std::int64_t cols = 0;  // in_features
    std::string problem;    // set by detect() when the tensors do not fit together (decode throws it)

    std::string summary() const;  // "int4 g128 act-order asym", "fp8 block 128x128", ...
};

struct DecodedLinear {
    LinearRef ref;
    bool quantized = false;        // false for dense F32/F16/BF16 weights (parts are then empty)
    MatrixF weight;                // f32 [out, in], with the format's own dequantization arithmetic
    quant::QuantizedLinear parts;  // unpacked codes, scales, zeros, g_idx (empty when !partsExact)
    // False where QuantizedLinear cannot hold the format exactly (bitsandbytes FP4 code 0.0625/12,
    // a non-standard stored codebook, blocks that straddle rows); `weight` is exact regardless.
    bool partsExact = true;
    std::vector<float> bias;  // [out] when the checkpoint stores one, else empty
};

class LinearCodec {
public:
    virtual ~LinearCodec() = default;
    virtual std::string_view name() const = 0;
    // The linears stored in this codec's layout (found by tensor names; shapes are not read).
    virtual std::vector<LinearRef> linears(const io::Checkpoint& checkpoint) const = 0;
    // `quantConfig` is the normalised quantization config (formats::FormatInfo::config).
    virtual LayerQuantInfo describe(const io::Checkpoint& checkpoint, const nlohmann::json& quantConfig,
                                    const LinearRef& ref) const = 0;
    // Throws qs::Error naming the file and the tensor when the tensors do not fit together.
    virtual DecodedLinear decode(const io::Checkpoint& checkpoint, const nlohmann::json& quantConfig,
                                 const LinearRef& ref) const = 0;
};

}  // namespace qs::formats
