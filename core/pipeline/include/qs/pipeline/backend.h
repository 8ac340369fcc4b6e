#pragma once
// pipeline::Backend: the heavy operations of quantization behind one interface, so that the job
// runs them on the CPU (CpuBackend, always there, the reference) or on a CUDA device (gpu/, only in
// CUDA builds). Every operation returns what the core/quant function of the same name returns;
// the CUDA backend is parity-tested against this one (tests/gpu).
//
// Core never includes a CUDA header: the CUDA backend registers a factory at start-up
// (qs::gpu::registerCudaBackend(), called from the executables' main when built with CUDA), and
// selectBackend() asks it for a device.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "qs/matrix.h"
#include "qs/model/layer_math.h"
#include "qs/model/model_config.h"
#include "qs/quant/awq.h"
#include "qs/quant/fp8.h"
#include "qs/quant/gptq.h"
#include "qs/quant/nf4.h"
#include "qs/quant/quantized_linear.h"
#include "qs/quant/trellis.h"

namespace qs::pipeline {

enum class DeviceChoice { Auto, Cpu, Cuda };

// "auto", "cpu", "cuda" (the CLI's --device); anything else is a qs::Error.
DeviceChoice parseDeviceChoice(std::string_view text);
std::string_view deviceChoiceName(DeviceChoice choice);

// Streams a linear's inputs into H = 2 XᵀX / n, as quant::HessianAccumulator does.
class HessianSink {
public:
    virtual ~HessianSink() = default;
    virtual void add(const Eigen::Ref<const MatrixF>& x, std::int64_t chunkRows = 2048) = 0;
    virtual std::int64_t samples() const = 0;
    virtual MatrixF finalize() const = 0;  // 2 XᵀX / n, full symmetric
    virtual VectorF meanAbs() const = 0;   // mean |x| per input channel
    // finalize(), then frees the running sums: the sample count and meanAbs() stay; add() and
    // finalize() throw afterwards. For a caller that needs H only once (the Job).
    virtual MatrixF release() = 0;
    virtual void discard() = 0;  // frees the sums without computing H
    virtual bool released() const = 0;
    virtual std::uint64_t hostBytes() const = 0;  // host memory held (a device's: its pinned chunk buffers)
};

// Streams a linear's inputs into the diagonal of H = 2 XᵀX / n alone: H_cc = 2 Σ x_c² / n per input
// channel, summed in f64 row after row. What the Hessian views and GPTQ's act-order ranking need, in
// O(n) memory and O(T·n) work where the full H costs n² floats and O(T·n²).
class DiagonalSink {
public:
    virtual ~DiagonalSink() = default;
    virtual void add(const Eigen::Ref<const MatrixF>& x) = 0;  // x [tokens, features]
    virtual std::int64_t samples() const = 0;                  // rows added so far
    virtual VectorD finalize() const = 0;                      // 2 Σ x_c² / n; throws without samples
};

// What a job asks of a device at one time, for Backend::peakDeviceBytes: one decoder layer's
// forward passes and statistics, and the quantization of its largest linears.
struct DeviceWorkload {
    model::ModelConfig config;
    std::int64_t sequenceLength = 0;  // the longest calibration or evaluation sequence, in tokens
    bool statistics = false;          // Hessians are accumulated (a method calibrates)
    bool gptq = false;
    bool awq = false;
    int groupSize = 128;
};

class Backend {
public:
    virtual ~Backend() = default;

    // "CPU (8 threads)" or "CUDA: NVIDIA H200, 131.2 GiB free".
    virtual std::string description() const = 0;
    virtual bool isCuda() const = 0;
    // Memory the backend can still use, in bytes (the device's free memory; the host's available memory).
    virtual std::int64_t freeMemoryBytes() const = 0;
    // The device memory `workload` needs at its peak, so a plan that cannot fit is refused before it
    // starts; 0 for a backend that works in host memory (the job's own estimate covers that).
    virtual std::int64_t peakDeviceBytes(const DeviceWorkload& workload) const { return 0; }

    virtual std::unique_ptr<HessianSink> hessian(std::int64_t features) const = 0;
    // The same with the products XᵀX reading the inputs rounded to bfloat16 (quant::GramInputs::Bf16): the
    // Hessians of the CPU's --matmul bf16 calibration. The default refuses.
    virtual std::unique_ptr<HessianSink> hessianOfBf16Inputs(std::int64_t features) const;
    virtual std::unique_ptr<DiagonalSink> hessianDiagonal(std::int64_t features) const = 0;
    virtual quant::QuantizedLinear gptq(const MatrixF& w, const MatrixF& h,
                                        const quant::GptqOptions& options) const = 0;
    // The same result from an H the caller gives up, so that the backend may work in its memory (the
    // CPU makes no copy of it and frees it once factored). The default calls gptq().
    virtual quant::QuantizedLinear gptqConsuming(const MatrixF& w, MatrixF&& h,
                                                 const quant::GptqOptions& options) const {
        return gptq(w, h, options);
    }
    virtual quant::QuantizedLinear fp8(const MatrixF& w, quant::Fp8Scaling scaling, int block) const = 0;
    virtual quant::QuantizedLinear mxfp4(const MatrixF& w) const = 0;
    virtual quant::QuantizedLinear nvfp4(const MatrixF& w) const = 0;
    virtual quant::QuantizedLinear nf4(const MatrixF& w, const quant::Nf4Options& options) const = 0;
    virtual quant::QuantizedLinear trellis(const MatrixF& w, const quant::TrellisOptions& options) const = 0;
    // AWQ's α search from calibration statistics (quant::quantizeAwqFromStats): the linears reading one
    // input, its mean |x| per channel and H. The default runs the CPU search.
    virtual quant::AwqResult awq(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                                 const quant::AwqOptions& options) const {
        return quant::quantizeAwqFromStats(weights, meanAbs, h, options);
    }
    // Where the forward passes of calibration and evaluation run their GEMMs and attention on this
    // backend; null: on the CPU (model::cpuLayerMath()).
    virtual std::shared_ptr<const model::LayerMath> layerMath() const { return nullptr; }
    // The f32 weight of an FP8, MXFP4, NVFP4 or NF4 layer (other kinds: q.dequantize()).
    virtual MatrixF decode(const quant::QuantizedLinear& q) const = 0;
};

// The reference backend: the core/quant functions on the OpenMP threads.
std::shared_ptr<Backend> makeCpuBackend();

// A CUDA backend for the first device, or nullptr with `whyNot` saying why (no driver, no device).
using CudaBackendFactory = std::function<std::shared_ptr<Backend>(std::string& whyNot)>;
void registerCudaBackendFactory(CudaBackendFactory factory);
bool cudaBackendRegistered();

struct BackendSelection {
    std::shared_ptr<Backend> backend;
    std::string message;  // one line: what was chosen and, when the CPU stands in for Auto, why
};

// Auto: CUDA when built, a device is present and it passes backendSelfCheck() against the CPU;
// else the CPU (the message says why). Cpu: the CPU. Cuda: the CUDA backend, or a qs::Error saying
// why there is none or why it was not trusted. The device is built and checked once per registered
// factory; later calls share that backend (or that reason).
BackendSelection selectBackend(DeviceChoice choice);

}  // namespace qs::pipeline
