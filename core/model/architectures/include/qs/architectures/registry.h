#pragma once
// The families QuantScope knows (one file each in core/model/architectures/), and lookups by the names
// the outside world uses for them: a config.json model_type and a GGUF general.architecture.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "qs/architectures/family.h"

namespace qs::architectures {

// Every family, in the order messages list them: the causal LMs, then the vision-language models whose
// text tower is one of them, then the families that are refused with what they miss.
const std::vector<const Family*>& families();

// The family of a config.json model_type, or nullptr.
const Family* familyOf(std::string_view modelType);

// The family a GGUF of llama.cpp's `ggufArch` reads back as (a VLM's: its text family), or nullptr;
// `hasExperts`: <arch>.expert_count > 0 (llama with experts is Mixtral).
const Family* familyOfGguf(std::string_view ggufArch, bool hasExperts);

// The family whose fields a config of `family` is read with: a VLM's text family, else itself.
const Family& textFamilyOf(const Family& family);

// Whether the family of `modelType` stores all experts of a projection in one tensor (gpt-oss), which
// vLLM loads only in the family's own layouts.
bool stacksExperts(std::string_view modelType);

// "a, b, c": the model types of the families `pick` chooses, in the registry's order.
std::string modelTypesWhere(const std::function<bool(const Family&)>& pick);

// "llama, mistral, ...; the text towers of gemma3, ...": what a refusal lists as supported.
std::string supportedModelTypes();

}  // namespace qs::architectures
