#pragma once
// The CPU's arithmetic through the LayerMath interface, counting GEMMs and the device-residency
// scopes a backend's math would see: tests give it to a backend to see that forward passes run there.
#include <atomic>
#include <memory>
#include <string_view>

#include "qs/model/layer_math.h"

namespace qs::test {

class CountingMath final : public model::LayerMath {
public:
    std::string_view name() const override { return "counting"; }
    MatrixF linear(const MatrixF& x, const model::Linear& l) const override {
        ++linears;
        return model::cpuLayerMath().linear(x, l);
    }
    MatrixF attention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                      const Eigen::Ref<const MatrixF>& v, const model::AttentionShape& shape) const override {
        return model::cpuLayerMath().attention(q, k, v, shape);
    }
    std::shared_ptr<void> keepResident(const model::LayerWeights&) const override {
        ++scopes;
        ++live;
        return std::shared_ptr<void>(nullptr, [this](void*) { --live; });
    }
    mutable std::atomic<int> linears = 0, scopes = 0, live = 0;
};

}  // namespace qs::test
