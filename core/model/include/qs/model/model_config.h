#pragma once
// ModelConfig: the architecture of a decoder-only transformer as Hugging Face's config.json describes
// it, for the families QuantScope runs (Llama 1-3, Mistral, Qwen2/2.5, Qwen3). Only what the forward
// pass needs is kept; anything the forward pass cannot honour is rejected by fromJson() rather than
// silently ignored, so that a KL measured on a wrong model can never be reported.
#include <string>

#include <nlohmann/json.hpp>

namespace qs::io {
class Checkpoint;
}

namespace qs::model {

enum class RopeScalingType { None, Linear, Llama3 };

struct RopeScaling {
    RopeScalingType type = RopeScalingType::None;
    double factor = 1.0;
    double lowFreqFactor = 1.0;                 // llama3 only
    double highFreqFactor = 4.0;                // llama3 only
    int originalMaxPositionEmbeddings = 8192;   // llama3 only
};

struct ModelConfig {
    std::string modelType;          // "llama", "mistral", "qwen2", "qwen3"
    int hiddenSize = 0;
    int intermediateSize = 0;
    int numLayers = 0;
    int numHeads = 0;
    int numKvHeads = 0;             // GQA: numHeads is a multiple of it
    int headDim = 0;                // hidden_size / num_attention_heads unless config says head_dim
    int vocabSize = 0;
    int maxPositionEmbeddings = 0;
    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;
    RopeScaling ropeScaling;
    bool tieWordEmbeddings = false;
    bool qkvBias = false;           // q/k/v projections carry a bias (Qwen2, attention_bias)
    bool outputBias = false;        // o_proj carries a bias (Llama's attention_bias covers it too)
    bool mlpBias = false;
    bool qkNorm = false;            // per-head RMSNorm of q and k before RoPE (Qwen3)
    int slidingWindow = 0;          // 0 = full causal attention; else key j is seen from i when i - j < window

    int qDim() const { return numHeads * headDim; }
    int kvDim() const { return numKvHeads * headDim; }

    // Throws qs::Error naming `source` when a field is missing, inconsistent or unsupported.
    static ModelConfig fromJson(const nlohmann::json& config, const std::string& source = "config.json");
    // fromJson of the checkpoint's config.json, errors naming that file.
    static ModelConfig fromCheckpoint(const io::Checkpoint& checkpoint);
    // Checks the invariants the forward pass relies on (for configs built in code); throws qs::Error.
    void validate(const std::string& source = "model config") const;
};

}  // namespace qs::model
