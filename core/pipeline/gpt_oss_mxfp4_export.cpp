#include "qs/pipeline/gpt_oss_mxfp4_export.h"

#include <cmath>
#include <regex>

#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/dtype.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nibbles.h"

namespace qs::pipeline {

namespace {

constexpr int kBlock = quant::kMxfp4BlockSize;

// What transformers' GptOssExperts holds: gate_up_proj [E, H, 2I] and down_proj [E, I, H], x @ W.
bool isStackedExpert(const io::TensorInfo& t) {
    static const std::regex name(R"(model\.layers\.\d+\.mlp\.experts\.(gate_up_proj|down_proj))");
    return t.shape.size() == 3 && std::regex_match(t.name, name);
}

std::string where(const io::Checkpoint& ck, const std::string& tensor) { return ck.root().string() + ": " + tensor; }

// The modules gpt-oss keeps in BF16, as its own config states them.
nlohmann::json mxfp4QuantizationConfig() {
    return {{"quant_method", "mxfp4"},
            {"modules_to_not_convert",
             {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}};
}

struct ExpertTensors {
    std::vector<std::uint8_t> blocks, scales;
    double errorSquares = 0.0, weightSquares = 0.0;
};

// One expert [in, out] as stored: transposed to [out, in] (rows are output features, blocks run
// along the inputs), quantized, packed even-low, its error accumulated.
void quantizeExpert(const io::Checkpoint& ck, const io::TensorView& view, std::int64_t e, ExpertTensors& out) {
    const std::int64_t in = view.shape()[1], outFeatures = view.shape()[2];
    std::vector<float> stored(static_cast<std::size_t>(in * outFeatures));
    view.decode(static_cast<std::size_t>(e * in * outFeatures), stored.size(), stored.data());
    const MatrixF w = Eigen::Map<const MatrixF>(stored.data(), in, outFeatures).transpose();
    if (!w.allFinite())
        throw Error(where(ck, view.name()) + ": expert " + std::to_string(e) + " holds NaN or Inf weights");
    const quant::QuantizedLinear q = quant::quantizeMxfp4(w);
    const auto packed = quant::packNibbles(q.codes, quant::NibbleOrder::EvenLow);
    const auto scaleBytes = quant::mxfp4ScaleBytes(q);
    out.blocks.insert(out.blocks.end(), packed.begin(), packed.end());
    out.scales.insert(out.scales.end(), scaleBytes.begin(), scaleBytes.end());
    out.errorSquares += (w - q.dequantize()).cast<double>().squaredNorm();
    out.weightSquares += w.cast<double>().squaredNorm();
}

GptOssTensorError writeExperts(const io::Checkpoint& ck, const io::TensorView& view, io::CheckpointWriter& writer,
                               const CancelToken& cancel) {
    const std::int64_t experts = view.shape()[0], in = view.shape()[1], out = view.shape()[2];
    if (in % kBlock != 0)
        throw Error(where(ck, view.name()) + ": " + std::to_string(in) +
                    " inputs per expert are not whole MXFP4 blocks of " + std::to_string(kBlock));
    ExpertTensors t;
    for (std::int64_t e = 0; e < experts; ++e) {
        cancel.throwIfCancelled();
        quantizeExpert(ck, view, e, t);
    }
    writer.addTensor(view.name() + "_blocks", io::DType::U8, {experts, out, in / kBlock, 16},
                     std::as_bytes(std::span(t.blocks)));
    writer.addTensor(view.name() + "_scales", io::DType::U8, {experts, out, in / kBlock},
                     std::as_bytes(std::span(t.scales)));
    view.releasePages();
    return {view.name(), experts, t.weightSquares > 0 ? std::sqrt(t.errorSquares / t.weightSquares) : 0.0};
}

void report(const ProgressCallback& progress, int done, int total, const std::string& tensor) {
    if (!progress) return;
    progress(Progress{.stage = "quantize",
                      .step = done,
                      .steps = total,
                      .fraction = total == 0 ? 1.0 : static_cast<double>(done) / total,
                      .message = tensor});
}

}  // namespace

bool isDenseGptOss(const io::Checkpoint& checkpoint) {
    const nlohmann::json& c = checkpoint.config();
    if (!c.is_object() || !architectures::stacksExperts(c.value("model_type", "")) || c.contains("quantization_config"))
        return false;
    for (const auto& t : checkpoint.tensors())
        if (isStackedExpert(*t.info) && io::isDenseFloat(t.info->dtype)) return true;
    return false;
}

GptOssMxfp4Report exportGptOssMxfp4(const GptOssMxfp4Request& request, const ProgressCallback& progress,
                                    const CancelToken& cancel) {
    const io::Checkpoint source = io::Checkpoint::open(request.source);
    if (source.gguf() != nullptr || !isDenseGptOss(source))
        throw Error(
            source.root().string() +
            ": not a gpt-oss checkpoint with BF16/F16/F32 experts "
            "(model_type gpt_oss, model.layers.N.mlp.experts.gate_up_proj [experts, in, out], no quantization_config)");
    int total = 0;
    for (const auto& t : source.tensors()) total += isStackedExpert(*t.info) ? 1 : 0;

    io::CheckpointWriter writer(request.destination, io::CheckpointWriterOptions{.overwrite = request.overwrite},
                                source.root());
    GptOssMxfp4Report result;
    for (const auto& t : source.tensors()) {
        cancel.throwIfCancelled();
        const auto view = source.tensor(t.info->name);
        result.bytesBefore += view.bytes().size();
        if (!isStackedExpert(*t.info)) {
            writer.addTensor(view.name(), view.dtype(), view.shape(), view.bytes());
            result.bytesAfter += view.bytes().size();
            continue;
        }
        if (!io::isDenseFloat(view.dtype()))
            throw Error(where(source, view.name()) + ": dtype " + std::string(io::dtypeName(view.dtype())) +
                        ", expected F32, F16, BF16 or F64");
        result.tensors.push_back(writeExperts(source, view, writer, cancel));
        result.quantizedWeights += view.numel();
        result.bytesAfter += static_cast<std::uint64_t>(view.numel() / 2 + view.numel() / kBlock);
        report(progress, static_cast<int>(result.tensors.size()), total, view.name());
    }
    nlohmann::json config = source.config();
    config["quantization_config"] = mxfp4QuantizationConfig();
    writer.setConfig(std::move(config));
    writer.copyAuxiliaryFiles(source.root());
    result.written = writer.finish();
    return result;
}

}  // namespace qs::pipeline
