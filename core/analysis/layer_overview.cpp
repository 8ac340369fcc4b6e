#include "qs/analysis/layer_overview.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "qs/analysis/tensor_stats.h"
#include "qs/error.h"
#include "qs/io/tensor_name.h"

#include "chunk_loop.h"

namespace qs::analysis {
namespace {

struct TailMoments {
    double m4 = 0.0;  // sum of (w - mean)^4
    std::uint64_t outliers = 0;
};

// The decoder's linears: a VLM's vision tower has layers of its own, which are not the decoder's.
bool isDecoderLinear(const io::CheckpointTensor& t) {
    return t.naming.role == io::TensorRole::Linear && t.naming.layer >= 0 && !io::isTowerTensor(t.info->name);
}

bool isQuantizedCodes(const io::CheckpointTensor& t, const QuantizedLinears& quantized) {
    return quantized.isCodes && isDecoderLinear(t) && quantized.isCodes(t);
}

// A quantized linear's codes before its stored "weight" (FP8's codes are a float type, but without
// their block scales).
bool isOverviewTensor(const io::CheckpointTensor& t, const QuantizedLinears& quantized) {
    if (isQuantizedCodes(t, quantized)) return true;
    return isDecoderLinear(t) && t.naming.part == "weight" && t.info->decodesToF32();
}

// The statistics of a quantized linear's decoded weights, through the same streaming code as a stored
// tensor's (a view of the f32 matrix under the codes tensor's name).
WeightStats decodedWeightStats(const io::CheckpointTensor& t, const QuantizedLinears& quantized, double outlierSigma,
                               const qs::CancelToken& cancel) {
    const MatrixF w = quantized.decode(t);
    io::TensorInfo info;
    info.name = t.info->name;
    info.dtype = io::DType::F32;
    info.shape = {w.rows(), w.cols()};
    info.end = static_cast<std::uint64_t>(w.size()) * sizeof(float);
    const auto* bytes = reinterpret_cast<const std::byte*>(w.data());
    return computeWeightStats(io::TensorView(info, {bytes, info.end}), outlierSigma, cancel);
}

std::vector<std::string> orderedModules(std::vector<std::string> modules) {
    std::sort(modules.begin(), modules.end(), [](const std::string& a, const std::string& b) {
        const int ra = moduleRank(a);
        const int rb = moduleRank(b);
        return ra != rb ? ra < rb : a < b;
    });
    modules.erase(std::unique(modules.begin(), modules.end()), modules.end());
    return modules;
}

}  // namespace

std::string_view statisticName(LayerStatistic statistic) {
    switch (statistic) {
        case LayerStatistic::StdDev: return "σ";
        case LayerStatistic::MaxAbs: return "max|w|";
        case LayerStatistic::Kurtosis: return "excess kurtosis";
        case LayerStatistic::OutlierFraction: return "outlier fraction";
    }
    return "";
}

double WeightStats::value(LayerStatistic statistic) const {
    switch (statistic) {
        case LayerStatistic::StdDev: return stddev;
        case LayerStatistic::MaxAbs: return maxAbs;
        case LayerStatistic::Kurtosis: return kurtosis;
        case LayerStatistic::OutlierFraction: return outlierFraction;
    }
    return 0.0;
}

WeightStats computeWeightStats(const io::TensorView& tensor, double outlierSigma, const qs::CancelToken& cancel) {
    TensorStatsOptions statsOptions;
    statsOptions.cancel = cancel;
    const TensorStats stats = computeTensorStats(tensor, statsOptions);

    WeightStats w;
    w.tensor = tensor.name();
    w.count = stats.finiteCount;
    if (w.count == 0) return w;
    w.mean = stats.mean;
    w.stddev = stats.std;
    w.maxAbs = std::max(std::abs(stats.min), std::abs(stats.max));
    if (w.stddev == 0.0) return w;

    // Per-chunk partials merged in chunk order: the result does not depend on the thread count.
    std::vector<TailMoments> partials(
        detail::chunkCount(static_cast<std::size_t>(tensor.numel()), detail::kChunkElements));
    const double limit = outlierSigma * w.stddev;
    detail::forEachChunk(tensor, detail::kChunkElements, cancel,
                         [&](int, std::size_t chunk, std::size_t, std::span<const float> values) {
                             TailMoments& p = partials[chunk];
                             for (const float v : values) {
                                 if (!std::isfinite(v)) continue;
                                 const double d = static_cast<double>(v) - w.mean;
                                 const double d2 = d * d;
                                 p.m4 += d2 * d2;
                                 p.outliers += std::abs(d) > limit;
                             }
                         });
    TailMoments total;
    for (const TailMoments& p : partials) {
        total.m4 += p.m4;
        total.outliers += p.outliers;
    }
    const double n = static_cast<double>(w.count);
    const double var = w.stddev * w.stddev;
    w.kurtosis = total.m4 / n / (var * var) - 3.0;
    w.outlierFraction = static_cast<double>(total.outliers) / n;
    return w;
}

const WeightStats* LayerOverview::cell(std::size_t layerRow, std::size_t moduleColumn) const {
    if (layerRow >= layers.size() || moduleColumn >= modules.size()) return nullptr;
    const auto& c = cells[layerRow * modules.size() + moduleColumn];
    return c ? &*c : nullptr;
}

LayerOverview computeLayerOverview(const io::Checkpoint& checkpoint, const LayerOverviewOptions& options) {
    std::vector<const io::CheckpointTensor*> selected;
    std::vector<std::string> modules;
    for (const io::CheckpointTensor& t : checkpoint.tensors()) {
        if (!isOverviewTensor(t, options.quantized) || (options.skip && options.skip(t))) continue;
        selected.push_back(&t);
        modules.push_back(t.naming.module);
    }
    LayerOverview overview;
    overview.outlierSigma = options.outlierSigma;
    overview.modules = orderedModules(std::move(modules));
    for (const auto* t : selected) overview.layers.push_back(t->naming.layer);
    std::sort(overview.layers.begin(), overview.layers.end());
    overview.layers.erase(std::unique(overview.layers.begin(), overview.layers.end()), overview.layers.end());
    overview.cells.resize(overview.layers.size() * overview.modules.size());

    for (std::size_t i = 0; i < selected.size(); ++i) {
        options.cancel.throwIfCancelled();
        const io::CheckpointTensor& t = *selected[i];
        if (options.progress) {
            options.progress({"overview", static_cast<int>(i) + 1, static_cast<int>(selected.size()),
                              static_cast<double>(i) / static_cast<double>(selected.size()), t.info->name});
        }
        const auto row = static_cast<std::size_t>(
            std::lower_bound(overview.layers.begin(), overview.layers.end(), t.naming.layer) - overview.layers.begin());
        const auto column = static_cast<std::size_t>(
            std::find(overview.modules.begin(), overview.modules.end(), t.naming.module) - overview.modules.begin());
        overview.cells[row * overview.modules.size() + column] =
            isQuantizedCodes(t, options.quantized)
                ? decodedWeightStats(t, options.quantized, options.outlierSigma, options.cancel)
                : computeWeightStats(checkpoint.tensor(t.info->name), options.outlierSigma, options.cancel);
    }
    if (options.progress && !selected.empty()) {
        options.progress(
            {"overview", static_cast<int>(selected.size()), static_cast<int>(selected.size()), 1.0, "done"});
    }
    return overview;
}

int moduleRank(std::string_view module) {
    // Suffixes, so that "self_attn.q_proj", "attention.wq" and "mlp.experts.0.down_proj" all sort sensibly;
    // DeepSeek's latent attention as its forward pass reads it: q_a, q_b, kv_a, kv_b, o.
    static constexpr std::array<std::pair<std::string_view, int>, 26> kRanks{{
        {"q_proj", 0},
        {"wq", 0},
        {"q_a_proj", 0},
        {"q_b_proj", 0},
        {"kv_a_proj_with_mqa", 1},
        {"kv_b_proj", 2},
        {"k_proj", 1},
        {"wk", 1},
        {"v_proj", 2},
        {"wv", 2},
        {"qkv_proj", 3},
        {"o_proj", 4},
        {"wo", 4},
        {"gate_proj", 10},
        {"w1", 10},
        {"up_proj", 11},
        {"w3", 11},
        {"gate_up_proj", 12},
        {"down_proj", 13},
        {"w2", 13},
        {"input_layernorm", 20},
        {"post_attention_layernorm", 21},
        {"pre_feedforward_layernorm", 22},
        {"post_feedforward_layernorm", 23},
        {"q_norm", 24},
        {"k_norm", 25},
    }};
    const std::size_t dot = module.rfind('.');
    const std::string_view last = dot == std::string_view::npos ? module : module.substr(dot + 1);
    for (const auto& [name, rank] : kRanks) {
        if (last == name) return rank;
    }
    return 100;
}

}  // namespace qs::analysis
