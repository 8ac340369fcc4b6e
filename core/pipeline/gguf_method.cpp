#include "gguf_method.h"

#include <chrono>
#include <mutex>
#include <numeric>
#include <optional>

#include "qs/architectures/module_names.h"
#include "qs/error.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/gguf_names.h"
#include "qs/io/tensor_name.h"
#include "qs/pipeline/gguf_type_mix.h"
#include "qs/quant/ggml_linear.h"
#include "qs/quant/output_error.h"

namespace qs::pipeline {

namespace {

// `name` as the checkpoint spells it; llama.cpp's name (which the mix reads) from Llama's spelling of it,
// `llamaName`, as gguf_export's planner does for a VLM's text tower.
GgufTensorChoice choiceOf(const std::string& name, const std::string& llamaName, std::vector<std::int64_t> shape) {
    GgufTensorChoice c;
    c.name = name;
    c.ggufName = io::ggufNameOfHfTensor(llamaName).value_or(name);
    c.naming = io::parseTensorName(name);
    c.shape = std::move(shape);
    return c;
}

quant::InputImportance importanceOf(LayerStatistics& statistics, std::string_view module) {
    if (statistics.empty()) return {};
    const std::int64_t samples = statistics.input(module).hessian->samples();
    if (samples == 0)
        return {};  // an expert no token reached (routed-only calibration): unweighted, as llama-quantize without an entry
    return ggufImportance(&statistics.hessian(module), samples);
}

// The GGUF tensor that holds `module` of a layer: the linear itself, or for an expert's projection the
// stacked [experts, out, in] tensor of its kind (llama.cpp's ffn_{gate,up,down}_exps), so that every
// expert of one kind gets the one type the file can store. gpt-oss's gate_up_proj goes into
// ffn_gate_exps and ffn_up_exps (its even and odd rows): both must get one type.
GgufTensorChoice storedChoiceOf(const std::string& layerPrefix, int layer, const std::string& module,
                                const model::LayerWeights& weights, const model::Linear& linear) {
    const std::string tail = module + ".weight";
    const std::int64_t rows = linear.weight.rows(), cols = linear.weight.cols();
    const model::MoeNames& names = weights.moeNames;
    const std::string experts = names.experts();
    if (!weights.isMoe() || !module.starts_with(experts))
        return choiceOf(layerPrefix + tail, "model.layers." + std::to_string(layer) + "." + tail, {rows, cols});
    const std::string part = module.substr(module.rfind('.') + 1);
    const std::int64_t count = static_cast<std::int64_t>(weights.experts.size());
    const std::string blk = "blk." + std::to_string(layer) + ".";
    const auto stacked = [&](const std::string& gguf, std::int64_t stackedRows) {
        GgufTensorChoice c;
        c.name = layerPrefix + experts + part + ".weight";
        c.ggufName = blk + gguf + ".weight";
        c.naming = io::parseTensorName(c.name);
        c.shape = {count, stackedRows, cols};
        return c;
    };
    if (part == names.down) return stacked("ffn_down_exps", rows);
    if (part == names.up) return stacked("ffn_up_exps", rows);
    if (names.fusedGateUp()) return stacked("ffn_gate_exps", rows / 2);
    return stacked("ffn_gate_exps", rows);
}

io::GgmlType storedTypeOf(const GgufTypeChooser& chooser, const GgufTensorChoice& choice,
                          const model::LayerWeights& weights) {
    // DeepSeek's kv_b_proj is stored as attn_k_b (each head's key rows transposed) and attn_v_b: a block
    // type along kv_b_proj's rows is no block of attn_k_b's, so the file could not hold what is measured.
    // F16 moves through the transposition unchanged (0.15 % of DeepSeek-V3's weights).
    if (weights.isLatent() && choice.name.ends_with(std::string(architectures::modules::kKvBProj) + ".weight"))
        return io::GgmlType::F16;
    const io::GgmlType type = chooser(choice);
    if (!weights.isMoe() || !weights.moeNames.fusedGateUp() ||
        choice.ggufName.find("ffn_gate_exps") == std::string::npos)
        return type;
    GgufTensorChoice up = choice;
    up.ggufName.replace(up.ggufName.find("ffn_gate_exps"), std::string_view("ffn_gate_exps").size(), "ffn_up_exps");
    if (chooser(up) != type)
        throw Error(choice.name +
                    ": llama.cpp's mix gives its gate and up rows different types, and they are one tensor here");
    return type;
}

MatrixF matrixOf(const std::vector<float>& values, std::int64_t rows, std::int64_t cols) {
    return Eigen::Map<const MatrixF>(values.data(), rows, cols);
}

// A matrix held as ggml blocks, decoded where the model reads it.
class EdgeWeights final : public model::WeightSource {
public:
    EdgeWeights(std::shared_ptr<const model::WeightSource> inner, std::optional<quant::QuantizedLinear> embedding,
                std::optional<quant::QuantizedLinear> head, bool tied)
        : inner_(std::move(inner)), embedding_(std::move(embedding)), head_(std::move(head)), tied_(tied) {}

    model::LayerWeights layer(int index) const override { return inner_->layer(index); }
    VectorF finalNorm() const override { return inner_->finalNorm(); }

