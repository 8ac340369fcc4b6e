#pragma once
// LayerStatistics: what calibration learns about one decoder layer's linear inputs. q/k/v read one
// input and gate/up another, so each distinct input has one Hessian accumulator, shared by the
// modules that read it (the decoder layer's hook reports each distinct input once).
//
// Memory: an input of n features holds n²/2 f64 running sums while it accumulates and n² f32 once
// its H is finalized. A caller that quantizes the modules one after another can hand each module
// back (done()) or take the last module's H for itself (takeHessian()); an input whose modules are
// all done frees its sums and its H, so a 14336-wide down_proj's 1.6 GB live only while it is quantized.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "qs/matrix.h"
#include "qs/model/decoder_layer.h"
#include "qs/pipeline/backend.h"
#include "qs/quant/hessian.h"
#include "qs/quant/input_deviation.h"

namespace qs::pipeline {

struct InputStatistics {
    InputStatistics(std::int64_t features, const Backend& backend, quant::GramInputs inputs)
        : hessian(inputs == quant::GramInputs::Bf16 ? backend.hessianOfBf16Inputs(features)
                                                    : backend.hessian(features)),
          maxAbs(VectorF::Zero(features)) {}
    std::unique_ptr<HessianSink> hessian;  // on the backend's device; released() once every module is done
    VectorF maxAbs;                        // max |x| per input channel
    std::vector<float> tokenMaxAbs;    // max |x| of each token (row) seen: static input scales are calibrated from them
    std::vector<std::string> modules;  // the modules that read this input, in the hook's order
    std::size_t done = 0;              // how many of them are done
    // GPTAQ: D = 2 (X - X̃)ᵀ X̃ / n beside H (X̃ these inputs, X the full-precision model's); null unless
    // shown by the paired hook. Freed with H.
    std::unique_ptr<quant::InputDeviationAccumulator> deviation;
};

// A linear's input in one stream beside the same linear's input over the same tokens in the
// full-precision model's stream (observeLayerPaired).
using PairedInputHook = std::function<void(const model::LinearInput& input, const MatrixF& fullPrecision)>;

class LayerStatistics {
public:
    // The Hessians accumulate where `backend` runs (not owned; it must outlive this); null: the CPU. With
    // GramInputs::Bf16 their products read the inputs rounded to bfloat16 (the calibration's --matmul bf16).
    explicit LayerStatistics(const Backend* backend = nullptr, quant::GramInputs inputs = quant::GramInputs::F32);

    // The hook to pass to Transformer::runLayer; it accumulates every input it is shown.
    model::LinearInputHook hook();
    // GPTAQ's: as hook(), and each input's D beside its H from the full-precision model's inputs.
    PairedInputHook pairedHook();
    // The hook that records the max |k| and |v| of every token's rotated keys and values (the KV cache's scales).
    model::KeyValueHook keyValueHook();
    const std::vector<float>& keyTokenMaxAbs() const { return keyTokenMaxAbs_; }
    const std::vector<float>& valueTokenMaxAbs() const { return valueTokenMaxAbs_; }

    // The statistics of the input of `module` ("self_attn.k_proj"); throws qs::Error when none was seen.
    // Its sample count, meanAbs() and maxAbs stay after the module is done; its H does not.
    const InputStatistics& input(std::string_view module) const;
    // An expert's module: the tokens the router sent to it (its Hessian may have seen more: every
    // token, with all-expert calibration); -1 for the attention and dense MLP modules.
    std::int64_t routedTokens(std::string_view module) const;
    // H = 2 XᵀX / n of that input (computed once per input, then cached until the input is freed).
    // Throws qs::Error once the input's modules are all done.
    const MatrixF& hessian(std::string_view module);
    // GPTAQ's D = 2 (X - X̃)ᵀ X̃ / n of that input (qs/quant/input_deviation.h); throws qs::Error when
    // the input was not shown by the paired hook or its modules are all done.
    MatrixF deviation(std::string_view module) const;
    bool empty() const { return inputs_.empty(); }
    std::size_t bytes() const;  // memory held by the accumulators and the cached H

    // Marks `module` as quantized; when it was the last module of its input, frees that input's
    // running sums and cached H. Idempotent.
    void done(std::string_view module);
    // Whether `module` is the only module of its input not yet done.
    bool lastOfInput(std::string_view module) const;
    // The H of `module`'s input for the caller to keep (moved out of the cache, or finalized now), the
    // input's sums freed; `module` must be the last of its input (lastOfInput), and is done afterwards.
    MatrixF takeHessian(std::string_view module);

private:
    void add(const model::LinearInput& input);
    void addPaired(const model::LinearInput& input, const MatrixF& fullPrecision);
    InputStatistics& mutableInput(std::string_view module);
    bool isDone(std::string_view module) const { return done_.find(module) != done_.end(); }

    std::map<std::string, std::shared_ptr<InputStatistics>, std::less<>> inputs_;  // by module
    std::map<const InputStatistics*, MatrixF> finalized_;
    std::set<std::string, std::less<>> done_;                  // modules done
    std::map<std::string, std::int64_t, std::less<>> routed_;  // an expert module's routed tokens
    const Backend* backend_;
    quant::GramInputs gramInputs_;
    std::vector<float> keyTokenMaxAbs_, valueTokenMaxAbs_;
};

}  // namespace qs::pipeline
