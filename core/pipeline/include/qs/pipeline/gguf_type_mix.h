#pragma once
// llama-quantize's file types as QuantScope methods ("q4_k_m", "q6_k", "q8_0", ...): which ggml type
// each tensor of a model gets, by llama.cpp's own rules (src/llama-quant.cpp, llama_tensor_get_type):
// the _M/_S/_L mixes give attn_v and ffn_down more bits on some layers, output (and a tied
// token_embd) Q6_K, attn_output more bits in Q2_K/Q3_K, and a tensor whose rows are not whole blocks
// falls back to a smaller block (Q4_K -> Q5_0, Q6_K -> Q8_0, ...) or F16. The architectures QuantScope
// writes are covered, experts included (an 8-expert model's attn_k / attn_v Q8_0, attn_output Q5_K);
// Falcon's rules are not.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/ggml_type.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/gguf_export.h"

namespace qs::pipeline {

struct GgufFileType {
    std::string_view name;         // llama-quantize's spelling: "Q4_K_M"
    int fileType;                  // llama_ftype, written as general.file_type
    io::GgmlType baseType;         // the type of the tensors no rule singles out
    std::string_view description;  // one line for tooltips and --help
};

// The file types QuantScope writes, in llama-quantize's order of its list.
const std::vector<GgufFileType>& ggufFileTypes();
// By llama-quantize's name, case-insensitively, with its aliases (Q4_K = Q4_K_M, Q5_K = Q5_K_M,
// Q3_K = Q3_K_M); nullptr for another name.
const GgufFileType* ggufFileTypeNamed(std::string_view name);
const GgufFileType& ggufFileTypeOf(int fileType);  // throws qs::Error for one not in the list

// The chooser that gives each tensor of `config`'s model the type llama-quantize gives it for
// `fileType`; `withImportance` as llama-quantize --imatrix (a few rules depend on it). Vectors stay F32.
GgufTypeChooser ggufMixChooser(const GgufFileType& fileType, const model::ModelConfig& config, bool withImportance);

// llama-quantize's fallback for a matrix whose rows (`cols` elements) are not whole blocks of `type`:
// a smaller block (Q4_K -> Q5_0, Q6_K -> Q8_0, ...), else F16; `type` itself when the rows fit.
io::GgmlType ggufFallbackType(io::GgmlType type, std::int64_t cols);

// The tensors of a model in the order llama.cpp's loader sorts them (blk.N by N, then by name; the
// others first), as writeGguf would plan them from the config alone (biases as the config announces).
std::vector<GgufTensorChoice> ggufTensorPlan(const model::ModelConfig& config);

}  // namespace qs::pipeline
