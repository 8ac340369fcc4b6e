#include "qs/pipeline/exporter.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "qs/error.h"
#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/dtype.h"
#include "qs/pipeline/export_check.h"
#include "qs/pipeline/job_report.h"

#include "awq_folding.h"
#include "export_rotation.h"
#include "export_source.h"
#include "fused_export.h"

namespace qs::pipeline {

namespace {

using Linears = std::vector<std::pair<std::string, const quant::QuantizedLinear*>>;

// The quantized linears by module prefix, in layer order: complete when the result is in RAM, their
// headers when it is on disk (MethodResult::stored; the writer reads each layer back as it goes).
Linears quantizedLinears(const MethodResult& result, const model::Architecture& arch) {
    Linears linears;
    const auto& layers = linearHeaders(result);
    for (std::size_t i = 0; i < layers.size(); ++i)
        for (const auto& [module, q] : layers[i]) linears.emplace_back(layerPrefix(i, arch) + module, q.get());
    if (linears.empty()) throw Error(result.label() + ": nothing was quantized, so there is nothing to export");
    return linears;
}

const formats::LinearEncoder& chooseEncoder(const std::string& format, const Linears& linears) {
    return format.empty() ? formats::defaultEncoderFor(*linears.front().second) : formats::encoderNamed(format);
}

// The layout of the source's decoder (Llama's names when its config is not one the forward pass reads:
// the result's linears then carry Llama's names as well), and a MoE model's names of its experts and
// routers (where AWQ's shared scales fold).
struct SourceLayout {
    model::Architecture arch;
    std::optional<model::MoeNames> moe;
    const model::MoeNames* moeNames() const { return moe ? &*moe : nullptr; }
};

SourceLayout layoutOf(const io::Checkpoint& source) {
    try {
        const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
        return {config.arch, config.isMoe() ? std::optional(config.moe.names) : std::nullopt};
    } catch (const Error&) {
        return {};
    }
}

// The same for a checkpoint named by path; Llama's layout when there is none to read.
SourceLayout layoutAt(const std::filesystem::path& source) {
    try {
        return source.empty() ? SourceLayout{} : layoutOf(io::Checkpoint::open(source));
    } catch (const Error&) {
        return {};
    }
}

// The refusal for q as it will be written (with AWQ's 1/s folded into its rows where planned).
std::string refusalAsWritten(const formats::LinearEncoder& encoder, const std::string& prefix,
                             const quant::QuantizedLinear& q, const AwqFolding& folding) {
    const auto rows = folding.rowDivisors.find(prefix);
    if (rows == folding.rowDivisors.end()) return encoder.refusal(q);
    if (auto why = encoder.refusal(q); !why.empty()) return why;
    return encoder.refusal(withRowsDivided(q, rows->second));
}

// Every refusal, before a byte is written: the first few in full, then how many more ("" when none).
// `why` as the refusal of `encoder`'s layout: "cannot export as <layout>: why", unless it already says so.
std::string refusedAs(const formats::LinearEncoder& encoder, const std::string& why) {
    const std::string prefix = "cannot export as " + std::string(encoder.name());
    return why.starts_with(prefix) ? why : prefix + ": " + why;
}

class Refusals {
public:
    Refusals(const formats::LinearEncoder& encoder, const AwqFolding& folding) : encoder_(encoder), folding_(folding) {}

    void check(const std::string& prefix, const quant::QuantizedLinear& q) {
        const std::string why = refusalAsWritten(encoder_, prefix, q, folding_);
        if (why.empty()) return;
        if (++count_ <= 3) problems_ += (problems_.empty() ? "" : "; ") + prefix + ": " + why;
    }

