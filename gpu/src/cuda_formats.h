#pragma once
// The format encoders and decoders of the CUDA backend: upload, kernel, download, and the
// QuantizedLinear filled exactly as the core/quant function of the same format fills it.
#include <array>

#include "qs/matrix.h"
#include "qs/quant/fp8.h"
#include "qs/quant/nf4.h"
#include "qs/quant/quantized_linear.h"

namespace qs::gpu {

quant::QuantizedLinear cudaFp8(const MatrixF& w, quant::Fp8Scaling scaling, int block);
quant::QuantizedLinear cudaMxfp4(const MatrixF& w);
quant::QuantizedLinear cudaNvfp4(const MatrixF& w);
quant::QuantizedLinear cudaNf4(const MatrixF& w, const quant::Nf4Options& options);
// FP8, MXFP4, NVFP4 and NF4 on the device; other kinds through q.dequantize().
MatrixF cudaDecode(const quant::QuantizedLinear& q);

// The NF4 decision thresholds, recovered from quant::nearestNf4 by bisection over the floats
// between adjacent levels: thresholds[j] is the smallest float that nearestNf4 puts above level j.
const std::array<float, 15>& nf4Thresholds();

}  // namespace qs::gpu
