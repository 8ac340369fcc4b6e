#pragma once
// LayerStatistics: what calibration learns about one decoder layer's linear inputs. q/k/v read one
// input and gate/up another, so each distinct input has one Hessian accumulator, shared by the
// modules that read it (the decoder layer's hook reports each distinct input once).
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "qs/matrix.h"
#include "qs/model/decoder_layer.h"
#include "qs/quant/hessian.h"

namespace qs::pipeline {

struct InputStatistics {
    explicit InputStatistics(std::int64_t features) : hessian(features), maxAbs(VectorF::Zero(features)) {}
    quant::HessianAccumulator hessian;
    VectorF maxAbs;   // max |x| per input channel
};

class LayerStatistics {
public:
    // The hook to pass to Transformer::runLayer; it accumulates every input it is shown.
    model::LinearInputHook hook();

    // The statistics of the input of `module` ("self_attn.k_proj"); throws qs::Error when none was seen.
    const InputStatistics& input(std::string_view module) const;
    // H = 2 XᵀX / n of that input (computed once per input, then cached).
    const MatrixF& hessian(std::string_view module);
    bool empty() const { return inputs_.empty(); }
    std::size_t bytes() const;   // memory held by the accumulators

private:
    void add(const model::LinearInput& input);

    std::map<std::string, std::shared_ptr<InputStatistics>, std::less<>> inputs_;   // by module
    std::map<const InputStatistics*, MatrixF> finalized_;
};

}  // namespace qs::pipeline
