#include "qs/model/expert_activation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qs/error.h"

namespace qs::model {

namespace {

float clampedSwigluOf(float gate, float up, float limit, float alpha) {
    const float g = std::min(gate, limit);
    const float u = std::clamp(up, -limit, limit);
    return (u + 1.0f) * (g / (1.0f + std::exp(-alpha * g)));
}

}  // namespace

MatrixF clampedSwiglu(const MatrixF& gateUp, float limit, float alpha) {
    if (gateUp.cols() % 2 != 0)
        throw Error("clamped SwiGLU: the gate_up output has " + std::to_string(gateUp.cols()) +
                    " columns, not pairs of gate and up");
    MatrixF out(gateUp.rows(), gateUp.cols() / 2);
    for (Eigen::Index t = 0; t < gateUp.rows(); ++t)
        for (Eigen::Index i = 0; i < out.cols(); ++i)
            out(t, i) = clampedSwigluOf(gateUp(t, 2 * i), gateUp(t, 2 * i + 1), limit, alpha);
    return out;
}

MatrixF clampedSwiglu(const MatrixF& gate, const MatrixF& up, float limit, float alpha) {
    if (gate.rows() != up.rows() || gate.cols() != up.cols())
        throw Error("clamped SwiGLU: gate [" + std::to_string(gate.rows()) + ", " + std::to_string(gate.cols()) +
                    "] and up [" + std::to_string(up.rows()) + ", " + std::to_string(up.cols()) + "] differ in shape");
    MatrixF out(gate.rows(), gate.cols());
    for (Eigen::Index t = 0; t < gate.rows(); ++t)
        for (Eigen::Index i = 0; i < out.cols(); ++i) out(t, i) = clampedSwigluOf(gate(t, i), up(t, i), limit, alpha);
    return out;
}

}  // namespace qs::model
