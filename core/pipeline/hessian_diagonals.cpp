#include "qs/pipeline/hessian_diagonals.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/quantized_source.h"

#include "hidden_states.h"
#include "source_weights.h"

namespace qs::pipeline {
namespace {

// One diagonal sink per distinct input of the layer (q/k/v read one, gate/up another), by module.
class LayerDiagonals {
public:
    explicit LayerDiagonals(const Backend& backend) : backend_(backend) {}

    model::LinearInputHook hook() {
        return [this](const model::LinearInput& input) { add(input); };
    }

    LayerHessianDiagonals finish(int layer) const {
        LayerHessianDiagonals result;
        result.layer = layer;
        std::map<const DiagonalSink*, HessianDiagonal> byInput;
        for (const auto& [module, sink] : byModule_) {
            auto it = byInput.find(sink.get());
            if (it == byInput.end()) {
                const VectorD d = sink->finalize();
                HessianDiagonal diagonal{std::vector<double>(d.data(), d.data() + d.size()), {}};
                diagonal.actOrderRank = actOrderRanks(diagonal.diagonal);
                it = byInput.emplace(sink.get(), std::move(diagonal)).first;
            }
            HessianDiagonal& shown = result.modules.emplace(module, it->second).first->second;
            if (const auto routed = routed_.find(module); routed != routed_.end()) shown.routedTokens = routed->second;
            result.samples = sink->samples();
        }
        return result;
    }

private:
    void add(const model::LinearInput& input) {
        if (input.modules.empty()) return;
        auto found = byModule_.find(input.modules.front());
        std::shared_ptr<DiagonalSink> sink;
        if (found != byModule_.end()) {
            sink = found->second;
        } else {
            sink = backend_.hessianDiagonal(input.x.cols());
            for (auto module : input.modules) byModule_.emplace(std::string(module), sink);
        }
        sink->add(input.x);
        countRouted(input);
    }

    // An expert's routed tokens, summed over the sequences: one count for all its modules, or one per
    // module when the experts' gate/up inputs come as one.
    void countRouted(const model::LinearInput& input) {
        for (std::size_t i = 0; i < input.modules.size(); ++i) {
            const std::int64_t routed =
                i < input.routedPerModule.size() ? input.routedPerModule[i] : input.routedTokens;
            if (routed >= 0) routed_[std::string(input.modules[i])] += routed;
        }
    }

    const Backend& backend_;
    std::map<std::string, std::shared_ptr<DiagonalSink>, std::less<>> byModule_;
    std::map<std::string, std::int64_t, std::less<>> routed_;
};

}  // namespace

std::vector<int> actOrderRanks(const std::vector<double>& diagonal) {
    std::vector<int> order(diagonal.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return diagonal[static_cast<std::size_t>(a)] > diagonal[static_cast<std::size_t>(b)];
    });
    std::vector<int> rank(diagonal.size());
    for (std::size_t r = 0; r < order.size(); ++r) rank[static_cast<std::size_t>(order[r])] = static_cast<int>(r);
    return rank;
}

LayerHessianDiagonals hessianDiagonals(const io::Checkpoint& checkpoint, int layer, const TokenSequences& text,
                                       const Backend& backend, const ProgressCallback& progress,
                                       const CancelToken& cancel) {
    const formats::FormatInfo format = formats::detect(checkpoint);
    requireDecodableSource(checkpoint, format);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
    if (layer < 0 || layer >= config.numLayers)
        throw Error(checkpoint.root().string() + ": layer " + std::to_string(layer) +
                    " is not a decoder layer (it has " + std::to_string(config.numLayers) + ", 0 to " +
                    std::to_string(config.numLayers - 1) + ")");
    if (text.empty())
        throw Error("the Hessian of layer " + std::to_string(layer) + " needs calibration text, and none was given");
    // A quantized checkpoint's linears decoded, as the Job calibrates from them (source_weights.h).
    model::Transformer model(config, sourceWeights(checkpoint, config, format, false));
    model.setLayerMath(backend.layerMath());
    model.setHookSeesAllExpertTokens(true);  // the Job's default MoE calibration (JobPlan::moeCalibrateAllExperts)
    HiddenStream hidden(embedAll(model, text));
    LayerDiagonals diagonals(backend);
    for (int l = 0; l <= layer; ++l) {
        if (progress)
            progress({"calibrate", l + 1, layer + 1, double(l) / double(layer + 1),
                      "layer " + std::to_string(l + 1) + "/" + std::to_string(layer + 1)});
        runLayerAll(model, l, hidden, cancel, l == layer ? diagonals.hook() : model::LinearInputHook());
    }
    cancel.throwIfCancelled();
    if (progress) progress({"calibrate", layer + 1, layer + 1, 1.0, "diagonals of layer " + std::to_string(layer)});
    return diagonals.finish(layer);
}

}  // namespace qs::pipeline
