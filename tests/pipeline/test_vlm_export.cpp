// The text towers of Qwen2.5-VL, Qwen3-VL and Mistral 3 end to end, on the tiny random VLMs of
// scripts/make-tiny-vlm.py in both tensor layouts: the Job quantizes the text tower, GPTQ and FP8
// exports read back through our reader as the Job's model computes, and the vision tower and projector
// are copied byte for byte; the F32 GGUF carries llama.cpp's architecture (qwen2vl / qwen3vl with the
// mRoPE sections, llama for Mistral 3) and reads back as the checkpoint runs; --override / --ignore rules
// name the text tower's linears by their real names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include <unistd.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/io/tensor_name.h"
#include "qs/model/model_config.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/gguf_imatrix.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/mixed_methods.h"
#include "qs/pipeline/mixed_precision_rules.h"

#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

namespace fs = std::filesystem;

const fs::path kVlmData = fs::path(QS_TEST_DATA_DIR) / "vlm";

struct Tiny {
    const char* name;
    const char* ggufArch;
    int towerTensors;  // vision tower + projector tensors the script writes
};

const Tiny kTiny[] = {{"qwen2_5-vl-tiny", "qwen2vl", 18},
                      {"qwen2_5-vl-old-tiny", "qwen2vl", 18},
                      {"qwen3-vl-tiny", "qwen3vl", 25},
                      {"mistral3-tiny", "llama", 15},
                      {"mistral3-old-tiny", "llama", 15}};

fs::path scratch(const std::string& what) {
    return fs::temp_directory_path() / ("qs_vlm_" + what + "_" + std::to_string(::getpid()));
}

}  // namespace

TEST(VlmExport, GptqAndFp8ReadBackAsTheJobsModelAndKeepTheVisionTowerByteForByte) {
    for (const Tiny& tiny : kTiny) {
        const fs::path path = kVlmData / tiny.name;
        const io::Checkpoint source = io::Checkpoint::open(path);
        const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
        const auto sequence = test::tinyTokens(path, 1, 48).front();
        for (const auto& [method, format, tolerance] :
             {std::tuple{"gptq4", "gptq_v2", 2e-3f}, std::tuple{"fp8", "fp8", 1e-4f}}) {
            SCOPED_TRACE(std::string(tiny.name) + " " + method);
            const MethodResult result = test::quantizeTiny(path, method);
            ASSERT_EQ(result.layers.size(), std::size_t(config.numLayers));
            const fs::path dir = scratch(std::string(tiny.name) + "_" + format);
            fs::remove_all(dir);
            exportCheckpoint({path, dir, format, false, {}}, result, {}, CancelToken{});
            const io::Checkpoint exported = io::Checkpoint::open(dir);

            int tower = 0;
            for (const io::CheckpointTensor& t : source.tensors()) {
                bool passThrough = false;
                for (const auto& prefix : config.arch.passThroughPrefixes)
                    passThrough = passThrough || t.info->name.starts_with(prefix);
                EXPECT_EQ(passThrough, io::isTowerTensor(t.info->name)) << t.info->name;
                if (!passThrough) continue;
                ++tower;
                EXPECT_TRUE(test::sameBytes(source.tensor(t.info->name), exported.tensor(t.info->name)))
                    << t.info->name;
            }
            EXPECT_EQ(tower, tiny.towerTensors);
            // Every text-tower linear quantized: its dense weight is gone from the export.
            EXPECT_EQ(exported.find(config.layerPrefix(1) + "mlp.down_proj.weight") == nullptr,
                      std::string(method) == "gptq4");
            const nlohmann::json written = exported.config();
            EXPECT_EQ(written.at("model_type"), source.config().at("model_type"));
            if (source.config().contains("text_config")) {
                EXPECT_EQ(written.at("text_config"), source.config().at("text_config"));
            }

            model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
            const MatrixF want = test::jobModel(path, result).forward(sequence);
            const MatrixF got = readBack.forward(sequence);
            EXPECT_LT((got - want).cwiseAbs().maxCoeff(), tolerance * want.cwiseAbs().maxCoeff());
            EXPECT_GT((want - model::Transformer::fromCheckpoint(source).forward(sequence)).cwiseAbs().maxCoeff(),
                      0.0f);  // quantized
            fs::remove_all(dir);
        }
    }
}

// The F32 GGUF as llama.cpp's converter writes the text model (test_llama_interop runs it in llama.cpp):
// its architecture, the mRoPE sections padded to four, and the same logits through our reader.
TEST(VlmExport, GgufIsLlamaCppsTextArchitectureAndReadsBackAsTheCheckpointRuns) {
    for (const Tiny& tiny : kTiny) {
        SCOPED_TRACE(tiny.name);
        const fs::path path = kVlmData / tiny.name;
        const io::Checkpoint source = io::Checkpoint::open(path);
        const fs::path file = scratch(std::string(tiny.name) + ".gguf");
        fs::remove(file);
        GgufExportOptions options;
        options.chooser = uniformGgufType(io::GgmlType::F32);
        writeGguf(source, file, options, {}, CancelToken{});
        const io::Checkpoint gguf = io::Checkpoint::open(file);
        const io::GgufMetadata& m = gguf.gguf()->metadata();
        const std::string arch = tiny.ggufArch;
        EXPECT_EQ(*m.string("general.architecture"), arch);
        const io::GgufValue* sections = m.find(arch + ".rope.dimension_sections");
        if (arch == "llama") {
            EXPECT_EQ(sections, nullptr);
        } else {
            ASSERT_NE(sections, nullptr);
            std::vector<std::int64_t> values;
            ASSERT_NE(sections->asArray(), nullptr);
            for (const auto& v : sections->asArray()->items) values.push_back(v.asInteger().value_or(-1));
            EXPECT_EQ(values, arch == "qwen2vl" ? (std::vector<std::int64_t>{1, 1, 2, 0})
                                                : (std::vector<std::int64_t>{2, 3, 3, 0}));
        }
        if (arch == "qwen3vl") {
            EXPECT_EQ(m.integer("qwen3vl.n_deepstack_layers"), 1);
        }
        for (const io::CheckpointTensor& t : gguf.tensors())
            EXPECT_FALSE(io::isTowerTensor(t.info->name)) << t.info->name;
        const std::vector<model::TokenId> sequence{72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100};
        const MatrixF want = model::Transformer::fromCheckpoint(source).forward(sequence);
        const MatrixF got = model::Transformer::fromCheckpoint(gguf).forward(sequence);
        EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 1e-4f * want.cwiseAbs().maxCoeff());
        fs::remove(file);
    }
}

