#include "qs/model/expert_activation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qs/error.h"

namespace qs::model {

MatrixF clampedSwiglu(const MatrixF& gateUp, float limit, float alpha) {
    if (gateUp.cols() % 2 != 0)
        throw Error("clamped SwiGLU: the gate_up output has " + std::to_string(gateUp.cols()) + " columns, not pairs of gate and up");
    MatrixF out(gateUp.rows(), gateUp.cols() / 2);
    for (Eigen::Index t = 0; t < gateUp.rows(); ++t)
        for (Eigen::Index i = 0; i < out.cols(); ++i) {
            const float g = std::min(gateUp(t, 2 * i), limit);
            const float u = std::clamp(gateUp(t, 2 * i + 1), -limit, limit);
            out(t, i) = (u + 1.0f) * (g / (1.0f + std::exp(-alpha * g)));
        }
    return out;
}

}  // namespace qs::model
