#include "qs/model/layer_weights.h"

#include <charconv>
#include <string>

#include "qs/error.h"
#include "qs/model/attention_linears.h"

namespace qs::model {

namespace modules = architectures::modules;

MatrixF Linear::operator()(const MatrixF& x) const {
    if (x.cols() != weight.cols())
        throw Error("linear: input has " + std::to_string(x.cols()) + " features, weight expects " +
                    std::to_string(weight.cols()));
    MatrixF y(x.rows(), weight.rows());
    y.noalias() = x * weight.transpose();
    if (bias.size() > 0) y.rowwise() += bias.transpose();
    return y;
}

std::vector<std::string> LayerWeights::linearModules() const {
    const std::vector<std::string_view> attentionNames = attentionModules(attention);
    std::vector<std::string> out(attentionNames.begin(), attentionNames.end());
    if (!isMoe()) {
        out.insert(out.end(), kLinearModules.begin() + 4, kLinearModules.end());  // gate, up, down
        return out;
    }
    for (std::size_t e = 0; e < experts.size(); ++e) {
        const std::string prefix = moeNames.expert(static_cast<int>(e));
        for (const std::string* part : {&moeNames.gate, &moeNames.up, &moeNames.down})
            if (!part->empty()) out.push_back(prefix + *part);  // gpt-oss: gate_up_proj fuses gate and up
    }
    if (hasSharedExpert())
        for (const std::string* part : {&moeNames.gate, &moeNames.up, &moeNames.down})
            out.push_back(moeNames.sharedExpert() + *part);
    return out;
}

Linear& LayerWeights::linear(std::string_view module) {
    return const_cast<Linear&>(static_cast<const LayerWeights&>(*this).linear(module));
}

const Linear& LayerWeights::linear(std::string_view module) const {
    if (isMoe() && module.starts_with(moeNames.block + ".")) {
        const std::string_view rest = module.substr(moeNames.block.size() + 1);
        if (rest == moeNames.routerName) return router;
        if (hasSharedExpert() && rest == moeNames.shared + "_gate") return sharedExpertGate;
        if (hasSharedExpert() && rest.starts_with(moeNames.shared + ".")) {
            const std::string_view name = rest.substr(moeNames.shared.size() + 1);
            if (name == moeNames.gate) return sharedExpert.gate;
            if (name == moeNames.up) return sharedExpert.up;
            if (name == moeNames.down) return sharedExpert.down;
        }
        constexpr std::string_view kExperts = "experts.";
        if (rest.starts_with(kExperts)) {
            const std::string_view tail = rest.substr(kExperts.size());
            const auto dot = tail.find('.');
            std::size_t e = 0;
            const auto digits = tail.substr(0, dot);
            const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), e);
            if (dot != std::string_view::npos && ec == std::errc() && end == digits.data() + digits.size() &&
                e < experts.size()) {
                const Expert& x = experts[e];
                const std::string_view name = tail.substr(dot + 1);
                if (name == moeNames.gate) return x.gate;
                if (!moeNames.fusedGateUp() && name == moeNames.up) return x.up;
                if (name == moeNames.down) return x.down;
            }
        }
    }
    for (const std::string_view name : attentionModules(attention))
        if (name == module) return attentionLinear(module);
    if (isDeltaNet() && module == modules::kInProjB) return deltaNet.inProjB;  // dense, as a router
    if (isDeltaNet() && module == modules::kInProjA) return deltaNet.inProjA;
    const std::array<const Linear*, 3> mlp{&gate, &up, &down};
    for (std::size_t i = 0; i < mlp.size(); ++i)
        if (kLinearModules[4 + i] == module) return *mlp[i];
    throw Error("decoder layer has no linear module '" + std::string(module) + "'");
}

// One of the attention's linears by its module name (any layout's).
const Linear& LayerWeights::attentionLinear(std::string_view module) const {
    const std::array<std::pair<std::string_view, const Linear*>, 11> all{{{modules::kQProj, &q},
                                                                          {modules::kInProjQkv, &deltaNet.inProjQkv},
                                                                          {modules::kInProjZ, &deltaNet.inProjZ},
                                                                          {modules::kDeltaOutProj, &deltaNet.outProj},
                                                                          {modules::kKProj, &k},
                                                                          {modules::kVProj, &v},
                                                                          {modules::kOProj, &o},
                                                                          {modules::kQAProj, &qA},
                                                                          {modules::kQBProj, &qB},
                                                                          {modules::kKvAProj, &kvA},
                                                                          {modules::kKvBProj, &kvB}}};
    for (const auto& [name, l] : all)
        if (name == module) return *l;
    throw Error("decoder layer has no attention module '" + std::string(module) + "'");
}

}  // namespace qs::model
