#include "export_source.h"

#include <algorithm>
#include <cstring>

#include "qs/error.h"
#include "qs/formats/serving_quantization.h"
#include "qs/io/gguf_names.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/pipeline/quantized_source.h"

namespace qs::pipeline {
namespace {

// The float type a tensor is stored in (a GGUF's F32 / F16 / BF16 ggml types included); nullopt for
// everything else (ggml's blocks, FP8, integers, F64).
std::optional<io::DType> floatTypeOf(const io::TensorInfo& t) {
    if (t.ggmlType) {
        switch (*t.ggmlType) {
            case io::GgmlType::F32: return io::DType::F32;
            case io::GgmlType::F16: return io::DType::F16;
            case io::GgmlType::BF16: return io::DType::BF16;
            default: return std::nullopt;
        }
    }
    if (t.dtype == io::DType::F32 || t.dtype == io::DType::F16 || t.dtype == io::DType::BF16) return t.dtype;
    return std::nullopt;
}

std::optional<io::DType> torchDType(const nlohmann::json& config) {
    for (const char* key : {"torch_dtype", "dtype"}) {
        const auto it = config.find(key);
        if (it == config.end() || !it->is_string()) continue;
        const std::string name = it->get<std::string>();
        if (name == "bfloat16") return io::DType::BF16;
        if (name == "float16") return io::DType::F16;
        if (name == "float32") return io::DType::F32;
    }
    return std::nullopt;
}

io::DType denseDTypeOf(const io::Checkpoint& checkpoint) {
    for (const auto& t : checkpoint.tensors())
        if (t.naming.role == io::TensorRole::Embedding && t.naming.part == "weight")
            if (const auto dtype = floatTypeOf(*t.info)) return *dtype;
    if (checkpoint.config().is_object())
        if (const auto dtype = torchDType(checkpoint.config())) return *dtype;
    return io::DType::BF16;
}

}  // namespace

LinearSet quantizedLinearsOf(const formats::LinearReader& reader) {
    LinearSet linears;
    for (const formats::LinearRef& ref : reader.linears())
        if (ref.expert < 0 && reader.codecOf(ref).name() != "dense") linears.insert(ref.prefix);
    return linears;
}

std::string owningLinear(std::string_view name, const LinearSet& linears) {
    for (auto dot = name.find('.'); dot != std::string_view::npos; dot = name.find('.', dot + 1))
        if (const auto it = linears.find(name.substr(0, dot)); it != linears.end()) return *it;
    return "";
}

io::DType exactDType(std::span<const float> values, io::DType preferred) {
    if (preferred == io::DType::F32) return preferred;
    std::vector<std::byte> stored(values.size() * io::dtypeSize(preferred));
    io::convertFromF32(preferred, values.data(), values.size(), stored.data());
    std::vector<float> back(values.size());
    io::convertToF32(preferred, stored.data(), values.size(), back.data());
    return std::memcmp(back.data(), values.data(), values.size_bytes()) == 0 ? preferred : io::DType::F32;
}

ExportSource::ExportSource(const io::Checkpoint& checkpoint, std::optional<io::DType> decodedAs,
                           formats::DecodeOptions decode)
    : checkpoint_(checkpoint),
      reader_(checkpoint, decode),
      decodedAs_(decodedAs),
      denseDType_(denseDTypeOf(checkpoint)) {
    requireDecodableSource(checkpoint, reader_.format());
    quantizedLinears_ = quantizedLinearsOf(reader_);
}

std::optional<std::pair<std::int64_t, std::int64_t>> ExportSource::linearShape(const std::string& prefix) const {
    if (quantizedLinears_.contains(prefix))
        for (const formats::LayerQuantInfo& layer : reader_.format().layers)
            if (layer.ref.prefix == prefix && layer.ref.expert < 0) return std::pair{layer.rows, layer.cols};
    const io::CheckpointTensor* t = checkpoint_.find(prefix + ".weight");
    if (t == nullptr || t->info->shape.size() != 2) return std::nullopt;
    return std::pair{t->info->shape[0], t->info->shape[1]};
}

std::optional<std::filesystem::path> ExportSource::protectedPath(const std::filesystem::path& destination) const {
    const io::GgufFile* gguf = checkpoint_.gguf();
    if (gguf == nullptr) return checkpoint_.root();
    const auto file = std::filesystem::weakly_canonical(std::filesystem::absolute(gguf->path()));
    const auto target = std::filesystem::weakly_canonical(std::filesystem::absolute(destination));
    const auto [d, f] = std::mismatch(target.begin(), target.end(), file.begin(), file.end());
    if (d == target.end())
        throw Error(destination.string() + ": holds the source " + gguf->path().string() +
                    "; write the output elsewhere so that the source is never modified");
    return std::nullopt;
}

bool ExportSource::leftOut(const std::string& tensorName) const {
    if (formats::isServingScale(tensorName)) return true;
    // A GGUF linear is a codec's, whatever its type: a MoE's experts have Hugging Face names of their own.
    return checkpoint_.gguf() != nullptr && quantizedOwner(tensorName).empty() && !io::ggufNameOfHfTensor(tensorName);
}

void ExportSource::addDecoded(io::CheckpointWriter& writer, const std::string& name,
                              const std::vector<std::int64_t>& shape, std::span<const float> values) const {
    writer.addTensorF32(name, decodedAs_ ? *decodedAs_ : exactDType(values, denseDType_), shape, values);
}

void ExportSource::copy(io::CheckpointWriter& writer, const io::TensorView& tensor) const {
    if (!tensor.info().ggmlType) {
        writer.addTensor(tensor.name(), tensor.dtype(), tensor.shape(), tensor.bytes());
        return;
    }
    const std::vector<float> values = tensor.toF32();  // decoded, llama.cpp's row order undone
    if (const auto dtype = floatTypeOf(tensor.info()))
        writer.addTensorF32(tensor.name(), *dtype, tensor.shape(), values);
    else
        addDecoded(writer, tensor.name(), tensor.shape(), values);
}

io::DType ExportSource::keptDType(const io::TensorView& tensor) const {
    return floatTypeOf(tensor.info()).value_or(denseDType_);
}

void ExportSource::writeDecoded(io::CheckpointWriter& writer, const std::string& prefix,
                                const std::vector<float>* columnMultipliers) const {
    MatrixF w = reader_.decodeF32(prefix);
    if (columnMultipliers != nullptr) {
        if (static_cast<std::size_t>(w.cols()) != columnMultipliers->size())
            throw Error(prefix + ": " + std::to_string(columnMultipliers->size()) +
                        " AWQ input scales, but the decoded weight has " + std::to_string(w.cols()) + " columns");
        for (Eigen::Index c = 0; c < w.cols(); ++c) w.col(c) *= (*columnMultipliers)[static_cast<std::size_t>(c)];
    }
    addDecoded(writer, prefix + ".weight", {w.rows(), w.cols()}, {w.data(), static_cast<std::size_t>(w.size())});
}

void ExportSource::addAuxiliaryFiles(io::CheckpointWriter& writer) const {
    const io::GgufFile* gguf = checkpoint_.gguf();
    if (gguf == nullptr) {
        writer.copyAuxiliaryFiles(checkpoint_.root());
        return;
    }
    const model::TokenizerJsonFiles tokenizer = model::tokenizerJsonFromGguf(gguf->metadata(), gguf->path().string());
    writer.addJsonFile("tokenizer.json", tokenizer.tokenizer);
    writer.addJsonFile("tokenizer_config.json", tokenizer.config);
}

}  // namespace qs::pipeline
