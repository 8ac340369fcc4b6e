#include "qs/model/layer_weights.h"

#include <string>

#include "qs/error.h"

namespace qs::model {

MatrixF Linear::operator()(const MatrixF& x) const {
    if (x.cols() != weight.cols())
        throw Error("linear: input has " + std::to_string(x.cols()) + " features, weight expects " +
                    std::to_string(weight.cols()));
    MatrixF y(x.rows(), weight.rows());
    y.noalias() = x * weight.transpose();
    if (bias.size() > 0) y.rowwise() += bias.transpose();
    return y;
}

Linear& LayerWeights::linear(std::string_view module) {
    return const_cast<Linear&>(static_cast<const LayerWeights&>(*this).linear(module));
}

const Linear& LayerWeights::linear(std::string_view module) const {
    const std::array<const Linear*, 7> all{&q, &k, &v, &o, &gate, &up, &down};
    for (std::size_t i = 0; i < kLinearModules.size(); ++i)
        if (kLinearModules[i] == module) return *all[i];
    throw Error("decoder layer has no linear module '" + std::string(module) + "'");
}

}  // namespace qs::model
