#pragma once
// Private to qs_pipeline: the source of a safetensors export as the writers walk its tensors
// (exporter.cpp, and dense_export.cpp for what they share). A dense safetensors source's tensors are
// copied as they are. A quantized source (quantized_source.h) holds its linears as its format's parts
// (qweight / scales, weight + weight_scale_inv, weight_packed, ...): an export replaces them, so none
// of them is copied; the linears the export leaves dense (lm_head, a router, what a mix ignores) are
// written decoded, as "<prefix>.weight". A GGUF source's tensors are decoded (llama.cpp's row order
// undone) and stored under their Hugging Face names, and its tokenizer comes from its metadata.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/dtype.h"

namespace qs::pipeline {

using LinearSet = std::set<std::string, std::less<>>;

// The linears a codec other than the dense one stores (FP8's weight + weight_scale_inv, GPTQ's qweight,
// ..., and every linear of a GGUF, whose codec reads them whatever their ggml type), by prefix; stacked
// experts (gpt-oss) are left to their own writers.
LinearSet quantizedLinearsOf(const formats::LinearReader& reader);

// The linear of `linears` that tensor `name` is a part of ("" when none): "<prefix>.<part>", the part
// possibly dotted (bitsandbytes' "weight.absmax").
std::string owningLinear(std::string_view name, const LinearSet& linears);

// `preferred` when every value converts to it and back unchanged, else F32: a decoded value (an FP8
// code times its f32 scale, a Q8_0 code times its f16 scale) seldom fits BF16, and an export must hold
// the weights its KL was measured with, so that `eval` of it gives that KL.
io::DType exactDType(std::span<const float> values, io::DType preferred);

class ExportSource {
public:
    // `decodedAs`: the dtype of every value decoded from a quantized tensor (dequantize's --dtype);
    // nullopt: the source's own float type (denseDType), or F32 where that would round (exactDType).
    // Throws qs::Error naming the checkpoint when a quantized linear cannot be decoded.
    explicit ExportSource(const io::Checkpoint& checkpoint, std::optional<io::DType> decodedAs = std::nullopt,
                          formats::DecodeOptions decode = {});
    ExportSource(const ExportSource&) = delete;
    ExportSource& operator=(const ExportSource&) = delete;

    const io::Checkpoint& checkpoint() const { return checkpoint_; }
    const formats::LinearReader& reader() const { return reader_; }
    // The linears stored in a codec's parts (quantizedLinearsOf).
    const LinearSet& quantizedLinears() const { return quantizedLinears_; }
    // The linear stored quantized whose part `tensorName` is ("" when none): owningLinear.
    std::string quantizedOwner(std::string_view tensorName) const {
        return owningLinear(tensorName, quantizedLinears_);
    }
    // [out, in] of linear `prefix`: its dense weight's shape, else its codec's description.
    std::optional<std::pair<std::int64_t, std::int64_t>> linearShape(const std::string& prefix) const;
    // The float type the source keeps its dense tensors in: its embedding's, else config.json's
    // torch_dtype, else BF16.
    io::DType denseDType() const { return denseDType_; }

    // What the writer must never write into or replace (CheckpointWriter's `source`): a safetensors
    // checkpoint's folder; nothing for a GGUF file, which a destination must not hold (throws then).
    std::optional<std::filesystem::path> protectedPath(const std::filesystem::path& destination) const;
    // Tensors an export leaves out: the engine's activation and KV-cache scales (formats::isServingScale),
    // which describe the source's quantization (a layout that quantizes those writes its own); tensors
    // llama.cpp derives that have no Hugging Face name (a GGUF's rope_freqs.weight; not its linears).
    bool leftOut(const std::string& tensorName) const;
    // A tensor that is no quantized linear's part, as the export stores it: a safetensors tensor's
    // bytes; a GGUF tensor decoded, in its float type, or (a quantized ggml type, an embedding of a
    // Q8_0 file) as decoded values are stored (the constructor's `decodedAs`).
    void copy(io::CheckpointWriter& writer, const io::TensorView& tensor) const;
    // The dtype a tensor keeps when the export changes its values (AWQ's scales folded into a norm):
    // its own float type, else denseDType.
    io::DType keptDType(const io::TensorView& tensor) const;
    // The quantized linear `prefix`, left dense by the export: its decoded weight as "<prefix>.weight",
    // each column times `columnMultipliers` when given (AWQ's input scales taken by a router).
    void writeDecoded(io::CheckpointWriter& writer, const std::string& prefix,
                      const std::vector<float>* columnMultipliers = nullptr) const;
    // Tokenizer and generation files: a safetensors source's copied; a GGUF's tokenizer from its metadata
    // (files that happen to lie beside a GGUF are not its model's).
    void addAuxiliaryFiles(io::CheckpointWriter& writer) const;

private:
    void addDecoded(io::CheckpointWriter& writer, const std::string& name, const std::vector<std::int64_t>& shape,
                    std::span<const float> values) const;

    const io::Checkpoint& checkpoint_;
    formats::LinearReader reader_;
    std::optional<io::DType> decodedAs_;
    io::DType denseDType_;
    LinearSet quantizedLinears_;
};

}  // namespace qs::pipeline
