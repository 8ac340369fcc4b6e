#include "qs/model/layer_math.h"

namespace qs::model {
namespace {

class CpuLayerMath final : public LayerMath {
public:
    std::string_view name() const override { return "CPU"; }
    MatrixF linear(const MatrixF& x, const Linear& linear) const override { return linear(x); }
    MatrixF attention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                      const Eigen::Ref<const MatrixF>& v, const AttentionShape& shape) const override {
        return causalAttention(q, k, v, shape);
    }
};

}  // namespace

MatrixF LayerMath::product(const MatrixF& x, const MatrixF& w) const {
    MatrixF y(x.rows(), w.rows());
    y.noalias() = x * w.transpose();
    return y;
}

std::vector<MatrixF> LayerMath::linears(const MatrixF& x, std::span<const Linear* const> linears) const {
    std::vector<MatrixF> out;
    out.reserve(linears.size());
    for (const Linear* l : linears) out.push_back(linear(x, *l));
    return out;
}

MatrixF LayerMath::gatedProduct(const MatrixF& x, const Linear& gate, const Linear& up) const {
    MatrixF g = linear(x, gate);
    const MatrixF u = linear(x, up);
    g.array() = g.array() / (1.0f + (-g.array()).exp()) * u.array();
    return g;
}

std::shared_ptr<void> LayerMath::keepResident(const LayerWeights&) const { return {}; }

const LayerMath& cpuLayerMath() {
    static const CpuLayerMath cpu;
    return cpu;
}

}  // namespace qs::model
