#pragma once
// AWQ's α search on the device with the contract of quant::quantizeAwqFromStats: every α's fake
// quantization and its output error on the device (as many α per pass as fit), then the CPU's own
// finish (quant::awqFromGridErrors) picks α and quantizes, so the result differs from the CPU's
// only where the grid's errors do (SGEMM order, about 1e-6 relative).
#include <vector>

#include "qs/quant/awq.h"

#include "cuda_context.h"

namespace qs::gpu {

quant::AwqResult cudaAwq(const CudaContext& context, const std::vector<const MatrixF*>& weights, const VectorF& meanAbs,
                         const MatrixF& h, const quant::AwqOptions& options);

// The search objective at each α = i / grid (AwqResult::gridError), on the device, at most
// `maxPerPass` α at a time (0: as many as fit). The options and shapes must be ones cudaAwq runs on
// the device (awqRunsOnDevice).
std::vector<double> cudaAwqGridErrors(const CudaContext& context, const std::vector<const MatrixF*>& weights,
                                      const VectorF& meanAbs, const MatrixF& h, const quant::AwqOptions& options,
                                      int maxPerPass = 0);
// Device memory of the search with one α per pass, the least cudaAwq runs with, for linears of
// `rows` outputs in all and `cols` inputs.
std::int64_t awqMinimumDeviceBytes(std::int64_t rows, std::int64_t cols);
bool awqRunsOnDevice(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                     const quant::AwqOptions& options);

}  // namespace qs::gpu
