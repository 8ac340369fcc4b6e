#include "qs/pipeline/weight_only_quantize.h"

#include <chrono>
#include <cmath>

#include "qs/error.h"
#include "qs/io/tensor_name.h"
#include "qs/pipeline/layer_quantizer.h"

namespace qs::pipeline {

namespace {

bool isFloat(io::DType d) { return d == io::DType::BF16 || d == io::DType::F16 || d == io::DType::F32; }

// A MoE router or a shared expert's gate: "mlp.gate", "block_sparse_moe.gate", "mlp.router",
// "mlp.shared_expert_gate" (a dense MLP's "gate_proj" is a linear like any other).
bool isRouter(std::string_view module) {
    const auto dot = module.rfind('.');
    const std::string_view last = dot == std::string_view::npos ? module : module.substr(dot + 1);
    return last == "gate" || last == "router" || last.ends_with("_gate");
}

// A tensor of a vision or audio tower, or of the projector that feeds the text model.
bool isTowerTensor(std::string_view name) {
    for (const std::string_view word : {"vision", "visual", "audio", "multi_modal_projector", "mm_projector"})
        if (name.find(word) != std::string_view::npos) return true;
    return false;
}

std::string where(const io::Checkpoint& ck, const std::string& tensor) { return ck.root().string() + ": " + tensor; }

WeightOnlyLinear quantizeOne(const io::Checkpoint& ck, const std::string& prefix, const MethodSpec& method, std::uint64_t seed,
                             const CancelToken& cancel) {
    const io::TensorView view = ck.tensor(prefix + ".weight");
    const MatrixF w = view.toMatrix();
    view.releasePages();
    if (!w.allFinite()) throw Error(where(ck, view.name()) + " holds NaN or Inf weights");
    auto q = std::make_shared<quant::QuantizedLinear>(quantizeLinear(method, w, nullptr, 0, seed, nullptr, &cancel));
    const double norm = w.cast<double>().norm();
    const double error = norm > 0 ? (w - q->effectiveWeight()).cast<double>().norm() / norm : 0.0;
    return {prefix, std::move(q), error};
}

void report(const ProgressCallback& progress, std::size_t done, std::size_t total, const std::string& prefix) {
    if (!progress) return;
    progress(Progress{.stage = "quantize", .step = static_cast<int>(done), .steps = static_cast<int>(total),
                      .fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total), .message = prefix});
}

}  // namespace

std::string weightOnlyRefusal(const MethodSpec& m) {
    if (m.gguf()) return m.name + " writes a GGUF file, which needs the architecture's llama.cpp keys: not without a forward pass";
    if (m.needsCalibration() || m.kvCacheFp8 || m.activations != quant::ActivationFormat::None)
        return m.label() + " reads the model's activations, which needs a forward pass; without one only the weight-only "
               "methods apply (rtn, fp8, fp8-channel, fp8-tensor, mxfp4, nvfp4, nf4, trellis)";
    return "";
}

WeightOnlySelection selectWeightOnlyLinears(const io::Checkpoint& checkpoint) {
    WeightOnlySelection s;
    for (const auto& t : checkpoint.tensors()) {
        const auto& n = t.naming;
        if (n.role != io::TensorRole::Linear || n.layer < 0 || n.part != "weight" || t.info->shape.size() != 2 ||
            !isFloat(t.info->dtype))
            continue;
        const std::string prefix = t.info->name.substr(0, t.info->name.size() - std::string_view(".weight").size());
        (isRouter(n.module) || isTowerTensor(t.info->name) ? s.keptDense : s.quantized).push_back(prefix);
    }
    return s;
}

WeightOnlyResult quantizeWeightsOnly(const io::Checkpoint& checkpoint, const MethodSpec& method, std::uint64_t seed,
                                     const ProgressCallback& progress, const CancelToken& cancel) {
    if (const auto why = weightOnlyRefusal(method); !why.empty()) throw Error(why);
    if (!checkpoint.quantizationConfig().empty() || checkpoint.gguf() != nullptr)
        throw Error(checkpoint.root().string() + ": the source is already quantized; quantize the dense original");
    const auto start = std::chrono::steady_clock::now();
    WeightOnlySelection selection = selectWeightOnlyLinears(checkpoint);
    if (selection.quantized.empty())
        throw Error(checkpoint.root().string() + ": no linear weight inside the decoder layers (<...>.layers.N.<module>.weight, "
                    "2-D, BF16/F16/F32) to quantize");
    WeightOnlyResult r{method, {}, std::move(selection.keptDense), 0.0, 0.0};
    double bits = 0.0, weights = 0.0;
    for (const auto& prefix : selection.quantized) {
        cancel.throwIfCancelled();
        r.linears.push_back(quantizeOne(checkpoint, prefix, method, seed, cancel));
        const auto& q = *r.linears.back().q;
        const double n = static_cast<double>(q.rows) * static_cast<double>(q.cols);
        bits += q.bitsPerWeight() * n;
        weights += n;
        report(progress, r.linears.size(), selection.quantized.size(), prefix);
    }
    r.bitsPerWeight = bits / weights;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

std::filesystem::path exportWeightsOnly(const ExportRequest& request, const io::Checkpoint& source, const WeightOnlyResult& result,
                                        const ProgressCallback& progress, const CancelToken& cancel) {
    std::vector<std::pair<std::string, const quant::QuantizedLinear*>> linears;
    nlohmann::json errors = nlohmann::json::object();
    for (const auto& l : result.linears) {
        linears.emplace_back(l.prefix, l.q.get());
        errors[l.prefix] = l.weightError;
    }
    const nlohmann::json report = {{"method", result.method.name},
                                   {"label", result.method.label()},
                                   {"forward_pass", false},
                                   {"kl", nullptr},
                                   {"note", "quantized without a forward pass: no KL or output error was measured"},
                                   {"bits_per_weight", result.bitsPerWeight},
                                   {"seconds", result.seconds},
                                   {"weight_error", std::move(errors)},
                                   {"kept_dense", result.keptDense}};
    return exportLinears(request, source, linears, report, progress, cancel);
}

}  // namespace qs::pipeline
