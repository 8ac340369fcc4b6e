#pragma once
// The parts of a Tokenizer, in the order text flows through them. Each loader (tokenizer.json,
// GPT-2 files, SentencePiece vocabulary) fills one of these.
#include <optional>
#include <string>

#include "qs/model/tokenizer.h"

#include "tokenizer_added_tokens.h"
#include "tokenizer_bpe.h"
#include "tokenizer_decoder.h"
#include "tokenizer_normalizer.h"
#include "tokenizer_pre_tokenizer.h"

namespace qs::model {

struct Tokenizer::Impl {
    Impl(std::string source, BpeModel bpe) : sourceName(std::move(source)), model(std::move(bpe)) {}

    std::string sourceName;  // for error messages
    AddedTokens added;
    Normalizer normalizer;
    PreTokenizer preTokenizer;
    BpeModel model;
    Decoder decoder;
    std::optional<TokenId> bos;
    std::optional<TokenId> eos;
    bool addBos = false;
};

}  // namespace qs::model

namespace qs::model {

// The whole file as bytes; throws qs::Error naming the file when it cannot be read.
std::string readTokenizerFile(const std::filesystem::path& path);

// A token id from JSON: an integer from 0 to 2^31 - 1 (io::jsonInteger), else qs::Error naming `where`.
TokenId jsonTokenId(const nlohmann::json& value, const std::string& where);

}  // namespace qs::model
