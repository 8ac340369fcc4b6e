#pragma once
// Tokenizers and GGUF files. A GGUF stores its tokenizer as tokenizer.ggml.* metadata (the model
// "gpt2" = byte-level BPE with merges and a pre-tokenizer named by tokenizer.ggml.pre; "llama" =
// SentencePiece BPE with scores and token types). Here that metadata becomes the Hugging Face
// tokenizer.json + tokenizer_config.json that say the same (what Tokenizer::fromGguf loads and what
// `dequantize model.gguf` writes), and, for the GGUF writer, the other way round.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/gguf_value.h"
#include "qs/model/tokenizer.h"

namespace qs::model {

struct TokenizerJsonFiles {
    nlohmann::json tokenizer;  // tokenizer.json
    nlohmann::json config;     // tokenizer_config.json
};

// The pre-tokenizer names of tokenizer.ggml.pre that QuantScope reads and writes, with the split
// regex llama.cpp runs for each (llama-vocab.cpp): "gpt-2", "qwen2", "llama-bpe" (and their aliases).
bool isSupportedGgufPreTokenizer(const std::string& name);

// Throws qs::Error naming `sourceName` when the metadata has no tokenizer, or one of another kind
// (bert, t5, rwkv, ...) or with a pre-tokenizer not supported.
TokenizerJsonFiles tokenizerJsonFromGguf(const io::GgufMetadata& metadata, const std::string& sourceName);

// The tokenizer.json of a SentencePiece BPE vocabulary, as Hugging Face's LlamaConverter writes it
// (legacy mode): merges derived from the scores, "▁" for spaces, byte fallback, BOS first.
TokenizerJsonFiles sentencePieceTokenizerJson(const std::vector<SentencePiece>& pieces, std::optional<TokenId> bosId,
                                              std::optional<TokenId> eosId, bool addBos, const std::string& sourceName);

// tokenizer.ggml.* for a byte-level BPE tokenizer.json (+ tokenizer_config.json): tokens padded with
// "[PADn]" (type unused) to `vocabSize` rows of the embedding, as llama.cpp's converter does; the
// pre-tokenizer is recognised from the split regex. Throws qs::Error naming `sourceName` for
// tokenizers that are not byte-level BPE or whose pre-tokenizer llama.cpp does not know.
io::GgufMetadata ggufTokenizerFromJson(const nlohmann::json& tokenizer, const nlohmann::json& config,
                                       std::int64_t vocabSize, const std::string& sourceName);

// tokenizer.ggml.* ("llama") for a SentencePiece vocabulary.
io::GgufMetadata ggufTokenizerFromSentencePiece(const std::vector<SentencePiece>& pieces, std::optional<TokenId> bosId,
                                                std::optional<TokenId> eosId, bool addBos);

// The vocabulary of a llama2.c tokenizer.bin (int32 max length; per token f32 score, int32 length,
// bytes), typed as llama.cpp's convert-llama2c-to-ggml does: 0 <unk>, 1 <s>, 2 </s>, <0xNN> bytes;
// spaces become "▁".
std::vector<SentencePiece> readLlama2cTokenizer(const std::filesystem::path& path, int vocabSize);

}  // namespace qs::model
