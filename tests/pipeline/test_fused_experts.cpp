// transformers 5's fused experts (mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj [E, H, I]) read
// as the per-expert tensors of transformers 4: the fused tiny checkpoints of scripts/make-tiny-moe.py and
// their per-expert twins give the same tensors byte for byte, the same GPTQ codes and the same KL bit for
// bit, and quantized exports of both are the same files (per expert, as vLLM's expert mapping loads them).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/pipeline/exporter.h"

#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

namespace fs = std::filesystem;

const fs::path kMoe = fs::path(QS_TEST_DATA_DIR) / "moe";

fs::path scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("qs_fused_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    return dir;
}

class FusedExperts : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(FusedExperts, ReadAsTheirPerExpertTwinByteForByte) {
    const io::Checkpoint twin = io::Checkpoint::open(kMoe / GetParam());
    const io::Checkpoint fused = io::Checkpoint::open(kMoe / (std::string(GetParam()) + "-fused"));
    ASSERT_EQ(fused.tensors().size(), twin.tensors().size());
    for (const io::CheckpointTensor& t : twin.tensors()) {
        ASSERT_NE(fused.find(t.info->name), nullptr) << t.info->name;
        EXPECT_TRUE(test::sameBytes(fused.tensor(t.info->name), twin.view(t))) << t.info->name;
    }
    EXPECT_EQ(fused.find("model.layers.1.mlp.experts.gate_up_proj"), nullptr);
}

TEST_P(FusedExperts, GiveTheSameCodesAndTheSameKlAsTheirTwin) {
    const MethodResult twin = test::quantizeTiny(kMoe / GetParam(), "gptq4");
    const MethodResult fused = test::quantizeTiny(kMoe / (std::string(GetParam()) + "-fused"), "gptq4");
    EXPECT_EQ(fused.kl.meanKld.value, twin.kl.meanKld.value);
    ASSERT_EQ(fused.layers.size(), twin.layers.size());
    for (std::size_t layer = 0; layer < twin.layers.size(); ++layer)
        for (const auto& [module, q] : twin.layers[layer]) {
            const auto& other = *fused.layers[layer].at(module);
            EXPECT_EQ(other.codes, q->codes) << layer << " " << module;
            EXPECT_EQ(other.scales, q->scales) << layer << " " << module;
        }
    // Exported, both are the same per-expert GPTQ checkpoint.
    const fs::path a = scratch("twin"), b = scratch("fused");
    exportCheckpoint({kMoe / GetParam(), a, "gptq_v2", false, {}}, twin, {}, CancelToken{});
    exportCheckpoint({kMoe / (std::string(GetParam()) + "-fused"), b, "gptq_v2", false, {}}, fused, {}, CancelToken{});
    const io::Checkpoint ea = io::Checkpoint::open(a), eb = io::Checkpoint::open(b);
    ASSERT_EQ(ea.tensors().size(), eb.tensors().size());
    for (const io::CheckpointTensor& t : ea.tensors())
        EXPECT_TRUE(test::sameBytes(eb.tensor(t.info->name), ea.view(t))) << t.info->name;
    EXPECT_NE(eb.find("model.layers.1.mlp.experts.3.down_proj.qweight"), nullptr);
    fs::remove_all(a);
    fs::remove_all(b);
}

INSTANTIATE_TEST_SUITE_P(TinyMoe, FusedExperts, ::testing::Values("qwen3-moe-tiny", "glm4-moe-tiny"),
                         [](const auto& info) { return std::string(info.param).substr(0, 4); });

// A fused gate_up_proj whose rows are no gate and up halves, and a fused tensor beside its own per-expert
// twin, are refused naming the tensor.
TEST(FusedExpertsShape, OddOrDuplicatedFusedTensorsAreRefused) {
    const io::Checkpoint source = io::Checkpoint::open(kMoe / "qwen3-moe-tiny-fused");
    for (const bool duplicate : {false, true}) {
        const fs::path dir = scratch(duplicate ? "duplicate" : "odd");
        {
            io::CheckpointWriter writer(dir);
            for (const io::CheckpointTensor& t : source.tensors())
                writer.addTensor(t.info->name, t.info->dtype, t.info->shape, source.view(t).bytes());
            // layer 0's down_proj fused, beside the per-expert tensors the source reads as; or 3 rows
            if (duplicate)
                writer.addTensorF32("model.layers.0.mlp.experts.down_proj", io::DType::F32, {4, 32, 16},
                                    std::vector<float>(4 * 32 * 16, 0.0f));
            else
                writer.addTensorF32("model.layers.9.mlp.experts.gate_up_proj", io::DType::F32, {1, 3, 2},
                                    std::vector<float>(6, 1.0f));
            writer.setConfig(source.config());
            writer.finish();
        }
        try {
            (void)io::Checkpoint::open(dir);
            ADD_FAILURE() << "opened";
        } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(duplicate ? "model.layers.0.mlp.experts." : "model.layers.9.mlp.experts.gate_up_proj"),
                      std::string::npos)
                << what;
        }
        fs::remove_all(dir);
    }
}
