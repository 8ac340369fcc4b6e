// The families' registry (core/model/architectures/) walked family by family: every family is found by
// its model type, reads a config built from its own data, and every tensor name the GGUF writer plans for
// it comes back through the reader's table as the Hugging Face name it was written from.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "qs/architectures/gguf_tensor_names.h"
#include "qs/architectures/registry.h"
#include "qs/model/model_config.h"
#include "qs/model/model_config_fields.h"
#include "qs/pipeline/gguf_export.h"

namespace {

using namespace qs;
using architectures::Family;

// A small config.json of `family`, spelled with the keys its own data names.
nlohmann::json configOf(const Family& family) {
    const Family& text = architectures::textFamilyOf(family);
    nlohmann::json c = {{"model_type", text.modelType},
                        {"hidden_size", 64},
                        {"intermediate_size", 128},
                        {"num_hidden_layers", 12},  // two of gemma3's six-layer periods
                        {"num_attention_heads", 4},
                        {"num_key_value_heads", 2},
                        {"head_dim", 16},
                        {"vocab_size", 96},
                        {"max_position_embeddings", 256}};
    if (text.moe) {
        c[std::string(text.moe->numExpertsKey)] = 4;
        c["num_experts_per_tok"] = 2;
        if (!text.moe->expertSizeKey.empty()) c[std::string(text.moe->expertSizeKey)] = 32;
        if (text.moe->normTopkDefault) c["norm_topk_prob"] = true;
    }
    if (text.ggufFixed.gemmaQueryScale) c["query_pre_attn_scalar"] = 16;
    if (text.extra == architectures::ConfigExtra::DeepseekV3) {  // the latent attention's own sizes
        c["num_key_value_heads"] = 4;
        c.update({{"q_lora_rank", 32},
                  {"kv_lora_rank", 32},
                  {"qk_nope_head_dim", 16},
                  {"qk_rope_head_dim", 8},
                  {"v_head_dim", 16},
                  {"first_k_dense_replace", 1}});
    }
    if (text.extra == architectures::ConfigExtra::Llama4) c["intermediate_size_mlp"] = 96;  // its dense layers' width
    if (!family.vision) return c;
    return {{"model_type", family.modelType}, {"text_config", c}};
}

// The read-back name of a tensor the writer named `hfName` in a model whose text tower sits under `prefix`.
std::string asReadBack(std::string hfName, const std::string& prefix) {
    if (hfName.starts_with(prefix)) hfName = "model." + hfName.substr(prefix.size());
    return hfName;
}

bool isExpertTensor(const std::string& ggufName) {
    for (const std::string_view module : {architectures::kGgufRouter, architectures::kGgufExpertsGate,
                                          architectures::kGgufExpertsUp, architectures::kGgufExpertsDown})
        if (ggufName.find("." + std::string(module) + ".") != std::string::npos) return true;
    return false;
}

TEST(Architectures, EveryFamilyIsFoundByItsModelTypeAndListedOnce) {
    std::set<std::string_view> types;
    for (const Family* f : architectures::families()) {
        EXPECT_TRUE(types.insert(f->modelType).second) << f->modelType << " is listed twice";
        EXPECT_EQ(architectures::familyOf(f->modelType), f);
        EXPECT_FALSE(f->displayName.empty()) << f->modelType;
        const bool listed = architectures::supportedModelTypes().find(std::string(f->modelType)) != std::string::npos;
        EXPECT_EQ(listed, f->notYet.empty()) << f->modelType;
        if (f->vision) {
            EXPECT_NE(architectures::familyOf(f->vision->textModelType), nullptr) << f->modelType;
        }
    }
    EXPECT_EQ(architectures::familyOf("no_such_model"), nullptr);
}

TEST(Architectures, AFamilyThatIsNotYetSupportedIsRefusedSayingWhatItMisses) {
    for (const Family* f : architectures::families()) {
        if (f->notYet.empty()) continue;
        try {
            (void)model::ModelConfig::fromJson({{"model_type", f->modelType}}, "config.json");
            ADD_FAILURE() << f->modelType << " was read";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string(f->notYet)), std::string::npos) << e.what();
        }
    }
}

TEST(Architectures, EveryGgufArchitectureReadsBackAsAFamily) {
    for (const Family* f : architectures::families()) {
        if (f->ggufArch.empty() || !f->notYet.empty() || !f->ggufReadBackMissing.empty()) continue;
        const Family* read = architectures::familyOfGguf(f->ggufArch, f->moe.has_value());
        ASSERT_NE(read, nullptr) << f->modelType;
        // A family that owns its architecture reads back as its text family (a VLM's GGUF is its text
        // tower); the others (Mistral, Mistral 3, the Gemma 3 VLM) as the family that owns the architecture.
        if (f->ggufReadBack != architectures::GgufReadBack::No) {
            EXPECT_EQ(read, &architectures::textFamilyOf(*f)) << f->modelType;
        } else {
            EXPECT_EQ(read->ggufArch, f->ggufArch) << f->modelType;
            EXPECT_EQ(read->ggufReadBack == architectures::GgufReadBack::No, false) << f->modelType;
        }
        EXPECT_EQ(read->moe.has_value(), architectures::textFamilyOf(*f).moe.has_value()) << f->modelType;
    }
}

