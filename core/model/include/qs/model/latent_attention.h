#pragma once
// DeepSeek-V3's multi-head latent attention as transformers' DeepseekV3Attention computes it (the layer's
// linears: ModelConfig::mla, attention_linears.h). The block itself runs inside runDecoderLayer; what
// other code needs of its maths is here.
#include "qs/matrix.h"
#include "qs/model/model_config.h"

namespace qs::model {

// The eps of q_a_layernorm and kv_a_layernorm: transformers builds them as DeepseekV3RMSNorm(rank), whose
// default is 1e-6 whatever rms_norm_eps says (llama.cpp's deepseek2 uses rms_norm_eps: the two agree for
// every DeepSeek and Kimi release, whose rms_norm_eps is 1e-6).
inline constexpr double kLatentNormEps = 1e-6;

// What DeepseekV3Attention multiplies its scores' (nope + rope)^-1/2 by: yarn_get_mscale(factor,
// mscale_all_dim)² when rope_scaling sets mscale_all_dim, else 1 (the config reader keeps it in
// LatentAttention::scoreFactor).
double latentScoreFactor(const RopeScaling& scaling);

// transformers' apply_rotary_pos_emb_interleave takes each head's rotary part [x0, x1, x2, x3, ...] as
// [x0, x2, ..., x1, x3, ...] before rotate_half, so that adjacent elements rotate together (GPT-J's
// pairs). Reorders each of the `heads` blocks of `dim` columns of x so.
void deinterleavePairs(MatrixF& x, int heads, int dim);

}  // namespace qs::model
