#pragma once
// What the writers store beside a linear's weight so that the serving engine quantizes its input and
// its KV cache as QuantScope measured (quant::QuantizedLinear::input, ::cacheScale;
// docs/formats/activation-scales.md):
//   input_scale         F32 scalar: the static FP8 input scale, or ModelOpt NVFP4's input global scale
//   input_global_scale  F32 [1]: compressed-tensors NVFP4's input global scale, a DIVISOR (1 / g)
//   k_scale / v_scale   F32 scalars of the FP8 KV cache, under the attention module
//                       (model.layers.L.self_attn.k_scale: compressed-tensors, vLLM's fp8) or under
//                       the projection (model.layers.L.self_attn.k_proj.k_scale: ModelOpt). vLLM's
//                       loader (maybe_remap_kv_scale_name) reads both.
#include <string>
#include <string_view>
#include <vector>

#include "qs/formats/linear_encoder.h"

namespace qs::formats::detail {

enum class KvScaleNaming { AttentionModule, Projection };

// The k_scale (k_proj) or v_scale (v_proj) tensor of `q`, none when it has no cache scale. Throws
// qs::Error for a cache scale on another module.
std::vector<EncodedTensor> kvCacheScaleTensors(const std::string& prefix, const quant::QuantizedLinear& q,
                                               KvScaleNaming naming);
bool anyKvCacheScale(const ExportScheme& scheme);

// The input quantization every linear of the export shares (a config states one); throws qs::Error
// naming the first linear that differs.
quant::ActivationFormat commonInputFormat(const ExportScheme& scheme, std::string_view encoder);

// The reciprocal whose own reciprocal gives `scale` back exactly where one exists (compressed-tensors
// stores NVFP4 global scales as divisors; vLLM and QuantScope invert them), else the nearest one.
float exactReciprocal(float scale);

}  // namespace qs::formats::detail