TEST(Architectures, EveryNameTheGgufWriterPlansComesBackThroughTheReader) {
    int families = 0;
    for (const Family* f : architectures::families()) {
        if (f->ggufArch.empty() || !f->notYet.empty()) continue;
        SCOPED_TRACE(std::string(f->modelType));
        const model::ModelConfig config = model::ModelConfig::fromJson(configOf(*f));
        // A family whose GGUF does not read back (Family::ggufReadBackMissing) still names its tensors through its own
        // table (a VLM's: its text family's, as the writer does).
        const Family* read = f->ggufReadBackMissing.empty() ? architectures::familyOfGguf(f->ggufArch, config.isMoe())
                                                            : &architectures::textFamilyOf(*f);
        ASSERT_NE(read, nullptr);
        std::set<std::string> ggufNames;
        int plain = 0;
        for (const pipeline::GgufTensorChoice& t : pipeline::ggufTensorPlan(config)) {
            EXPECT_TRUE(ggufNames.insert(t.ggufName).second) << t.ggufName << " is planned twice";
            if (t.name.ends_with("kv_b_proj.weight[k_b]") || t.name.ends_with("kv_b_proj.weight[v_b]")) {
                // DeepSeek's kv_b_proj, split as llama.cpp's deepseek2 reads it: io's reader joins the two again.
                EXPECT_TRUE(t.ggufName.ends_with(t.name.ends_with("[k_b]") ? ".attn_k_b.weight" : ".attn_v_b.weight"))
                    << t.ggufName;
                continue;
            }
            if (isExpertTensor(t.ggufName)) {
                // Stacked experts and routers are split and named by io's reader from the family's MoE names.
                EXPECT_TRUE(read->moe.has_value()) << t.ggufName;
                continue;
            }
            const std::string expected =
                t.name == config.arch.lmHead ? "lm_head.weight" : asReadBack(t.name, config.arch.tensorPrefix);
            EXPECT_EQ(architectures::hfTensorName(read, t.ggufName), expected) << t.ggufName;
            ++plain;
        }
        EXPECT_GT(plain, 3 + 4 * config.numLayers);
        ++families;
    }
    EXPECT_GE(families, 13);
}

// The overrides are what the shared table does not say: the same module under another name.
TEST(Architectures, AFamilysOverridesWinOverTheSharedTable) {
    const Family& gemma = *architectures::familyOf("gemma3_text");
    EXPECT_EQ(architectures::ggufTensorName(&gemma, "model.layers.2.pre_feedforward_layernorm.weight"),
              "blk.2.ffn_norm.weight");
    EXPECT_EQ(architectures::ggufTensorName(&gemma, "model.layers.2.post_attention_layernorm.weight"),
              "blk.2.post_attention_norm.weight");
    EXPECT_EQ(architectures::ggufTensorName(nullptr, "model.layers.2.post_attention_layernorm.weight"),
              "blk.2.ffn_norm.weight");
    const Family& gptOss = *architectures::familyOf("gpt_oss");
    EXPECT_EQ(architectures::hfTensorName(&gptOss, "blk.0.attn_sinks.weight"), "model.layers.0.self_attn.sinks");
    EXPECT_EQ(architectures::hfTensorName(nullptr, "blk.0.attn_sinks.weight"), std::nullopt);
    const Family& phi3 = *architectures::familyOf("phi3");
    EXPECT_EQ(architectures::hfTensorName(&phi3, "blk.1.ffn_up.weight"), "model.layers.1.mlp.gate_up_proj.weight");
    EXPECT_EQ(architectures::ggufTensorName(&phi3, "model.layers.1.mlp.up_proj.weight"), std::nullopt);
}

}  // namespace

namespace {

// eval refuses two configs that run different models: the MoE and Gemma fields count as the sizes do.
TEST(ModelConfigFields, TheMoeAndPerLayerFieldsTellTwoModelsApart) {
    using qs::model::ModelConfig;
    const ModelConfig moe = ModelConfig::fromJson(configOf(*qs::architectures::familyOf("qwen3_moe")));
    EXPECT_TRUE(qs::model::forwardPassDifferences(moe, moe).empty());
    ModelConfig fewerExperts = moe;
    fewerExperts.moe.numExpertsPerToken = 1;
    ModelConfig denseFirst = moe;
    denseFirst.moe.denseLayers = {0};
    const ModelConfig gemma = ModelConfig::fromJson(configOf(*qs::architectures::familyOf("gemma3_text")));
    ModelConfig allGlobal = gemma;
    allGlobal.slidingLayers.assign(allGlobal.slidingLayers.size(), false);
    ModelConfig noOffset = gemma;
    noOffset.arch.normOffset = 0.0f;
    for (const auto& [a, b, field] :
         {std::tuple{moe, fewerExperts, "num_experts_per_tok"}, std::tuple{moe, denseFirst, "mlp_only_layers"},
          std::tuple{gemma, allGlobal, "layer_types"}, std::tuple{gemma, noOffset, "norm offset"}}) {
        const auto differences = qs::model::forwardPassDifferences(a, b);
        ASSERT_EQ(differences.size(), 1u) << field;
        EXPECT_TRUE(differences[0].starts_with(field)) << differences[0];
    }
}

}  // namespace
