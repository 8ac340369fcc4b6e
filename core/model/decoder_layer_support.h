#pragma once
// Private to qs_model: what the decoder layer's blocks share (decoder_layer.cpp, latent_attention.cpp):
// the LayerMath they run on, the hook that sees each linear's input, and the input a serving engine's
// GEMM would read.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include "qs/model/decoder_layer.h"

namespace qs::model::detail {

const LayerMath& math(const DecoderLayerContext& c);
bool hooked(const DecoderLayerContext& c);
// Shows the hook `x`, the input of `modules` (routed: an expert's routed tokens, -1 for no expert).
void notify(const DecoderLayerContext& c, std::span<const std::string_view> modules, const MatrixF& x,
            std::int64_t routed = -1);
// The input the engine's GEMM of `linears` reads: x itself, or x quantized (into `storage`) as they ask.
const MatrixF& engineInput(const MatrixF& x, std::initializer_list<const Linear*> linears, MatrixF& storage);

// DeepSeek-V3's multi-head latent attention block of a layer (latent_attention.h's maths): o_proj's output.
MatrixF latentAttentionBlock(const LayerWeights& w, const MatrixF& normed, const DecoderLayerContext& c);

// Llama 4's rotation, L2 norm or temperature of a layer's q [T, heads * d] and k in place (llama4_attention.cpp);
// returns the layer's attention chunk (0: none).
int llama4QueryKey(MatrixF& q, MatrixF& k, const DecoderLayerContext& c);
// The factor Llama 4's NoPE layers multiply the query at `position` by (attn_temperature_tuning).
float llama4QueryTemperature(const Llama4Attention& a, int position);
// Qwen3.5's Gated DeltaNet block of a linear_attention layer (gated_delta_net.h's maths): out_proj's output.
MatrixF gatedDeltaNetBlock(const LayerWeights& w, const MatrixF& normed, const DecoderLayerContext& c);

}  // namespace qs::model::detail
