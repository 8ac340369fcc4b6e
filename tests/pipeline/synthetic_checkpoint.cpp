#include "synthetic_checkpoint.h"

#include <algorithm>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "qs/io/checkpoint_writer.h"

namespace qs::test {
namespace {

std::vector<float> normal(std::size_t n, float sigma, std::mt19937& rng) {
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

std::vector<float> normWeights(int hidden, const SyntheticModel& m) {
    std::vector<float> w(std::size_t(hidden), 1.0f);
    for (int c : m.outlierChannels) w[std::size_t(c)] = m.outlierScale;
    return w;
}

const char* torchDtype(io::DType dtype) {
    if (dtype == io::DType::BF16) return "bfloat16";
    return dtype == io::DType::F16 ? "float16" : "float32";
}

}  // namespace

void writeSyntheticCheckpoint(const std::filesystem::path& dir, const SyntheticModel& m) {
    std::mt19937 rng(m.seed);
    const int headDim = m.hidden / m.heads;
    nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                             {"model_type", "llama"},
                             {"hidden_size", m.hidden},
                             {"intermediate_size", m.intermediate},
                             {"num_hidden_layers", m.layers},
                             {"num_attention_heads", m.heads},
                             {"num_key_value_heads", m.kvHeads},
                             {"head_dim", headDim},
                             {"vocab_size", m.vocab},
                             {"max_position_embeddings", m.maxPositions},
                             {"rms_norm_eps", 1e-5},
                             {"rope_theta", 10000.0},
                             {"hidden_act", "silu"},
                             {"tie_word_embeddings", false},
                             {"torch_dtype", torchDtype(m.dtype)}};
    if (m.experts > 0) {
        config["architectures"] = {"MixtralForCausalLM"};
        config["model_type"] = "mixtral";
        config["num_local_experts"] = m.experts;
        config["num_experts_per_tok"] = m.expertsPerToken;
    }
    io::CheckpointWriter writer(dir, {.maxShardBytes = 5'000'000'000ULL, .overwrite = true});
    writer.setConfig(config);
    const auto add = [&](const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& v) {
        writer.addTensorF32(name, m.dtype, shape, v);
    };
    const auto linear = [&](const std::string& name, int out, int in, float scale = 1.0f) {
        std::vector<float> w = normal(std::size_t(out) * std::size_t(in), 1.0f / std::sqrt(float(in)), rng);
        for (float& x : w) x *= scale;
        add(name, {out, in}, w);
    };
    add("model.embed_tokens.weight", {m.vocab, m.hidden},
        normal(std::size_t(m.vocab) * std::size_t(m.hidden), 1.0f, rng));
    for (int l = 0; l < m.layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        const bool fragile = std::find(m.fragileLayers.begin(), m.fragileLayers.end(), l) != m.fragileLayers.end();
        const float out = fragile ? m.fragileScale : 1.0f;
        add(p + "input_layernorm.weight", {m.hidden}, normWeights(m.hidden, m));
        add(p + "post_attention_layernorm.weight", {m.hidden}, normWeights(m.hidden, m));
        linear(p + "self_attn.q_proj.weight", m.heads * headDim, m.hidden);
        linear(p + "self_attn.k_proj.weight", m.kvHeads * headDim, m.hidden);
        linear(p + "self_attn.v_proj.weight", m.kvHeads * headDim, m.hidden);
        linear(p + "self_attn.o_proj.weight", m.hidden, m.heads * headDim, out);
        if (m.experts > 0) {
            linear(p + "block_sparse_moe.gate.weight", m.experts, m.hidden);
            for (int e = 0; e < m.experts; ++e) {
                const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
                linear(x + "w1.weight", m.intermediate, m.hidden);
                linear(x + "w3.weight", m.intermediate, m.hidden);
                linear(x + "w2.weight", m.hidden, m.intermediate, out);
            }
            continue;
        }
        linear(p + "mlp.gate_proj.weight", m.intermediate, m.hidden);
        linear(p + "mlp.up_proj.weight", m.intermediate, m.hidden);
        linear(p + "mlp.down_proj.weight", m.hidden, m.intermediate, out);
    }
    add("model.norm.weight", {m.hidden}, std::vector<float>(std::size_t(m.hidden), 1.0f));
    // A large lm_head makes the next-token distributions sharp enough for KL to separate methods.
    std::vector<float> head =
        normal(std::size_t(m.vocab) * std::size_t(m.hidden), 3.0f / std::sqrt(float(m.hidden)), rng);
    add("lm_head.weight", {m.vocab, m.hidden}, head);
    writer.finish();
}

std::vector<std::vector<model::TokenId>> syntheticTokens(int count, int length, int vocab, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> token(0, vocab - 1);
    std::vector<std::vector<model::TokenId>> out(static_cast<std::size_t>(count));
    for (auto& s : out) {
        s.resize(std::size_t(length));
        for (int t = 0; t < length; ++t)
            s[std::size_t(t)] = (t >= 4 && t % 3 == 0) ? s[std::size_t(t - 4)] : token(rng);
    }
    return out;
}

}  // namespace qs::test
