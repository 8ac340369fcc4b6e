#pragma once
// Private to qs_model: reading config.json's fields as transformers does (model_config.cpp), shared by the
// generic reader and the families' own parts (core/model/architectures/*_config.cpp).
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/dtype.h"
#include "qs/io/json_value.h"
#include "qs/model/model_config.h"

namespace qs::model::detail {

[[noreturn]] void fail(const std::string& source, const std::string& what);

// Sizes the forward pass allocates with: positive and far below what would overflow an index.
inline constexpr io::IntRange kSizeRange{1, 1 << 24};

// transformers keeps a config's values as the JSON has them: a quoted size ("256") reaches nn.Linear
// or range() as a string and fails there, so it is refused here rather than read as a number (a
// quantization config's quoted numbers are read: their consumers convert them).
void refuseQuoted(const nlohmann::json& j, const char* key, const std::string& source);

int requiredInt(const nlohmann::json& j, const char* key, const std::string& source);

template <typename T>
T optional(const nlohmann::json& j, const char* key, T fallback, const std::string& source) {
    if constexpr (std::is_same_v<T, int>) {
        refuseQuoted(j, key, source);
        return static_cast<int>(io::jsonIntegerField(j, key, source, {0, 1 << 30}).value_or(fallback));
    } else {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return fallback;
        try {
            return it->get<T>();
        } catch (const nlohmann::json::exception&) {
            fail(source,
                 std::string("'") + key + "' is " + it->dump() + ", " + io::jsonKind(*it) + " of the wrong type");
        }
    }
}

// Newer transformers releases move rope_theta and the scaling into "rope_parameters"; older ones keep
// "rope_theta" at the top level and the scaling in "rope_scaling".
// partial_rotary_factor (top level, or in transformers 5's rope_parameters) as ModelConfig::rotaryDim.
void readPartialRotary(const nlohmann::json& j, ModelConfig& c, const std::string& source);

RopeScaling parseRopeScaling(const nlohmann::json& j, const std::string& source);

// The per-layer attention types: layer_types (sliding_attention / full_attention), or the older
// sliding_window_pattern (every pattern-th layer is global, 6 unless given). True: a sliding layer.
std::vector<bool> slidingLayersOf(const nlohmann::json& j, int numLayers, const std::string& source);

// The families' own parts of the config (architectures::ConfigExtra), after the shared fields are read.
void readGemma3Config(const nlohmann::json& j, ModelConfig& c, const std::string& source);
void readPhi3Config(const nlohmann::json& j, ModelConfig& c, const std::string& source);
void readGptOssConfig(const nlohmann::json& j, ModelConfig& c, const std::string& source);
void readDeepseekV3Config(const nlohmann::json& j, ModelConfig& c, const std::string& source);
void readLlama4Config(const nlohmann::json& j, ModelConfig& c, const std::string& source);
void readQwen35Config(const nlohmann::json& j, ModelConfig& c, const std::string& source);

// sqrt(hidden_size) as Gemma3TextScaledWordEmbedding applies it: rounded to the embedding's dtype.
double embeddingScaleIn(io::DType dtype, int hiddenSize);

}  // namespace qs::model::detail
