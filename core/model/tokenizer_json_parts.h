#pragma once
// Private to qs_model: parts of a tokenizer.json that the builders from GGUF metadata and from
// SentencePiece vocabularies write alike.
#include <string>

#include <nlohmann/json.hpp>

#include "qs/model/tokenizer.h"

namespace qs::model {

// One "added_tokens" entry, matched on the raw text.
nlohmann::json addedTokenJson(const std::string& content, TokenId id, bool special);
// A TemplateProcessing post-processor that puts BOS before every sequence (Llama's "<s> $A").
nlohmann::json bosPostProcessor(const std::string& bosText, TokenId bosId);

}  // namespace qs::model
