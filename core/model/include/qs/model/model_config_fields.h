#pragma once
// The fields of a ModelConfig that the forward pass reads, in one list: two configs that differ in any of
// them run two different models. Used where a model is compared with another container of itself (eval's
// refusal of two different models, the tests of a GGUF read back).
#include <string>
#include <vector>

#include "qs/model/model_config.h"

namespace qs::model {

struct ConfigField {
    std::string name;   // as config.json spells it where it has a key: "num_key_value_heads"
    std::string value;  // exact: doubles to 17 digits, lists element by element
};

// Every field the forward pass reads, except the tensor names, which differ between containers of one
// model (a gpt-oss GGUF reads its experts back apart), and YaRN's betas and truncation, which llama.cpp's
// gpt-oss fixes (a GGUF of OpenAI's release reads back with truncate true where its config says false:
// docs/models.md).
std::vector<ConfigField> forwardPassFields(const ModelConfig& config);

// "name a vs b" for each field of forwardPassFields that differs; empty when the two run the same model.
std::vector<std::string> forwardPassDifferences(const ModelConfig& a, const ModelConfig& b);

}  // namespace qs::model
