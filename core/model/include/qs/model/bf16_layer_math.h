#pragma once
// BF16 matmuls on the CPU (oneDNN's matmul primitive): each linear's input and weight rounded to bfloat16
// (round to nearest even), products accumulated in f32, the bias added in f32. Where the CPU multiplies
// BF16 natively (AVX512-BF16: Zen 4, Cooper Lake and later; AMX: Sapphire Rapids and later) this runs
// 2-4x the f32 SGEMM rate (bench/README.md). Attention, norms and the lm_head stay f32: only the GEMMs of
// the linears change. The calibration forward passes use it (--matmul bf16); their Hessians' products read
// the same bfloat16 inputs (qs/quant/bf16_gram.h) and are summed in f32 / f64.
//
// While keepResident(layer) holds, each linear's weight is reordered to oneDNN's BF16 layout once and
// reused for every sequence; outside it a linear is converted for each call.
#include <memory>

#include "qs/model/layer_math.h"

namespace qs::model {

// Whether this CPU multiplies BF16 natively (AVX512-BF16 or AMX-BF16): where --matmul bf16 is the
// default. QS_DISABLE_BF16=1 in the environment says no.
bool cpuRunsBf16Natively();

// The one BF16 LayerMath (thread-safe; its primitives are cached by shape). Throws qs::Error when oneDNN
// cannot multiply BF16 on this CPU at all.
std::shared_ptr<const LayerMath> bf16LayerMath();

}  // namespace qs::model
