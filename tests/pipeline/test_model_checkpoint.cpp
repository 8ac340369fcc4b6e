// config.json against its tensors (formats::configDisagreements, pipeline::openModelCheckpoint), and
// the forward-pass fields eval compares (requireSameModelShape): a config edited while the tensors
// stay is named key by key, and nothing that runs a model accepts it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/error.h"
#include "qs/formats/config_check.h"
#include "qs/formats/detect.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/model_checkpoint.h"

#include "synthetic_checkpoint.h"

namespace {

using testing::HasSubstr;

class Synthetic {
public:
    Synthetic()
        : dir_(std::filesystem::temp_directory_path() /
               ("qs_model_checkpoint_" + std::to_string(::getpid()) + "_" + std::to_string(++count_))) {
        std::filesystem::remove_all(dir_);
        qs::test::writeSyntheticCheckpoint(dir_, {});
    }
    ~Synthetic() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    void edit(const std::function<void(nlohmann::json&)>& change) const {
        nlohmann::json config;
        std::ifstream(dir_ / "config.json") >> config;
        change(config);
        std::ofstream(dir_ / "config.json") << config.dump();
    }
    std::vector<std::string> disagreements() const {
        const auto ck = qs::io::Checkpoint::open(dir_);
        return qs::formats::configDisagreements(ck, qs::formats::detect(ck));
    }
    const std::filesystem::path& dir() const { return dir_; }

private:
    static inline int count_ = 0;
    std::filesystem::path dir_;
};

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
}

}  // namespace

TEST(ModelCheckpoint, AgreeingConfigHasNoDisagreements) {
    const Synthetic s;
    EXPECT_TRUE(s.disagreements().empty()) << joined(s.disagreements());
    EXPECT_NO_THROW((void)qs::pipeline::openModelCheckpoint(s.dir(), false));
}

TEST(ModelCheckpoint, EachEditedSizeIsNamed) {
    // The synthetic model: 2 layers, hidden 64, intermediate 128, 4 heads of 16, 2 KV heads, vocab 96.
    const std::vector<std::tuple<const char*, nlohmann::json, std::string>> cases = {
        {"hidden_size", 128, "hidden_size 128, but model.embed_tokens.weight is [96, 64]"},
        {"vocab_size", 100, "vocab_size 100, but model.embed_tokens.weight is [96, 64]"},
        {"num_hidden_layers", 1, "num_hidden_layers 1, but the tensors hold 2 decoder layers (0 to 1)"},
        {"num_attention_heads", 8, "imply [64, 128] for model.layers.0.self_attn.o_proj, but its weight is [64, 64]"},
        {"num_key_value_heads", 4, "imply [64, 64] for model.layers.0.self_attn.k_proj, but its weight is [32, 64]"},
        {"head_dim", 8, "imply [16, 64] for model.layers.0.self_attn.k_proj"},
        {"intermediate_size", 96, "imply [64, 96] for model.layers.0.mlp.down_proj, but its weight is [64, 128]"},
        {"model_type", "qwen3",
         "model_type 'qwen3' normalises q and k per head, but the tensors hold no self_attn.q_norm"},
        {"model_type", "qwen2", "model_type 'qwen2' has q/k/v biases, but the tensors hold no self_attn.q_proj.bias"},
    };
    for (const auto& [key, value, expected] : cases) {
        const Synthetic s;
        s.edit([&](nlohmann::json& c) { c[key] = value; });
        EXPECT_THAT(joined(s.disagreements()), HasSubstr(expected)) << key;
        try {
            (void)qs::pipeline::openModelCheckpoint(s.dir(), false);
            ADD_FAILURE() << key << ": opened to run";
        } catch (const qs::Error& e) {
            EXPECT_THAT(e.what(), HasSubstr("config.json describes another model than its tensors")) << key;
        }
    }
}

TEST(ModelCheckpoint, ABadSizeInTheConfigIsADisagreementNotACrash) {
    const Synthetic s;
    s.edit([](nlohmann::json& c) { c["hidden_size"] = 4294967360ull; });
    EXPECT_THAT(joined(s.disagreements()), HasSubstr("'hidden_size' is 4294967360"));
}

TEST(ModelCheckpoint, EvalComparesEveryForwardPassField) {
    nlohmann::json base = {{"model_type", "llama"},  {"hidden_size", 64},        {"intermediate_size", 128},
                           {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                           {"vocab_size", 96}};
    const auto a = qs::model::ModelConfig::fromJson(base);
    EXPECT_NO_THROW(qs::pipeline::requireSameModelShape(a, a, "a", "b"));
    const std::vector<std::tuple<const char*, nlohmann::json, std::string>> cases = {
        {"model_type", "mistral", "model_type 'llama' vs 'mistral'"},
        {"rope_theta", 500000.0, "rope_theta 10000 vs 500000"},
        {"rms_norm_eps", 1e-5, "rms_norm_eps 9.9999999999999995e-07 vs 1.0000000000000001e-05"},
        {"tie_word_embeddings", true, "tie_word_embeddings false vs true"},
        {"head_dim", 32, "head_dim 16 vs 32"},
        {"attention_bias", true, "attention_bias (q/k/v) false vs true"},
        {"rope_scaling", {{"rope_type", "linear"}, {"factor", 4.0}}, "rope_scaling.factor 1 vs 4"},
    };
    for (const auto& [key, value, expected] : cases) {
        nlohmann::json other = base;
        other[key] = value;
        try {
            qs::pipeline::requireSameModelShape(a, qs::model::ModelConfig::fromJson(other), "a", "b");
            ADD_FAILURE() << key << ": accepted";
        } catch (const qs::Error& e) {
            EXPECT_THAT(e.what(), HasSubstr(expected)) << key;
        }
    }
}
