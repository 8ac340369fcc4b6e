// Shared tokenizer.json parts (tokenizer_json_parts.h).
#include "tokenizer_json_parts.h"

namespace qs::model {

using nlohmann::json;

json addedTokenJson(const std::string& content, TokenId id, bool special) {
    return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
            {"rstrip", false}, {"normalized", false}, {"special", special}};
}

json bosPostProcessor(const std::string& bosText, TokenId bosId) {
    const json bos = {{"SpecialToken", {{"id", bosText}, {"type_id", 0}}}};
    return {
        {"type", "TemplateProcessing"},
        {"single", json::array({bos, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"pair",
         json::array(
             {bos, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, bos, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
        {"special_tokens",
         {{bosText, {{"id", bosText}, {"ids", json::array({bosId})}, {"tokens", json::array({bosText})}}}}}};
}

}  // namespace qs::model
