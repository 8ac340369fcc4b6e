#include "qs/pipeline/weight_only_quantize.h"

#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/io/tensor_name.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/pipeline/quantized_source.h"

#include "export_source.h"

namespace qs::pipeline {

namespace {

std::string where(const io::Checkpoint& ck, const std::string& tensor) { return ck.root().string() + ": " + tensor; }

// Releases what an encoded linear no longer needs: its codes and scales (NVFP4's f32 scales alone are
// two bits per weight). The header, and what the layouts' configs read (bits, groups, bitsandbytes'
// scale codes), stay.
void releaseParts(quant::QuantizedLinear& q) {
    std::vector<std::uint8_t>().swap(q.codes);
    std::vector<std::uint8_t>().swap(q.blocks);
    q.scales = MatrixF();
    q.zeros = MatrixF();
}

// The linears as the writer reaches them: each quantized from its weight when asked, its codes freed
// once written; what remains (headers, scales) describes the export's config.
class WeightOnlyStream {
public:
    WeightOnlyStream(const formats::LinearReader& reader, const MethodSpec& method, std::uint64_t seed,
                     const CancelToken& cancel, const std::vector<std::string>& prefixes)
        : checkpoint_(reader.checkpoint()),
          reader_(reader),
          quantizedInSource_(quantizedLinearsOf(reader)),
          method_(method),
          seed_(seed),
          cancel_(cancel),
          order_(prefixes) {
        for (const auto& prefix : prefixes) linears_.emplace(prefix, Linear{});
    }

    StreamedLinears streamed() {
        StreamedLinears s;
        for (const auto& prefix : order_) s.linears.emplace_back(prefix, &linears_.at(prefix).q);
        s.produce = [this](const std::string& prefix) { produce(prefix); };
        s.release = [this](const std::string& prefix) { releaseParts(linears_.at(prefix).q); };
        return s;
    }

    std::vector<WeightOnlyLinearReport> reports() const {  // in the checkpoint's order
        std::vector<WeightOnlyLinearReport> out;
        for (const auto& prefix : order_) {
            const Linear& linear = linears_.at(prefix);
            out.push_back({prefix, linear.weightError, linear.bitsPerWeight});
        }
        return out;
    }

    double bitsPerWeight() const {
        double bits = 0.0, weights = 0.0;
        for (const auto& [prefix, linear] : linears_) {
            const double n = static_cast<double>(linear.q.rows) * static_cast<double>(linear.q.cols);
            bits += linear.bitsPerWeight * n;
            weights += n;
        }
        return weights > 0 ? bits / weights : 0.0;
    }

private:
    struct Linear {
        quant::QuantizedLinear q;
        double weightError = 0.0;
        double bitsPerWeight = 0.0;  // measured before its parts are released
    };

    // The weight as stored, or as a quantized source's format decodes it (refusing NaN and Inf too).
    MatrixF weightOf(const std::string& prefix) const {
        if (quantizedInSource_.contains(prefix)) return reader_.decodeF32(prefix);
        const io::TensorView view = checkpoint_.tensor(prefix + ".weight");
        MatrixF w = view.toMatrix();
        view.releasePages();
        if (!w.allFinite()) throw Error(where(checkpoint_, view.name()) + " holds NaN or Inf weights");
        return w;
    }

    void produce(const std::string& prefix) {
        const MatrixF w = weightOf(prefix);
        Linear& linear = linears_.at(prefix);
        linear.q = quantizeLinear(method_, w, nullptr, 0, seed_, nullptr, &cancel_);
        const double norm = w.cast<double>().norm();
        linear.weightError = norm > 0 ? (w - linear.q.effectiveWeight()).cast<double>().norm() / norm : 0.0;
        linear.bitsPerWeight = linear.q.bitsPerWeight();
    }

