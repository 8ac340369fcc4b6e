// GLM-4.5 end to end on the tiny checkpoint (scripts/make-tiny-moe.py's glm4-moe-tiny): the Job quantizes
// every expert, the shared expert and the dense first layer, and not the router or its correction bias;
// the exports (GPTQ, compressed-tensors FP8 / NVFP4) compute what the Job measured; the next-token-
// prediction layer after the decoder's is copied byte for byte; an F32 GGUF reads back as the same model.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/model/model_config_fields.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_export.h"

#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

namespace fs = std::filesystem;

const fs::path kGlm = fs::path(QS_TEST_DATA_DIR) / "moe" / "glm4-moe-tiny";

fs::path scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("qs_glm4_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    return dir;
}

bool quantized(const MethodResult& result, int layer, const std::string& module) {
    return result.layers.at(static_cast<std::size_t>(layer)).contains(module);
}

}  // namespace

TEST(Glm4MoeConfig, ReadsTheRouterTheSharedExpertAndTheDenseLead) {
    const model::ModelConfig c = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kGlm));
    EXPECT_EQ(c.modelType, "glm4_moe");
    EXPECT_EQ(c.moe.numExperts, 8);
    EXPECT_EQ(c.moe.numGroups, 2);
    EXPECT_EQ(c.moe.topkGroups, 1);
    EXPECT_DOUBLE_EQ(c.moe.routedScalingFactor, 2.5);
    EXPECT_EQ(c.moe.sharedExpertIntermediateSize, 16);
    EXPECT_EQ(c.moe.names.sharedExpert(), "mlp.shared_experts.");
    EXPECT_FALSE(c.isMoeLayer(0));
    EXPECT_TRUE(c.isMoeLayer(1));
    EXPECT_TRUE(c.qkvBias);
    EXPECT_FALSE(c.outputBias);
    EXPECT_TRUE(c.qkNorm);
    EXPECT_EQ(c.rotaryDims(), 8);
}

TEST(Glm4MoeConfig, RefusesGroupsThatCannotRoute) {
    nlohmann::json j = io::Checkpoint::open(kGlm).config();
    j["n_group"] = 3;  // 8 experts
    EXPECT_THROW(model::ModelConfig::fromJson(j), Error);
    j["n_group"] = 4;
    j["topk_group"] = 5;
    EXPECT_THROW(model::ModelConfig::fromJson(j), Error);
    j["topk_group"] = 1;
    j["num_experts_per_tok"] = 3;  // one group of two experts cannot give three
    EXPECT_THROW(model::ModelConfig::fromJson(j), Error);
}

TEST(Glm4MoeExport, TheJobQuantizesExpertsSharedExpertAndDenseLayerAndTheExportsComputeWhatItMeasured) {
    const io::Checkpoint source = io::Checkpoint::open(kGlm);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
    const auto sequence = test::tinyTokens(kGlm, 1, 48).front();
    for (const auto& [method, format] :
         {std::pair{"gptq4", "gptq_v2"}, std::pair{"fp8", "fp8"}, std::pair{"nvfp4", "ct-nvfp4"}}) {
        SCOPED_TRACE(method);
        const MethodResult result = test::quantizeTiny(kGlm, method);
        EXPECT_TRUE(quantized(result, 0, "mlp.down_proj"));
        EXPECT_TRUE(quantized(result, 1, "mlp.experts.7.up_proj"));
        EXPECT_TRUE(quantized(result, 2, "mlp.shared_experts.gate_proj"));
        EXPECT_FALSE(quantized(result, 1, "mlp.gate"));
        const fs::path dir = scratch(method);
        exportCheckpoint({kGlm, dir, format, false, {}}, result, {}, CancelToken{});
        const io::Checkpoint exported = io::Checkpoint::open(dir);
        // The router, its correction bias and the MTP layer (model.layers.3) are copied as they are.
        for (const std::string name :
             {"model.layers.1.mlp.gate.weight", "model.layers.2.mlp.gate.e_score_correction_bias",
              "model.layers.3.eh_proj.weight", "model.layers.3.mlp.experts.5.down_proj.weight",
              "model.layers.3.shared_head.norm.weight"})
            EXPECT_TRUE(test::sameBytes(exported.tensor(name), source.tensor(name))) << name;
        model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
        const MatrixF want = test::jobModel(kGlm, result).forward(sequence);
        const MatrixF got = readBack.forward(sequence);
        EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 2e-3f * want.cwiseAbs().maxCoeff());
        fs::remove_all(dir);
    }
}

// glm4moe needs no q/k permutation and stores every tensor as it is: the F32 file is the same model.
TEST(Glm4MoeExport, F32GgufReadsBackAsTheSameModel) {
    const fs::path dir = scratch("gguf");
    fs::create_directories(dir);
    GgufExportOptions options;
    options.chooser = uniformGgufType(io::GgmlType::F32);
    const fs::path gguf = writeGguf(io::Checkpoint::open(kGlm), dir / "glm.gguf", options, {}, CancelToken{});
    const io::Checkpoint back = io::Checkpoint::open(gguf);
    const model::ModelConfig original = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kGlm));
    const model::ModelConfig read = model::ModelConfig::fromCheckpoint(back);
    EXPECT_EQ(model::forwardPassDifferences(original, read), std::vector<std::string>{});
    ASSERT_NE(back.find("model.layers.1.mlp.gate.e_score_correction_bias"), nullptr);
    ASSERT_NE(back.find("model.layers.1.mlp.shared_experts.down_proj.weight"), nullptr);
    const auto sequence = test::tinyTokens(kGlm, 1, 48).front();
    const MatrixF want = model::Transformer::fromCheckpoint(io::Checkpoint::open(kGlm)).forward(sequence);
    const MatrixF got = model::Transformer::fromCheckpoint(back).forward(sequence);
    EXPECT_EQ((got - want).cwiseAbs().maxCoeff(), 0.0f);
    fs::remove_all(dir);
}
