#include "cuda_layer_math.h"

#include <algorithm>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "qs/architectures/module_names.h"
#include "qs/error.h"
#include "qs/gpu/device_buffer.h"
#include "qs/gpu/device_info.h"

#include "cuda_check.h"
#include "forward_kernels.h"

namespace qs::gpu {
namespace {

// y [T, out] row-major = x [T, in] Wᵀ: column-major this is Yᵀ = W Xᵀ with W read transposed.
void gemmXWt(const CudaContext& context, const float* x, const float* w, float* y, std::int64_t tokens, std::int64_t in,
             std::int64_t out) {
    const float one = 1.0f, zero = 0.0f;
    QS_CUBLAS(
        cublasSgemm_64(context.blas(), CUBLAS_OP_T, CUBLAS_OP_N, out, tokens, in, &one, w, in, x, in, &zero, y, out));
}

// A buffer that only grows, so that a layer's calls reuse one allocation.
template <typename T>
T* reserve(DeviceBuffer<T>& buffer, std::int64_t count, const char* what) {
    if (buffer.size() < count) {
        buffer = DeviceBuffer<T>();
        requireDeviceMemory(count * static_cast<std::int64_t>(sizeof(T)), what);
        buffer = DeviceBuffer<T>(count);
    }
    return buffer.data();
}

template <typename Matrix>
void upload(DeviceBuffer<float>& buffer, const Matrix& m, const char* what) {
    reserve(buffer, m.size(), what);
    if (m.outerStride() == m.cols()) {
        buffer.upload(m.data(), m.size());
    } else {
        const MatrixF packed = m;
        buffer.upload(packed.data(), packed.size());
    }
}

// The linears a layer keeps on the device: the attention's (any layout) and a dense layer's MLP; a MoE
// layer's experts are uploaded as they run.
std::vector<std::string> residentModules(const model::LayerWeights& weights) {
    std::vector<std::string> modules;
    for (const std::string& module : weights.linearModules())
        if (!weights.isMoe() || module.starts_with(architectures::modules::kAttention)) modules.push_back(module);
    return modules;
}

struct DeviceLinear {
    const float* hostWeight = nullptr;  // the key: the host matrix this is a copy of
    std::int64_t rows = 0, cols = 0;
    DeviceBuffer<float> weight;
    DeviceBuffer<float> bias;
};

class CudaLayerMath final : public model::LayerMath {
public:
    explicit CudaLayerMath(CudaContextPtr context) : context_(std::move(context)) {}

    std::string_view name() const override { return "CUDA"; }

    MatrixF linear(const MatrixF& x, const model::Linear& l) const override {
        std::lock_guard lock(mutex_);
        upload(input_, x, "a linear's input");
        return download(project(x.rows(), x.cols(), l, output_), x.rows(), l.weight.rows());
    }

    MatrixF product(const MatrixF& x, const MatrixF& w) const override {
        std::lock_guard lock(mutex_);
        upload(input_, x, "lm_head's input");
        return download(project(x.rows(), x.cols(), w, VectorF(), output_), x.rows(), w.rows());
    }

    std::vector<MatrixF> linears(const MatrixF& x, std::span<const model::Linear* const> linears) const override {
        std::lock_guard lock(mutex_);
        upload(input_, x, "a linear's input");
        std::vector<MatrixF> out;
        for (const model::Linear* l : linears)
            out.push_back(download(project(x.rows(), x.cols(), *l, output_), x.rows(), l->weight.rows()));
        return out;
    }

    MatrixF gatedProduct(const MatrixF& x, const model::Linear& gate, const model::Linear& up) const override {
        if (gate.weight.rows() != up.weight.rows()) throw Error("MLP: gate and up have different widths");
        std::lock_guard lock(mutex_);
        upload(input_, x, "the MLP's input");
        float* g = project(x.rows(), x.cols(), gate, output_);
        const float* u = project(x.rows(), x.cols(), up, second_);
        kernels::siluTimes(g, u, x.rows() * gate.weight.rows());
        return download(g, x.rows(), gate.weight.rows());
    }

    MatrixF attention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                      const Eigen::Ref<const MatrixF>& v, const model::AttentionShape& s) const override {
        // The kernel has no attention sinks (gpt-oss): those run on the host, O(T² · heads) of a layer's work.
        if (s.sinks != nullptr) return model::causalAttention(q, k, v, s);
        // Nor Llama 4's chunks: those run on the host too.
        if (s.chunk > 0) return model::causalAttention(q, k, v, s);
        checkAttention(q, k, v, s);
        std::lock_guard lock(mutex_);
        upload(input_, q, "attention queries");
        upload(keys_, k, "attention keys");
        upload(values_, v, "attention values");
        float* out = reserve(output_, q.size(), "attention output");
        kernels::causalAttention(input_.data(), keys_.data(), values_.data(), out,
                                 {q.rows(), k.rows(), s.numHeads, s.numKvHeads, s.headDim, s.slidingWindow});
        return download(out, q.rows(), q.cols());
    }

