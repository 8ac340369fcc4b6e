#pragma once
// qs::model::Tokenizer: text <-> token ids for the checkpoints QuantScope calibrates and evaluates.
// It reads Hugging Face tokenizer.json files of the BPE kind: byte-level BPE (GPT-2, Qwen2/2.5/3,
// Llama-3) and Metaspace / byte-fallback BPE (Llama-2, Mistral). It also builds the same tokenizer
// from OpenAI's GPT-2 files (encoder.json + vocab.bpe), from a SentencePiece vocabulary with
// scores, and from a GGUF file's tokenizer.ggml.* metadata (gguf_tokenizer.h), so that a checkpoint
// without tokenizer.json can still be fed.
//
// The object is immutable after construction apart from an internal word cache; encode() and
// decode() may be called from several threads at once.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qs::io {
class Checkpoint;
class GgufMetadata;
}  // namespace qs::io

namespace qs::model {

using TokenId = std::int32_t;

struct EncodeOptions {
    bool addBos = false;       // prepend bosId(); an error when the tokenizer has none
    bool addEos = false;       // append eosId(); an error when the tokenizer has none
    bool parseSpecial = true;  // false: special added tokens in the text are tokenized as plain text
};

struct DecodeOptions {
    bool skipSpecial = false;  // drop special added tokens (BOS, <|im_end|>, ...) from the text
};

// The kinds of a SentencePiece piece, numbered as GGUF's tokenizer.ggml.token_type and
// sentencepiece's ModelProto.SentencePiece.Type.
enum class PieceType : std::int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct SentencePiece {
    std::string text;  // with U+2581 (▁) standing for a space, as in the .model file
    float score = 0.0f;
    PieceType type = PieceType::Normal;
};

class Tokenizer {
public:
    // tokenizer.json, or a directory holding it; tokenizer_config.json beside it, when present,
    // gives BOS/EOS and whether BOS is added.
    static Tokenizer fromFile(const std::filesystem::path& path);
    // The same from text already in memory; `sourceName` names the origin in error messages.
    static Tokenizer fromJson(std::string_view tokenizerJson, std::string_view tokenizerConfigJson,
                              const std::string& sourceName);
    // OpenAI GPT-2 format: encoder.json (token -> id) and vocab.bpe (merges, "#version" line first).
    static Tokenizer fromGpt2Files(const std::filesystem::path& encoderJson, const std::filesystem::path& vocabBpe);
    // A SentencePiece BPE vocabulary (Llama-1/2 style): pieces in id order with their scores.
    // Merges are derived from the scores as Hugging Face's converter does; a space prefix is added
    // and byte pieces <0xNN> stand in for characters the vocabulary lacks.
    static Tokenizer fromSentencePiece(std::vector<SentencePiece> pieces, std::optional<TokenId> bosId,
                                       std::optional<TokenId> eosId, const std::string& sourceName);
    // The tokenizer a GGUF file stores (tokenizer.ggml.*: "gpt2" byte-level BPE or "llama"
    // SentencePiece), BOS/EOS and add_bos as it says; `sourceName` names the file in errors.
    static Tokenizer fromGguf(const io::GgufMetadata& metadata, const std::string& sourceName);
    // A checkpoint's tokenizer: tokenizer.json (+ tokenizer_config.json) beside it, else, for a GGUF,
    // the one in its metadata.
    static Tokenizer forCheckpoint(const io::Checkpoint& checkpoint);

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    // Throws qs::Error when the text is not valid UTF-8.
    std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options = {}) const;
    // Returns the bytes the ids stand for; a byte-level id sequence cut inside a character yields
    // the partial UTF-8 sequence (no U+FFFD), so streamed pieces concatenate to the full text.
    std::string decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;

    // Number of ids in use: model vocabulary plus added tokens (151,669 for Qwen3; config.json's
    // vocab_size may be larger because embedding matrices are padded).
    std::size_t vocabSize() const;
    std::optional<TokenId> tokenToId(std::string_view token) const;
    // The vocabulary string of an id ("Ġthe", "▁the", "<|im_end|>"); throws for an unknown id.
    const std::string& idToToken(TokenId id) const;
    bool isSpecial(TokenId id) const;

    std::optional<TokenId> bosId() const;
    std::optional<TokenId> eosId() const;
    bool addsBosByDefault() const;  // tokenizer_config.json's add_bos_token (or the SentencePiece default)

    struct Impl;

private:
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace qs::model