    const io::Checkpoint& checkpoint_;
    const formats::LinearReader& reader_;
    const LinearSet quantizedInSource_;  // the linears a quantized source stores in its format's parts
    const MethodSpec& method_;
    std::uint64_t seed_;
    const CancelToken& cancel_;
    std::vector<std::string> order_;
    std::map<std::string, Linear> linears_;  // node-based: the addresses handed to the writer stay valid
};

}  // namespace

std::string weightOnlyRefusal(const MethodSpec& m) {
    if (m.gguf())
        return m.name +
               " writes a GGUF file, which needs the architecture's llama.cpp keys: not without a forward pass";
    if (m.needsCalibration() || m.kvCacheFp8 || m.activations != quant::ActivationFormat::None)
        return m.label() +
               " reads the model's activations, which needs a forward pass; without one only the weight-only "
               "methods apply (rtn, fp8, fp8-channel, fp8-tensor, mxfp4, nvfp4, nf4, trellis)";
    return "";
}

WeightOnlySelection selectWeightOnlyLinears(const formats::LinearReader& reader) {
    WeightOnlySelection s;
    const LinearSet quantizedInSource = quantizedLinearsOf(reader);
    std::set<std::string> listed;
    for (const auto& t : reader.checkpoint().tensors()) {
        // A linear a quantized source stores in its format's parts, or a dense linear's float weight.
        std::string prefix = owningLinear(t.info->name, quantizedInSource);
        const auto& n = t.naming;
        if (prefix.empty() && n.part == "weight" && t.info->shape.size() == 2 && io::isDenseFloat(t.info->dtype))
            prefix = t.info->name.substr(0, t.info->name.size() - std::string_view(".weight").size());
        if (prefix.empty() || n.role != io::TensorRole::Linear || n.layer < 0 || !listed.insert(prefix).second)
            continue;
        // Qwen3.5's per-head in_proj_b / in_proj_a stay dense as the Job keeps them (vLLM merges them into in_proj_ba).
        const bool perHead = n.module.ends_with("linear_attn.in_proj_b") || n.module.ends_with("linear_attn.in_proj_a");
        (io::isRouterModule(n.module) || perHead || io::isTowerTensor(t.info->name) ? s.keptDense : s.quantized)
            .push_back(prefix);
    }
    return s;
}

WeightOnlyReport exportWeightsOnly(const ExportRequest& request, const io::Checkpoint& source, const MethodSpec& method,
                                   std::uint64_t seed, const ProgressCallback& progress, const CancelToken& cancel) {
    if (const auto why = weightOnlyRefusal(method); !why.empty()) throw Error(why);
    const formats::LinearReader reader(source);
    requireDecodableSource(source, reader.format());  // a quantized source is quantized from its decoded weights
    const std::optional<QuantizedSource> quantized = quantizedSource(reader.format());
    const auto start = std::chrono::steady_clock::now();
    WeightOnlySelection selection = selectWeightOnlyLinears(reader);
    if (selection.quantized.empty())
        throw Error(source.root().string() +
                    ": no linear weight inside the decoder layers (<...>.layers.N.<module>.weight, "
                    "2-D, BF16/F16/F32) to quantize");
    WeightOnlyStream stream(reader, method, seed, cancel, selection.quantized);
    WeightOnlyReport r;
    r.keptDense = std::move(selection.keptDense);
    const auto report = [&] {
        r.linears = stream.reports();
        r.bitsPerWeight = stream.bitsPerWeight();
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        nlohmann::json errors = nlohmann::json::object();
        for (const auto& l : r.linears) errors[l.prefix] = l.weightError;
        return nlohmann::json{{"method", method.name},
                              {"label", method.label()},
                              {"forward_pass", false},
                              {"kl", nullptr},
                              {"note", "quantized without a forward pass: no KL or output error was measured"},
                              {"bits_per_weight", r.bitsPerWeight},
                              {"seconds", r.seconds},
                              {"weight_error", std::move(errors)},
                              {"kept_dense", r.keptDense},
                              {"source_quantization", quantized ? toJson(*quantized) : nlohmann::json(nullptr)}};
    };
    r.written = exportStreamed(request, source, stream.streamed(), report, progress, cancel);
    return r;
}

}  // namespace qs::pipeline