    std::shared_ptr<void> keepResident(const model::LayerWeights& weights) const override {
        std::int64_t bytes = 0;
        const std::vector<std::string> modules = residentModules(weights);
        for (const std::string& module : modules) {
            const model::Linear& l = weights.linear(module);
            bytes += (l.weight.size() + l.bias.size()) * 4;
        }
        // Only when the layer takes at most half of what is free: the per-call buffers need the rest,
        // and without residency every call still works (it uploads its weight).
        if (2 * bytes > queryDevice().freeBytes) return {};
        auto kept = std::make_shared<std::vector<DeviceLinear>>();
        for (const std::string& module : modules) {
            const model::Linear& l = weights.linear(module);
            if (l.weight.size() == 0) continue;  // released by the job
            DeviceLinear d{l.weight.data(), l.weight.rows(), l.weight.cols(), {}, {}};
            d.weight = DeviceBuffer<float>(l.weight.data(), l.weight.size());
            if (l.bias.size() > 0) d.bias = DeviceBuffer<float>(l.bias.data(), l.bias.size());
            kept->push_back(std::move(d));
        }
        std::lock_guard lock(mutex_);
        resident_.push_back(kept.get());
        // The handle's end takes the layer's copies off the list and frees them.
        return std::shared_ptr<void>(kept.get(), [this, kept](void*) mutable {
            std::lock_guard lock(mutex_);
            resident_.erase(std::find(resident_.begin(), resident_.end(), kept.get()));
            kept.reset();
        });
    }

private:
    // x (already in input_) times l's weight, plus its bias, into `into`; returns the device result.
    float* project(std::int64_t tokens, std::int64_t features, const model::Linear& l,
                   DeviceBuffer<float>& into) const {
        return project(tokens, features, l.weight, l.bias, into);
    }

    float* project(std::int64_t tokens, std::int64_t features, const MatrixF& weight, const VectorF& bias,
                   DeviceBuffer<float>& into) const {
        if (features != weight.cols())
            throw Error("linear: input has " + std::to_string(features) + " features, weight expects " +
                        std::to_string(weight.cols()));
        const float* w = nullptr;
        const float* b = nullptr;
        if (const DeviceLinear* kept = findResident(weight, bias)) {
            w = kept->weight.data();
            b = kept->bias.size() > 0 ? kept->bias.data() : nullptr;
        } else {
            upload(weight_, weight, "a linear's weight");
            w = weight_.data();
            if (bias.size() > 0) {
                b = reserve(bias_, bias.size(), "a linear's bias");
                bias_.upload(bias.data(), bias.size());
            }
        }
        const std::int64_t out = weight.rows();
        float* y = reserve(into, tokens * out, "a linear's output");
        gemmXWt(*context_, input_.data(), w, y, tokens, features, out);
        if (b) kernels::addBiasRows(y, b, tokens, out);
        return y;
    }

    static MatrixF download(const float* device, std::int64_t rows, std::int64_t cols) {
        MatrixF result(rows, cols);
        QS_CUDA(cudaMemcpy(result.data(), device, static_cast<std::size_t>(result.size()) * sizeof(float),
                           cudaMemcpyDeviceToHost));
        return result;
    }

    static void checkAttention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                               const Eigen::Ref<const MatrixF>& v, const model::AttentionShape& s) {
        if (s.numHeads <= 0 || s.numKvHeads <= 0 || s.headDim <= 0 || s.numHeads % s.numKvHeads != 0)
            throw Error("attention: invalid head configuration");
        if (s.headDim > kernels::kMaxHeadDim)
            throw Error("attention on CUDA: head_dim " + std::to_string(s.headDim) + " exceeds " +
                        std::to_string(kernels::kMaxHeadDim));
        if (q.cols() != Eigen::Index(s.numHeads) * s.headDim || k.cols() != Eigen::Index(s.numKvHeads) * s.headDim ||
            v.cols() != k.cols() || v.rows() != k.rows())
            throw Error("attention: q/k/v widths do not match the head configuration");
        if (k.rows() < q.rows()) throw Error("attention: fewer keys (" + std::to_string(k.rows()) + ") than queries");
    }

    const DeviceLinear* findResident(const MatrixF& weight, const VectorF& bias) const {
        for (const auto* layer : resident_)
            for (const DeviceLinear& d : *layer)
                if (d.hostWeight == weight.data() && d.rows == weight.rows() && d.cols == weight.cols() &&
                    d.bias.size() == bias.size())
                    return &d;
        return nullptr;
    }

    CudaContextPtr context_;
    mutable std::mutex mutex_;
    mutable std::vector<const std::vector<DeviceLinear>*> resident_;
    mutable DeviceBuffer<float> weight_, bias_, input_, keys_, values_, output_, second_;
};

}  // namespace

std::shared_ptr<const model::LayerMath> makeCudaLayerMath(CudaContextPtr context) {
    return std::make_shared<CudaLayerMath>(std::move(context));
}

}  // namespace qs::gpu