    MatrixF embeddingRows(std::span<const model::TokenId> tokens) const override {
        if (!embedding_) return inner_->embeddingRows(tokens);
        const std::size_t rowBytes = io::ggmlRowBytes(embedding_->ggmlType, embedding_->cols);
        MatrixF rows(static_cast<Eigen::Index>(tokens.size()), embedding_->cols);
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (tokens[i] < 0 || tokens[i] >= embedding_->rows) return inner_->embeddingRows(tokens);  // its error
            io::ggmlDecodeRow(embedding_->ggmlType,
                              embedding_->blocks.data() + static_cast<std::size_t>(tokens[i]) * rowBytes,
                              rows.row(static_cast<Eigen::Index>(i)).data(), embedding_->cols);
        }
        return rows;
    }

    MatrixF lmHead(const MatrixF& normedHidden, const model::LayerMath& math) const override {
        const quant::QuantizedLinear* head =
            tied_ ? (embedding_ ? &*embedding_ : nullptr) : (head_ ? &*head_ : nullptr);
        if (head == nullptr) return inner_->lmHead(normedHidden, math);
        return normedHidden * decoded(*head).transpose();
    }

private:
    const MatrixF& decoded(const quant::QuantizedLinear& q) const {
        std::call_once(decodeOnce_, [&] { decodedHead_ = q.dequantize(); });
        return decodedHead_;
    }

    std::shared_ptr<const model::WeightSource> inner_;
    std::optional<quant::QuantizedLinear> embedding_, head_;
    bool tied_;
    mutable std::once_flag decodeOnce_;
    mutable MatrixF decodedHead_;
};

}  // namespace

quant::InputImportance ggufImportance(const MatrixF* h, std::int64_t samples) {
    quant::InputImportance importance;
    if (h == nullptr || h->size() == 0) return importance;
    importance.count = samples;
    importance.sumSquares.resize(static_cast<std::size_t>(h->cols()));
    for (Eigen::Index c = 0; c < h->cols(); ++c)
        importance.sumSquares[static_cast<std::size_t>(c)] =
            static_cast<float>(0.5 * double((*h)(c, c)) * double(samples));
    return importance;
}

model::ModelConfig ggufFileConfig(model::ModelConfig config, bool rotated) {
    if (rotated) config.tieWordEmbeddings = false;
    return config;
}

GgufTypeChooser ggufMethodChooser(const MethodSpec& method, const model::ModelConfig& config, bool withImportance) {
    return ggufMixChooser(ggufFileTypeOf(method.ggufFileType), config, withImportance);
}

QuantizedLayer quantizeGgufLayer(const GgufTypeChooser& chooser, const std::string& layerPrefix, int layer,
                                 model::LayerWeights& weights, LayerStatistics& statistics, const CancelToken& cancel,
                                 LayerRelease release, const LinearImportance& importance) {
    QuantizedLayer out;
    for (const std::string& module : weights.linearModules()) {
        cancel.throwIfCancelled();
        const auto start = std::chrono::steady_clock::now();
        const MatrixF& w = weights.linear(module).weight;
        const io::GgmlType type =
            storedTypeOf(chooser, storedChoiceOf(layerPrefix, layer, module, weights, weights.linear(module)), weights);
        auto q = std::make_shared<quant::QuantizedLinear>(
            quant::quantizeGgml(w, type, importance ? importance(module, w.cols()) : importanceOf(statistics, module)));
        if (!statistics.empty() && statistics.input(module).hessian->samples() > 0) {
            const auto error = quant::outputErrorFromHessian(w, q->dequantize(), statistics.hessian(module));
            q->outputError = error.relative;
            q->outputMse = error.mse;
        }
        q->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        out.emplace(std::string(module), std::move(q));
        if (release.statistics && !statistics.empty()) statistics.done(module);
        if (release.weights) weights.linear(module).weight = MatrixF();
    }
    return out;
}

std::shared_ptr<const model::WeightSource> ggufEdgeWeights(std::shared_ptr<const model::WeightSource> inner,
                                                           const io::Checkpoint& checkpoint,
                                                           const model::ModelConfig& config,
                                                           const GgufTypeChooser& chooser,
                                                           const ExportRotation* rotation) {
    const std::int64_t vocab = config.vocabSize, hidden = config.hiddenSize;
    std::optional<quant::QuantizedLinear> embedding, head;
    // The checkpoint's own names (a VLM's text tower prefix, an old export's language_model.lm_head), with
    // llama.cpp's names from Llama's spelling.
    const std::string& lmHead = config.arch.lmHead;
    const std::string embeddingName = config.arch.tensorPrefix + "embed_tokens.weight";
    const io::GgmlType embeddingType = chooser(choiceOf(embeddingName, "model.embed_tokens.weight", {vocab, hidden}));
    if (embeddingType != io::GgmlType::F32) {
        if (rotation) {
            embedding = quant::quantizeGgml(matrixOf(*rotation->valuesOf(embeddingName), vocab, hidden), embeddingType);
        } else {
            std::vector<model::TokenId> all(static_cast<std::size_t>(vocab));
            std::iota(all.begin(), all.end(), 0);
            embedding = quant::quantizeGgml(inner->embeddingRows(all), embeddingType);
        }
    }
    if (!config.tieWordEmbeddings) {
        const io::GgmlType headType = chooser(choiceOf(lmHead, "lm_head.weight", {vocab, hidden}));
        if (headType != io::GgmlType::F32)
            head = quant::quantizeGgml(
                rotation ? matrixOf(rotation->lmHead(), vocab, hidden)
                         : formats::LinearReader(checkpoint)
                               .decodeF32(lmHead.substr(0, lmHead.size() - std::string_view(".weight").size())),
                headType);
    }
    if (!embedding && !head) return inner;
    return std::make_shared<EdgeWeights>(std::move(inner), std::move(embedding), std::move(head),
                                         config.tieWordEmbeddings);
}

}  // namespace qs::pipeline