// --override / --ignore written with a VLM's real names (model.language_model.layers.N.) decide its
// linears; Llama's spelling matches nothing there and is refused as it is for any name that matches nothing.
TEST(VlmMixedPrecision, RulesNameTheTextTowersLinearsByTheirRealNames) {
    const fs::path path = kVlmData / "qwen2_5-vl-tiny";
    const io::Checkpoint source = io::Checkpoint::open(path);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
    ModuleRules rules;
    rules.tensorPrefix = config.arch.tensorPrefix;
    rules.ignore = {R"(model\.language_model\.layers\.1\.mlp\.down_proj)"};
    rules.overrides = {parseOverride(R"(language_model\.layers\.2\.self_attn\.o_proj=fp8)", 16)};
    const MixedMethods mix = applyRules(parseMethod("gptq4", 16), rules, config.numLayers, "gptq4 with rules");
    EXPECT_EQ(mix.methodOf(1, "mlp.down_proj"), nullptr);
    ASSERT_NE(mix.methodOf(2, "self_attn.o_proj"), nullptr);
    EXPECT_EQ(mix.methodOf(2, "self_attn.o_proj")->name, "fp8");
    EXPECT_EQ(mix.methodOf(0, "mlp.down_proj")->name, "gptq4");

    ModuleRules llamaNames = rules;
    llamaNames.tensorPrefix = "model.";
    try {
        (void)applyRules(parseMethod("gptq4", 16), llamaNames, config.numLayers, "");
        ADD_FAILURE() << "the text tower's names were matched under model.layers.";
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("matches no quantized linear (model.layers.N."));
    }

    // The Job runs the ignore rule; the ignored linear stays dense in the export, byte for byte.
    ModuleRules ignoreOnly = rules;
    ignoreOnly.overrides.clear();
    JobPlan plan;
    plan.checkpoint = path;
    plan.mixed = {applyRules(parseMethod("gptq4", 16), ignoreOnly, config.numLayers, "gptq4 with rules")};
    plan.calibration = test::tinyTokens(path, 8, 64);
    const JobResult result = Job(std::move(plan)).run({}, CancelToken{});
    ASSERT_EQ(result.methods.size(), 1u);
    ASSERT_TRUE(result.methods.front().error.empty()) << result.methods.front().error;
    const fs::path dir = scratch("mixed");
    fs::remove_all(dir);
    exportCheckpoint({path, dir, "", false, {}}, result.methods.front(), {}, CancelToken{});
    const io::Checkpoint exported = io::Checkpoint::open(dir);
    const std::string ignored = "model.language_model.layers.1.mlp.down_proj.weight";
    ASSERT_NE(exported.find(ignored), nullptr);
    EXPECT_TRUE(test::sameBytes(source.tensor(ignored), exported.tensor(ignored)));
    EXPECT_EQ(exported.find("model.language_model.layers.0.mlp.down_proj.weight"), nullptr);  // quantized
    fs::remove_all(dir);
}

// A GGUF method on the old Mistral 3 layout: its own token_embd / output read from the checkpoint's names
// (language_model.lm_head.weight, not lm_head.weight), and the imatrix of its calibration named as
// llama-imatrix names llama.cpp's tensors (blk.N.attn_q.weight), not by the text tower's prefix.
TEST(VlmMixedPrecision, GgufMethodAndItsImatrixUseTheTowersNames) {
    const fs::path path = kVlmData / "mistral3-old-tiny";
    const MethodResult result = test::quantizeTiny(path, "q8_0");
    ASSERT_EQ(result.layers.size(), 3u);
    const fs::path file = scratch("imatrix.gguf");
    fs::remove(file);
    writeImatrix(result, model::ModelConfig::fromCheckpoint(io::Checkpoint::open(path)), file,
                 ImatrixInfo{{"calibration.txt"}, 8, 64}, true);
    const io::Checkpoint imatrix = io::Checkpoint::open(file);
    std::set<std::string> names;
    for (const io::CheckpointTensor& t : imatrix.tensors()) names.insert(t.info->name);
    EXPECT_EQ(names.size(), 3u * 7u * 2u);
    for (const char* name :
         {"blk.0.attn_q.weight.in_sum2", "blk.2.ffn_down.weight.counts", "blk.1.attn_output.weight.in_sum2"})
        EXPECT_TRUE(names.contains(name)) << name;
    for (const auto& name : names) EXPECT_TRUE(name.starts_with("blk.")) << name;
    fs::remove(file);
}
