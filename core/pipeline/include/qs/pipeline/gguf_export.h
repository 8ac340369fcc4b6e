#pragma once
// GGUF export: any checkpoint QuantScope runs (llama, mistral, qwen2, qwen3; dense or in any format
// formats::LinearReader decodes) written as a GGUF file llama.cpp, Ollama and LM Studio load. The
// tensors get llama.cpp's names and, for the llama architecture, llama.cpp's q/k row order; each is
// stored in the ggml type a chooser picks (F32 / F16 / BF16 / Q8_0 today, every type quant::ggmlEncodeRow
// encodes); the metadata holds the architecture keys (sizes, heads, rope, norms, context length,
// file type) and the tokenizer (tokenizer.json as byte-level BPE, or a SentencePiece vocabulary).
// Written through io::GgufWriter (temporary file, renamed into place). docs/formats/gguf.md.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/io/ggml_type.h"
#include "qs/io/gguf_value.h"
#include "qs/model/model_config.h"
#include "qs/model/tokenizer.h"
#include "qs/progress.h"
#include "qs/quant/quantized_linear.h"

namespace qs::pipeline {

// What the chooser is asked about: one tensor as it will be written.
struct GgufTensorChoice {
    std::string name;                 // the Hugging Face name ("model.layers.0.mlp.down_proj.weight")
    std::string ggufName;             // llama.cpp's name ("blk.0.ffn_down.weight")
    io::TensorName naming;            // layer, module, role
    std::vector<std::int64_t> shape;  // row-major [out, in]; rank 1 for norms and biases
};

// The ggml type a tensor is stored in. It must hold the tensor's rows (whole blocks of the last
// dimension) and be one quant::ggmlEncodeRow encodes (or F32 / F16 / BF16); writeGguf refuses the
// export, having written nothing, when it is not.
using GgufTypeChooser = std::function<io::GgmlType(const GgufTensorChoice&)>;

// The chooser of llama.cpp's whole-file types ("except 1d tensors"): matrices in `type`, vectors in
// F32; a matrix whose rows are not whole blocks of `type` stays F16, as llama-quantize falls back.
GgufTypeChooser uniformGgufType(io::GgmlType type);

// A SentencePiece vocabulary to store as the tokenizer ("llama" model) when the checkpoint has no
// tokenizer.json, e.g. llama2.c's models (model::readLlama2cTokenizer).
struct GgufSentencePieceVocabulary {
    std::vector<model::SentencePiece> pieces;
    std::optional<model::TokenId> bos;
    std::optional<model::TokenId> eos;
    bool addBos = true;
};

struct GgufExportOptions {
    GgufTypeChooser chooser;                                   // null: uniformGgufType(F16)
    std::optional<GgufSentencePieceVocabulary> sentencePiece;  // else tokenizer.json, else a GGUF source's own
    std::optional<int> fileType;  // general.file_type; else from the matrices' commonest type
    std::string name;             // general.name; else the source folder's name
    bool overwrite = false;
    bool allowNonFinite = false;  // else a linear that decodes to NaN or Inf is refused
    // Linears already encoded (CodeKind::GgmlBlocks, a GGUF method's Job result) by Hugging Face
    // prefix ("model.layers.0.mlp.down_proj"): written as they are, in their own type, so that the file
    // holds the bytes the Job measured. The chooser decides the other tensors.
    std::map<std::string, std::shared_ptr<const quant::QuantizedLinear>> encodedLinears;
    // When set, encodedLinears hold only headers (a result on disk) and this gives each one's blocks
    // as the writer reaches it, by the same prefix.
    std::function<std::shared_ptr<const quant::QuantizedLinear>(const std::string& prefix)> completeLinear = {};
    // A result whose dense tensors differ from the source's (a --rotate result: the rotated token_embd and
    // output, the norms it folded, rotated biases and routers): the values of the tensor of that Hugging Face
    // name, as the source would hold them, or nullopt to read the source's. With untieLmHead the file holds
    // output.weight even when the source ties it to the embedding (its values then come from here).
    std::function<std::optional<std::vector<float>>(const std::string& name)> replacedValues = {};
    bool untieLmHead = false;
    // Extra metadata (the imatrix keys llama-quantize writes, quantize.imatrix.*), after the model's.
    io::GgufMetadata extraMetadata;
    // When set, nothing is written and the file's size goes there, exactly (io::GgufWriter::measuring): the
    // tensors are not encoded, since a ggml type's bytes follow from the shape; the destination is not looked at.
    std::uint64_t* measuredBytes = nullptr;
};

// The tensors of a model as writeGguf plans them from its config alone (biases as the config
// announces them), in the order llama.cpp's loader sorts them: the tensors outside the layers, then
// layer by layer, each by name.
std::vector<GgufTensorChoice> ggufTensorPlan(const model::ModelConfig& config);

// The bytes writeGguf writes for `checkpoint` besides the decoder's quantized linears (their blocks
// are the result's): token_embd and output in the types `chooser` gives them, norms, biases, the
// routers and RoPE factors in F32.
std::uint64_t ggufNonLinearBytes(const io::Checkpoint& checkpoint, const model::ModelConfig& config,
                                 const GgufTypeChooser& chooser);

// Returns the file written. Throws qs::Error (architecture or tokenizer not storable, a type the
// chooser picked that cannot hold a tensor, I/O) or qs::Cancelled, leaving nothing behind.
std::filesystem::path writeGguf(const io::Checkpoint& checkpoint, const std::filesystem::path& destination,
                                const GgufExportOptions& options, const ProgressCallback& progress,
                                const CancelToken& cancel);

}  // namespace qs::pipeline
