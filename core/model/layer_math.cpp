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

std::shared_ptr<void> LayerMath::keepResident(const LayerWeights&) const { return {}; }

const LayerMath& cpuLayerMath() {
    static const CpuLayerMath cpu;
    return cpu;
}

}  // namespace qs::model
