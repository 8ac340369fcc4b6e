#include "qs/model/bf16_layer_math.h"

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "qs/cpu_features.h"
#include "qs/error.h"
#include "qs/quant/bf16_layout.h"

namespace qs::model {

namespace {

using dnnl::memory;
using Dims = std::tuple<memory::dim, memory::dim, memory::dim>;  // M (rows of x), K (in), N (out)

// A weight in the primitive's BF16 layout, and the K x N it was made for.
struct Bf16Weight {
    memory::dim in = 0, out = 0;
    memory stored;
};

class Bf16LayerMath final : public LayerMath, public std::enable_shared_from_this<Bf16LayerMath> {
public:
    Bf16LayerMath() : engine_(dnnl::engine::kind::cpu, 0) {
        (void)primitive(Dims{64, 64, 64});  // fails here, once, where oneDNN has no BF16 matmul
    }

    std::string_view name() const override { return "CPU (BF16 matmuls)"; }

    MatrixF linear(const MatrixF& x, const Linear& l) const override {
        if (x.cols() != l.weight.cols())
            throw Error("linear: input has " + std::to_string(x.cols()) + " features, weight expects " +
                        std::to_string(l.weight.cols()));
        const memory::dim m = x.rows(), k = x.cols(), n = l.weight.rows();
        MatrixF y(m, n);
        if (m == 0 || n == 0) return y;
        if (k == 0) {
            y.setZero();
        } else {
            const dnnl::matmul::primitive_desc& pd = primitive(Dims{m, k, n});
            const std::shared_ptr<const Bf16Weight> resident = residentWeight(l.weight);
            const Bf16Weight converted = resident ? Bf16Weight{} : toBf16(l.weight, pd);
            const memory& w = resident ? resident->stored : converted.stored;
            dnnl::stream stream(engine_);
            memory xf32({{m, k}, memory::data_type::f32, memory::format_tag::ab}, engine_,
                        const_cast<float*>(x.data()));
            memory xbf16(pd.src_desc(), engine_);
            dnnl::reorder(xf32, xbf16).execute(stream, xf32, xbf16);
            memory out(pd.dst_desc(), engine_, y.data());
            matmulOf(Dims{m, k, n})
                .execute(stream, {{DNNL_ARG_SRC, xbf16}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, out}});
            stream.wait();
        }
        if (l.bias.size() > 0) y.rowwise() += l.bias.transpose();
        return y;
    }

    MatrixF attention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                      const Eigen::Ref<const MatrixF>& v, const AttentionShape& shape) const override {
        return causalAttention(q, k, v, shape);
    }

    std::shared_ptr<void> keepResident(const LayerWeights& weights) const override {
        auto held = std::make_shared<Held>(shared_from_this());
        for (const std::string& module : weights.linearModules()) {
            const MatrixF& w = weights.linear(module).weight;
            if (w.size() == 0) continue;
            const auto pd = primitive(Dims{quant::kBf16LayoutRows, w.cols(), w.rows()});
            held->weights.emplace(w.data(), std::make_shared<const Bf16Weight>(toBf16(w, pd)));
        }
        std::lock_guard lock(mutex_);
        for (const auto& [data, weight] : held->weights) resident_[data] = weight;
        return held;
    }

private:
    // A layer's reordered weights; they leave the math's table with the handle.
    struct Held {
        explicit Held(std::shared_ptr<const Bf16LayerMath> math) : math(std::move(math)) {}
        ~Held() {
            std::lock_guard lock(math->mutex_);
            for (const auto& [data, weight] : weights)
                if (const auto it = math->resident_.find(data); it != math->resident_.end() && it->second == weight)
                    math->resident_.erase(it);
        }
        std::shared_ptr<const Bf16LayerMath> math;
        std::map<const float*, std::shared_ptr<const Bf16Weight>> weights;
    };

    std::shared_ptr<const Bf16Weight> residentWeight(const MatrixF& w) const {
        std::lock_guard lock(mutex_);
        const auto it = resident_.find(w.data());
        if (it == resident_.end() || it->second->in != w.cols() || it->second->out != w.rows()) return nullptr;
        return it->second;
    }

    // x Wᵀ: the weight [N, K] row-major is B = Wᵀ [K, N] in the "ba" layout, reordered to BF16.
    Bf16Weight toBf16(const MatrixF& w, const dnnl::matmul::primitive_desc& pd) const {
        Bf16Weight out{w.cols(), w.rows(), memory(pd.weights_desc(), engine_)};
        memory f32({{w.cols(), w.rows()}, memory::data_type::f32, memory::format_tag::ba}, engine_,
                   const_cast<float*>(w.data()));
        dnnl::stream stream(engine_);
        dnnl::reorder(f32, out.stored).execute(stream, f32, out.stored);
        stream.wait();
        return out;
    }

    // The primitive for x [M, K] times B [K, N], its weights in the layout chosen for kBf16LayoutRows rows
    // (so that one reordered weight serves every sequence length).
    const dnnl::matmul::primitive_desc& primitive(const Dims& dims) const {
        std::lock_guard lock(mutex_);
        if (const auto it = primitives_.find(dims); it != primitives_.end()) return it->second.first;
        const auto [m, k, n] = dims;
        const memory::desc layout = layoutFor(k, n);
        const dnnl::matmul::primitive_desc pd(
            dnnl::matmul::desc({{m, k}, memory::data_type::bf16, memory::format_tag::ab}, layout,
                               {{m, n}, memory::data_type::f32, memory::format_tag::ab}),
            engine_);
        return primitives_.emplace(dims, std::make_pair(pd, dnnl::matmul(pd))).first->second.first;
    }

    dnnl::matmul matmulOf(const Dims& dims) const {
        std::lock_guard lock(mutex_);
        return primitives_.at(dims).second;
    }

    // The BF16 weights layout oneDNN prefers for K x N (asked once per shape, with format "any").
    memory::desc layoutFor(memory::dim k, memory::dim n) const {
        if (const auto it = layouts_.find({k, n}); it != layouts_.end()) return it->second;
        return layouts_.emplace(std::make_pair(k, n), quant::bf16RightOperandLayout(engine_, k, n)).first->second;
    }

    dnnl::engine engine_;
    mutable std::mutex mutex_;
    mutable std::map<Dims, std::pair<dnnl::matmul::primitive_desc, dnnl::matmul>> primitives_;
    mutable std::map<std::pair<memory::dim, memory::dim>, memory::desc> layouts_;
    mutable std::map<const float*, std::shared_ptr<const Bf16Weight>> resident_;
};

}  // namespace

bool cpuRunsBf16Natively() {
#if QS_X86
    static const bool runs = [] {
        const char* disabled = std::getenv("QS_DISABLE_BF16");
        if (disabled != nullptr && !std::string_view(disabled).empty() && std::string_view(disabled) != "0")
            return false;
        return __builtin_cpu_supports("avx512bf16") != 0 || __builtin_cpu_supports("amx-bf16") != 0;
    }();
    return runs;
#else
    return false;
#endif
}

std::shared_ptr<const LayerMath> bf16LayerMath() {
    static const std::shared_ptr<const Bf16LayerMath> math = [] {
        try {
            return std::make_shared<const Bf16LayerMath>();
        } catch (const dnnl::error& e) {
            throw Error(std::string("BF16 matmuls: oneDNN has none for this CPU (") + e.what() + "); use --matmul f32");
        }
    }();
    return math;
}

}  // namespace qs::model
