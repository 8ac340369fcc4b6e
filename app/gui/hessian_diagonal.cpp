#include "hessian_diagonal.h"

#include <algorithm>
#include <numeric>

#include "qs/error.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/layer_statistics.h"
#include "qs/pipeline/run_text.h"

namespace qs::gui {
namespace {

constexpr const char* kLinears[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};

HessianDiagonal diagonalOf(const MatrixF& h) {
    HessianDiagonal d;
    d.diagonal.resize(static_cast<std::size_t>(h.rows()));
    for (Eigen::Index c = 0; c < h.rows(); ++c) d.diagonal[static_cast<std::size_t>(c)] = h(c, c);
    d.actOrderRank = actOrderRanks(d.diagonal);
    return d;
}

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

LayerHessians computeLayerHessians(const HessianRequest& request, const qs::CancelToken& cancel) {
    const io::Checkpoint& checkpoint = *request.checkpoint;
    const model::Tokenizer tokenizer = model::Tokenizer::fromFile(checkpoint.root());
    const std::filesystem::path text = pipeline::resolveRunText(pipeline::TextRole::Calibration, {}, checkpoint);
    const pipeline::TokenSequences sequences = pipeline::tokenWindows(
        tokenizer, pipeline::loadTexts(text), request.samples, request.sequenceLength, text.string());
    model::Transformer transformer = model::Transformer::fromCheckpoint(checkpoint);
    if (request.layer < 0 || request.layer >= transformer.config().numLayers)
        throw Error("layer " + std::to_string(request.layer) + " is not a decoder layer of " + checkpoint.root().string());

    pipeline::LayerStatistics statistics;
    const model::LinearInputHook hook = statistics.hook();
    std::vector<MatrixF> hidden;
    for (const auto& tokens : sequences) hidden.push_back(transformer.embed(tokens));
    // Layer by layer, as calibration does: each layer's weights are loaded once.
    for (int layer = 0; layer <= request.layer; ++layer) {
        for (MatrixF& h : hidden) {
            cancel.throwIfCancelled();
            transformer.runLayer(layer, h, layer == request.layer ? hook : model::LinearInputHook());
        }
    }
    LayerHessians result;
    result.layer = request.layer;
    for (const char* module : kLinears) {
        cancel.throwIfCancelled();
        result.samples = statistics.input(module).hessian->samples();
        result.modules.emplace(module, diagonalOf(statistics.hessian(module)));
    }
    return result;
}

}  // namespace qs::gui