    std::string text() const {
        if (count_ == 0) return {};
        return refusedAs(encoder_, problems_ + (count_ > 3 ? " (and " + std::to_string(count_ - 3) + " more)" : ""));
    }

private:
    const formats::LinearEncoder& encoder_;
    const AwqFolding& folding_;
    std::string problems_;
    int count_ = 0;
};

// The refusals of `linears` as given (complete).
std::string refusals(const formats::LinearEncoder& encoder, const Linears& linears, const AwqFolding& folding) {
    Refusals found(encoder, folding);
    for (const auto& [prefix, q] : linears) found.check(prefix, *q);
    return found.text();
}

// The refusals of a result on disk for each encoder, read back one layer at a time (once for all of
// them) and checked as they will be written (fused projections stacked; `planned`: the AWQ folding
// before fuseForExport consumed the parts' rows).
std::vector<std::string> storedRefusals(const std::vector<const formats::LinearEncoder*>& encoders,
                                        const MethodResult& result, const model::Architecture& arch,
                                        const AwqFolding& planned, const CancelToken& cancel = {}) {
    AwqFolding folding;  // the layer's own row divisors: all a refusal looks at
    std::vector<Refusals> found;
    for (const formats::LinearEncoder* e : encoders) found.emplace_back(*e, folding);
    for (std::size_t i = 0; i < layerCount(result); ++i) {
        cancel.throwIfCancelled();
        const QuantizedLayer layer = layerAt(result, i);
        Linears linears;
        folding.rowDivisors.clear();
        for (const auto& [module, q] : layer) {
            const std::string prefix = layerPrefix(i, arch) + module;
            linears.emplace_back(prefix, q.get());
            if (const auto rows = planned.rowDivisors.find(prefix); rows != planned.rowDivisors.end())
                folding.rowDivisors.insert(*rows);
        }
        const FusedLinears written = fuseForExport(linears, arch, folding);
        for (Refusals& f : found)
            for (const auto& [prefix, q] : written.linears) f.check(prefix, *q);
    }
    std::vector<std::string> texts;
    for (const Refusals& f : found) texts.push_back(f.text());
    return texts;
}

// Every linear of the result must be one of the source's, in its shape: its dense weight's, or, of a
// linear the source stores quantized, the shape its format decodes to.
void requireSource(const ExportSource& source, const Linears& linears) {
    const std::string root = source.checkpoint().root().string();
    for (const auto& [prefix, q] : linears) {
        const auto shape = source.linearShape(prefix);
        if (!shape)
            throw Error(root + ": no linear " + prefix + " (a tensor " + prefix + ".weight) for the quantized one");
        if (*shape != std::pair{q->rows, q->cols})
            throw Error(root + ": " + prefix + " is [" + std::to_string(shape->first) + ", " +
                        std::to_string(shape->second) + "], not the quantized linear's shape [" +
                        std::to_string(q->rows) + ", " + std::to_string(q->cols) + "]");
    }
}

// The source's linears the export leaves dense, in the source's order: every 2-D "<prefix>.weight" of a
// linear or lm_head, and every linear a quantized source stores in its format's parts, not quantized now.
std::vector<std::string> denseLinears(const ExportSource& source, const LinearSet& quantized) {
    std::vector<std::string> dense;
    std::set<std::string> listed;
    for (const auto& t : source.checkpoint().tensors()) {
        std::string prefix = source.quantizedOwner(t.info->name);
        const auto role = t.naming.role;
        if (prefix.empty() && (role == io::TensorRole::Linear || role == io::TensorRole::LmHead) &&
            t.naming.part == "weight" && t.info->shape.size() == 2)
            prefix = t.info->name.substr(0, t.info->name.size() - 7);
        if (!prefix.empty() && !quantized.contains(prefix) && listed.insert(prefix).second) dense.push_back(prefix);
    }
    return dense;
}

// A source tensor's values (rotated, when the export rotates them) divided element-wise (norm weights, biases)
// and stored back in `dtype`. A norm that scales by (offset + w) becomes (offset + w) / s - offset (Gemma's
// offset 1).
void writeDivided(io::CheckpointWriter& writer, const io::TensorView& t, std::vector<float> values, io::DType dtype,
                  const std::vector<float>& divisors, float offset = 0.0f) {
    if (values.size() != divisors.size())
        throw Error(t.name() + ": " + std::to_string(values.size()) + " values cannot absorb " +
                    std::to_string(divisors.size()) + " AWQ scales");
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = (offset + values[i]) / divisors[i] - offset;
    writer.addTensorF32(t.name(), dtype, t.shape(), values);
}

// A dense [rows, cols] source tensor's values with column c multiplied by multipliers[c] (a MoE router taking
// AWQ's shared input scales), stored back in `dtype`.
void writeColumnsMultiplied(io::CheckpointWriter& writer, const io::TensorView& t, std::vector<float> values,
                            io::DType dtype, const std::vector<float>& multipliers) {
    const std::size_t cols = multipliers.size();
    if (t.shape().size() != 2 || static_cast<std::size_t>(t.shape()[1]) != cols)
        throw Error(t.name() + ": " + std::to_string(cols) + " AWQ input scales, but the tensor has no " +
                    std::to_string(cols) + " columns to take them");
    for (std::size_t i = 0; i < values.size(); ++i) values[i] *= multipliers[i % cols];
    writer.addTensorF32(t.name(), dtype, t.shape(), values);
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json linearReport(const std::string& prefix, const quant::QuantizedLinear& q) {
    return {{"name", prefix},
            {"method", std::string(quant::methodName(q.method))},
            {"bits", q.bits},
            {"group_size", q.groupSize},
            {"symmetric", q.symmetric},
            {"act_order", !q.gIdx.empty()},
            {"bits_per_weight", q.bitsPerWeight()},
            {"output_error", number(q.outputError)},
            {"gptq_loss", number(q.gptqLoss)},
            {"damp_percent", number(q.dampPercent)},
            {"seconds", q.seconds}};
}

nlohmann::json exportReport(const ExportRequest& request, nlohmann::json report, std::string_view format,
                            nlohmann::json linears) {
    report["format"] = std::string(format);
    report["source"] = request.source.string();
    report["settings"] = request.settings;
    report["linears"] = std::move(linears);
    return report;
}

// Called for each quantized linear as the writer reaches it (a streamed export), else empty; or
// `complete` gives the linear to write in place of the listed one (a result read back from disk).
struct LinearHooks {
    std::function<void(const std::string&)> produce, release;
    std::function<std::shared_ptr<const quant::QuantizedLinear>(const std::string&)> complete = {};
};

// The tensors `encoder` stores for q, without their bytes: a measuring export's. A header read back from a work
// folder is encoded with zero codes in place of its own (what a layout stores depends on the header, never on
// the codes: bitsandbytes' quant_state records the header's absmax offset, so each linear is encoded).
std::vector<formats::EncodedTensor> measuredTensors(const formats::LinearEncoder& encoder, const std::string& prefix,
                                                    const quant::QuantizedLinear& q) {
    std::vector<formats::EncodedTensor> tensors;
    if (q.codes.empty() && q.blocks.empty()) {
        quant::QuantizedLinear standIn = q;
        if (q.codeKind == quant::CodeKind::GgmlBlocks)
            standIn.blocks.assign(static_cast<std::size_t>(q.rows) * io::ggmlRowBytes(q.ggmlType, q.cols), 0);
        else
            standIn.codes.assign(static_cast<std::size_t>(q.rows * q.cols), 0);
        tensors = encoder.encode(prefix, standIn);
    } else {
        tensors = encoder.encode(prefix, q);
    }
    for (auto& e : tensors) std::vector<std::byte>().swap(e.bytes);
    return tensors;
}

class ExportWriter {
public:
    // With a measuring `writer` (io::CheckpointWriter::measuring) nothing is written, and a result on disk
    // is not read back (measuredTensors).
    ExportWriter(const ExportRequest& request, const ExportSource& source, const formats::LinearEncoder& encoder,
                 Linears linears, AwqFolding folding, io::CheckpointWriter writer, LinearHooks hooks = {},
                 const ExportRotation* rotation = nullptr, bool measuring = false)
        : request_(request),
          rotation_(rotation),
          source_(source),
          encoder_(encoder),
          linears_(std::move(linears)),
          folding_(std::move(folding)),
          hooks_(std::move(hooks)),
          writer_(std::move(writer)),
          measuring_(measuring) {
        for (const auto& [prefix, q] : linears_) byPrefix_.emplace(prefix, q);
        for (const auto& [prefix, q] : linears_) quantized_.insert(prefix);
    }

    // The source's tensors in order: a quantized linear's written where its first stored part was (its
    // bias kept), the other parts it had in a quantized source left behind; a linear the source stores
    // quantized and the export leaves dense, decoded; every other tensor copied.
    std::filesystem::path write(const std::function<nlohmann::json()>& reportStart, const ProgressCallback& progress,
                                const CancelToken& cancel) {
        std::size_t done = 0;
        std::set<std::string> written;
        for (const auto& t : source_.checkpoint().tensors()) {
            cancel.throwIfCancelled();
            const std::string& name = t.info->name;
            if (const std::string owner = owningLinear(name, quantized_); !owner.empty()) {
                if (t.naming.part == "bias") {
                    copy(source_.checkpoint().tensor(name), folding_.rowDivisors, owner);
                } else if (written.insert(owner).second) {
                    if (hooks_.produce) hooks_.produce(owner);
                    writeLinear(owner);
                    if (hooks_.release) hooks_.release(owner);
                    report(progress, ++done, owner);
                }
            } else if (const std::string kept = source_.quantizedOwner(name); !kept.empty()) {
                if (t.naming.part == "bias")
                    source_.copy(writer_, source_.checkpoint().tensor(name));
                else if (written.insert(kept).second)
                    source_.writeDecoded(writer_, kept, columnMultipliersOf(kept + ".weight"));
            } else if (!source_.leftOut(name)) {
                copy(source_.checkpoint().tensor(name), folding_.normDivisors, "", folding_.normOffset);
                written.insert(name);
            }
        }
        if (rotation_ && rotation_->untiesLmHead() && !written.contains(rotation_->lmHeadName())) {
            const std::vector<float> values = rotation_->lmHead();
            writer_.addTensorF32(rotation_->lmHeadName(), exactDType(values, source_.denseDType()),
                                 rotation_->lmHeadShape(), values);
        }
        finishFiles(reportStart());
        return writer_.finish();
    }

    const io::CheckpointWriter& writer() const { return writer_; }

private:
    const std::vector<float>* columnMultipliersOf(const std::string& tensor) const {
        const auto it = folding_.columnMultipliers.find(tensor);
        return it == folding_.columnMultipliers.end() ? nullptr : &it->second;
    }

    void copy(const io::TensorView& t, const std::map<std::string, std::vector<float>>& divisors,
              const std::string& key = "", float offset = 0.0f) {
        const auto it = divisors.find(key.empty() ? t.name() : key);
        const std::vector<float>* columns = key.empty() ? columnMultipliersOf(t.name()) : nullptr;
        // A rotated value seldom fits the source's BF16: F32 then (exactDType), so that the export holds the
        // weights the KL was measured with.
        std::optional<std::vector<float>> rotated = rotation_ ? rotation_->valuesOf(t.name()) : std::nullopt;
        const io::DType dtype = rotated ? exactDType(*rotated, source_.keptDType(t)) : source_.keptDType(t);
        if (it != divisors.end())
            writeDivided(writer_, t, rotated ? std::move(*rotated) : t.toF32(), dtype, it->second, offset);
        else if (columns != nullptr)
            writeColumnsMultiplied(writer_, t, rotated ? std::move(*rotated) : t.toF32(), dtype, *columns);
        else if (rotated)
            writer_.addTensorF32(t.name(), dtype, t.shape(), *rotated);
        else
            source_.copy(writer_, t);
    }

    void writeLinear(const std::string& prefix) {
        if (measuring_) {
            const quant::QuantizedLinear& q = *byPrefix_.at(prefix);
            for (const auto& e : measuredTensors(encoder_, prefix, q)) addLinearTensor(e);
            linearReports_.push_back(linearReport(prefix, q));
            return;
        }
        const auto read = hooks_.complete ? hooks_.complete(prefix) : nullptr;
        const quant::QuantizedLinear& q = read ? *read : *byPrefix_.at(prefix);
        // Made just now (streamed), or read back from a work folder only now (reading a 70B result twice
        // to check it first would double the export's reads): not checked before the first byte; a
        // refusal leaves no destination, as any failure of the writer does.
        if (hooks_.produce || hooks_.complete)
            if (const std::string why = refusalAsWritten(encoder_, prefix, q, folding_); !why.empty())
                throw Error(refusedAs(encoder_, prefix + ": " + why));
        const auto rows = folding_.rowDivisors.find(prefix);
        const auto tensors = rows == folding_.rowDivisors.end()
                                 ? encoder_.encode(prefix, q)
                                 : encoder_.encode(prefix, withRowsDivided(q, rows->second));
        for (const auto& e : tensors) addLinearTensor(e);
        linearReports_.push_back(linearReport(prefix, q));  // now: a streamed linear loses its parts once written
    }

    void addLinearTensor(const formats::EncodedTensor& e) {
        writer_.addTensor(e.name, e.dtype, e.shape, e.bytes);
        linearBytes_ +=
            io::dtypeSize(e.dtype) * static_cast<std::uint64_t>(std::accumulate(e.shape.begin(), e.shape.end(),
                                                                                std::int64_t{1}, std::multiplies<>()));
    }

    void report(const ProgressCallback& progress, std::size_t done, const std::string& prefix) const {
        if (!progress) return;
        Progress p;
        p.stage = "export";
        p.step = static_cast<int>(done);
        p.steps = static_cast<int>(linears_.size());
        p.fraction = static_cast<double>(done) / static_cast<double>(linears_.size());
        p.message = prefix;
        progress(p);
    }

    // The dtype of what stays unquantized: the first linear's dense weight's, else the source's (a
    // quantized source's linears are stored in their format).
    io::DType sourceDType() const {
        const auto* first = source_.checkpoint().find(linears_.front().first + ".weight");
        return first != nullptr && io::isDenseFloat(first->info->dtype) && !first->info->ggmlType
                   ? first->info->dtype
                   : source_.denseDType();
    }

    // config.json is the source's with the encoder's quantization_config in place of any the source had.
    void finishFiles(nlohmann::json reportStart) {
        formats::ExportScheme scheme;
        scheme.linears = linears_;
        scheme.denseLinears = denseLinears(source_, quantized_);
        scheme.sourceDType = sourceDType();
        const nlohmann::json& sourceConfig = source_.checkpoint().config();
        nlohmann::json config = sourceConfig.is_object() ? sourceConfig : nlohmann::json::object();
        if (rotation_ && rotation_->untiesLmHead()) {  // the rotated lm_head is no longer the embedding
            config["tie_word_embeddings"] = false;
            const std::string& lmHead = rotation_->lmHeadName();
            const std::string prefix = lmHead.substr(0, lmHead.size() - std::string_view(".weight").size());
            if (std::find(scheme.denseLinears.begin(), scheme.denseLinears.end(), prefix) == scheme.denseLinears.end())
                scheme.denseLinears.push_back(prefix);
        }
        config["quantization_config"] = encoder_.quantizationConfig(scheme);
        writer_.setConfig(std::move(config));
        for (const auto& [file, content] : encoder_.extraFiles(scheme)) writer_.addJsonFile(file, content);
        // The report's sizes are what this export stores, once every tensor has been given to the writer.
        reportStart["linear_bytes"] = linearBytes_;
        reportStart["checkpoint_bytes"] = writer_.bytes().tensorFiles;
        writer_.addJsonFile("quantscope_report.json",
                            exportReport(request_, std::move(reportStart), encoder_.name(), linearReports_));
        source_.addAuxiliaryFiles(writer_);
    }

    const ExportRequest& request_;
    const ExportRotation* rotation_;  // a --rotate result's dense tensors; null: copied as they are
    const ExportSource& source_;
    const formats::LinearEncoder& encoder_;
    Linears linears_;
    AwqFolding folding_;
    LinearHooks hooks_;
    io::CheckpointWriter writer_;
    bool measuring_ = false;
    std::uint64_t linearBytes_ = 0;                           // the quantized linears' tensors written
    nlohmann::json linearReports_ = nlohmann::json::array();  // in the order written
    std::map<std::string, const quant::QuantizedLinear*> byPrefix_;
    LinearSet quantized_;
};

io::CheckpointWriter checkpointWriter(const ExportRequest& request, const ExportSource& source, bool measuring) {
    const io::CheckpointWriterOptions options{.overwrite = request.overwrite,
                                              .denseMlpBlock = source.checkpoint().denseMlpBlock()};
    if (measuring) return io::CheckpointWriter::measuring(options);
    return io::CheckpointWriter(request.destination, options, source.protectedPath(request.destination));
}

// The source holding each linear in its shape, then the writing; with `measured`, nothing is written and
// what would be is counted there.
std::filesystem::path writeExport(const ExportRequest& request, const io::Checkpoint& checkpoint,
                                  const formats::LinearEncoder& encoder, Linears linears, AwqFolding folding,
                                  nlohmann::json report, const ProgressCallback& progress, const CancelToken& cancel,
                                  LinearHooks hooks = {}, std::optional<std::uint64_t> rotationSeed = std::nullopt,
                                  io::WrittenBytes* measured = nullptr) {
    const ExportSource source(checkpoint);
    requireSource(source, linears);
    cancel.throwIfCancelled();
    std::optional<ExportRotation> rotation;
    if (rotationSeed) rotation.emplace(checkpoint, *rotationSeed);
    ExportWriter writer(request, source, encoder, std::move(linears), std::move(folding),
                        checkpointWriter(request, source, measured != nullptr),
                        measured ? LinearHooks{} : std::move(hooks), rotation ? &*rotation : nullptr,
                        measured != nullptr);
    std::filesystem::path written = writer.write([&report] { return std::move(report); }, progress, cancel);
    if (measured) *measured = writer.writer().bytes();
    return written;
}

}  // namespace

namespace {

std::filesystem::path exportOrMeasure(const ExportRequest& request, const MethodResult& result,
                                      const ProgressCallback& progress, const CancelToken& cancel,
                                      io::WrittenBytes* measured) {
    if (!result.error.empty()) throw Error(result.label() + " failed, so it cannot be exported: " + result.error);
    const io::Checkpoint source = io::Checkpoint::open(request.source);
    if (auto why = gptOssExpertsRefusal(source); !why.empty()) throw Error("cannot export: " + why);
    // The architecture names the layers' tensors (a VLM's text tower prefix) and the norms AWQ folds into.
    const SourceLayout layout = layoutOf(source);
    const model::Architecture& arch = layout.arch;
    const Linears parts = quantizedLinears(result, arch);
    const formats::LinearEncoder& encoder = chooseEncoder(request.format, parts);
    AwqFolding folding = planAwqFolding(linearHeaders(result), arch, layout.moeNames());
    const AwqFolding planned = folding;  // the parts' row divisors, before fusing consumes them
    // A checkpoint that fuses q/k/v or gate/up (Phi-3) gets them back fused, as it stored them.
    const FusedLinears fused = fuseForExport(parts, arch, folding);
    // A result on disk is checked as the writer reads each linear back (ExportWriter::writeLinear).
    if (!result.stored)
        if (const std::string why = refusals(encoder, fused.linears, folding); !why.empty()) throw Error(why);
    if (auto mismatch = sourceMismatch(result, io::fingerprintOf(source)); !mismatch.empty())
        throw Error("cannot export: " + mismatch);
    LinearHooks hooks;
    if (result.stored) {  // the codes are read back a layer at a time as the writer reaches them
        auto stored = std::make_shared<StoredLinearReader>(result.stored,
                                                           [&arch](std::size_t i) { return layerPrefix(i, arch); });
        hooks.complete =
            [reader = std::make_shared<FusedLinearReader>(arch, planned.rowDivisors, [stored](const std::string& p) {
                 return stored->complete(p);
             })](const std::string& prefix) { return reader->complete(prefix); };
    }
    return writeExport(request, source, encoder, fused.linears, std::move(folding), toJson(result), progress, cancel,
                       std::move(hooks), result.rotationSeed, measured);
}

}  // namespace

std::filesystem::path exportCheckpoint(const ExportRequest& request, const MethodResult& result,
                                       const ProgressCallback& progress, const CancelToken& cancel) {
    return exportOrMeasure(request, result, progress, cancel, nullptr);
}

io::WrittenBytes measureExport(const ExportRequest& request, const MethodResult& result, const CancelToken& cancel) {
    io::WrittenBytes measured;
    exportOrMeasure(request, result, {}, cancel, &measured);
    return measured;
}

std::vector<std::string> exportRefusals(const MethodResult& result,
                                        const std::vector<const formats::LinearEncoder*>& encoders,
                                        const CancelToken& cancel) {
    std::vector<std::string> why(encoders.size());
    try {
        std::string common;
        if (!result.error.empty())
            common = result.label() + " failed, so it cannot be exported: " + result.error;
        else
            common = gptOssExpertsRefusal(io::Checkpoint::open(result.source.path));
        if (!common.empty()) return std::vector<std::string>(encoders.size(), common);
        // The names and the norms AWQ folds into are the source's architecture's (a VLM's text tower).
        const SourceLayout layout = layoutAt(result.source.path);
        const model::Architecture& arch = layout.arch;
        AwqFolding folding = planAwqFolding(linearHeaders(result), arch, layout.moeNames());
        const AwqFolding planned = folding;
        const FusedLinears fused = fuseForExport(quantizedLinears(result, arch), arch, folding);
        if (result.stored) {
            why = storedRefusals(encoders, result, arch, planned, cancel);
        } else {
            for (std::size_t i = 0; i < encoders.size(); ++i) why[i] = refusals(*encoders[i], fused.linears, folding);
        }
        // What only the whole states: a layout with one group size or one scale granularity for the
        // model refuses a mix of them when it writes its config.
        for (std::size_t i = 0; i < encoders.size(); ++i) {
            if (!why[i].empty()) continue;
            try {
                (void)encoders[i]->quantizationConfig(formats::ExportScheme{fused.linears, {}, io::DType::BF16});
            } catch (const std::exception& e) {
                why[i] = refusedAs(*encoders[i], e.what());
            }
        }
    } catch (const Cancelled&) {
        throw;
    } catch (const std::exception& e) {  // the check itself failed (an unreadable work folder): every layout is refused
        for (std::size_t i = 0; i < encoders.size(); ++i) why[i] = refusedAs(*encoders[i], e.what());
    }
    return why;
}

std::string exportRefusal(const MethodResult& result, const formats::LinearEncoder& encoder,
                          const CancelToken& cancel) {
    return exportRefusals(result, {&encoder}, cancel).front();
}

std::filesystem::path exportStreamed(const ExportRequest& request, const io::Checkpoint& source,
                                     const StreamedLinears& streamed, const std::function<nlohmann::json()>& report,
                                     const ProgressCallback& progress, const CancelToken& cancel) {
    if (streamed.linears.empty())
        throw Error(source.root().string() + ": no linear to quantize, so there is nothing to export");
    if (auto why = gptOssExpertsRefusal(source); !why.empty()) throw Error("cannot export: " + why);
    Linears linears(streamed.linears.begin(), streamed.linears.end());
    const formats::LinearEncoder& encoder = formats::encoderNamed(request.format);
    const ExportSource exportSource(source);
    ExportWriter writer(request, exportSource, encoder, std::move(linears), AwqFolding{},
                        checkpointWriter(request, exportSource, false), {streamed.produce, streamed.release});
    return writer.write(report, progress, cancel);
}

}  // namespace qs::pipeline
