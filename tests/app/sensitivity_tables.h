#pragma once
// A measured sensitivity table of a deep model, made up so that the GUI's Bit budget tab can be
// driven without a measurement pass: the slider test times a 32-layer frontier with it, the layout
// test lays the 32-layer heat map out at a laptop's size.
#include <cstdint>
#include <utility>
#include <vector>

#include "qs/pipeline/mixed_methods.h"
#include "qs/pipeline/mixed_precision_measure.h"

namespace qs::gui::test {

// rtn3, rtn4 and rtn8 at 3.5, 4.5 and 8.5 bits, each fused group's damage growing with its layer,
// down_proj ten times as fragile: a frontier with dozens of distinct points.
inline pipeline::SensitivityTable deepTable(int layers) {
    pipeline::SensitivityTable t;
    t.measure = pipeline::Sensitivity::GroupKl;
    t.candidates = pipeline::parseMethodList("rtn3,rtn4,rtn8");
    const std::vector<std::int64_t> params = {3 * 4096 * 4096, 4096 * 4096, 2 * 4096 * 14336, 14336 * 4096};
    for (int l = 0; l < layers; ++l)
        for (std::size_t g = 0; g < pipeline::kFusedGroups.size(); ++g) {
            pipeline::SensitivityGroup s;
            s.layer = l;
            for (auto m : pipeline::kFusedGroups[g]) s.modules.emplace_back(m);
            s.params = params[g];
            s.bitsPerWeight = {3.5, 4.5, 8.5};
            const double fragile = (1.0 + 0.1 * l) * (g == 3 ? 10.0 : 1.0) + 0.3 * double(g);
            s.damage = {fragile * 0.04, fragile * 0.01, fragile * 0.0001};
            t.groups.push_back(std::move(s));
        }
    t.uniformBpw = {3.5, 4.5, 8.5};
    t.uniformKl = {0.2, 0.05, 0.0005};
    return t;
}

}  // namespace qs::gui::test
