// --rotate through the Job and the export (JobPlan::rotate, export_rotation.h): every method quantizes the
// rotated linears while the reference stays the original model, the work folder records the rotation, a
// model that cannot fold it is refused before any text is read, a rotated GPTQ export is a plain GPTQ
// checkpoint of the same architecture that `eval` scores at the Job's KL, and a rotated GGUF method's file
// (its own rotated token_embd and output) is a plain GGUF that `eval` scores at the Job's KL.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include <unistd.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/mixed_precision_rules.h"
#include "qs/pipeline/plan_builder.h"

#include "demo_tokens.h"
#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

using test::demoTokens;

JobPlan demoPlan(const std::string& methods, bool rotate, std::uint64_t seed = 0) {
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = parseMethodList(methods, 64);
    plan.calibration = demoTokens("calibration.txt", 4, 64);
    plan.evaluation = demoTokens("eval.txt", 2, 64);
    plan.rotate = rotate;
    plan.rotationSeed = seed;
    return plan;
}

std::filesystem::path scratch(const std::string& name) {
    return std::filesystem::temp_directory_path() / ("qs_rotated_" + name + "_" + std::to_string(::getpid()));
}

}  // namespace

TEST(RotatedJob, QuantizesTheRotatedLinearsAgainstTheOriginalModel) {
    const JobResult plain = Job(demoPlan("rtn4", false)).run({}, CancelToken{});
    const JobResult rotated = Job(demoPlan("rtn4", true, 5)).run({}, CancelToken{});
    const MethodResult& p = plain.methods.front();
    const MethodResult& r = rotated.methods.front();
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_FALSE(p.rotationSeed.has_value());
    EXPECT_EQ(r.rotationSeed, std::optional<std::uint64_t>(5));
    // The reference: the rotated dense model is the original, to f32 rounding.
    EXPECT_NEAR(r.kl.pplBase.value, p.kl.pplBase.value, 1e-5 * p.kl.pplBase.value);
    // The quantized linears are the rotated ones: other codes, another KL.
    const auto& pq = *layerAt(p, 0).at("self_attn.q_proj");
    const auto& rq = *layerAt(r, 0).at("self_attn.q_proj");
    EXPECT_NE(pq.scales, rq.scales);
    EXPECT_NE(r.kl.meanKld.value, p.kl.meanKld.value);
}

TEST(RotatedJob, TheWorkFolderIdentityRecordsTheRotation) {
    const JobPlan plain = demoPlan("rtn4", false);
    EXPECT_FALSE(planIdentity(plain).contains("rotation_seed"));  // folders of earlier runs stay resumable
    EXPECT_EQ(planIdentity(demoPlan("rtn4", true, 3))["rotation_seed"], 3);
    EXPECT_NE(planIdentity(demoPlan("rtn4", true, 3)), planIdentity(demoPlan("rtn4", true, 4)));
}

TEST(RotatedJob, TheEstimateCountsTheRotatedLayersCopy) {
    JobPlan plain = demoPlan("rtn4", false), rotated = demoPlan("rtn4", true);
    plain.calibration.clear(), rotated.calibration.clear();  // the phase the rotation's copy adds to
    EXPECT_GE(Job(rotated).estimate().peakBytes, Job(plain).estimate().peakBytes);
}

TEST(RotatedJob, AModelThatCannotFoldItIsRefusedBeforeAnyText) {
    PlanSettings settings;
    settings.checkpoint = std::filesystem::path(QS_TEST_DATA_DIR) / "gemma3" / "gemma3-text-tiny";
    settings.methods = parseMethodList("rtn4", 32);
    settings.evaluation = {"/nonexistent/text.txt", 1, 16};  // never read: the refusal comes first
    settings.rotate = true;
    try {
        (void)buildJobPlan(settings);
        ADD_FAILURE() << "a Gemma 3 rotation was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--rotate: gemma3_text"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("sandwich norms"), std::string::npos) << e.what();
    }
}

TEST(RotatedJob, AGgufMethodIsPlannedButAnImatrixFileIsRefused) {
    PlanSettings settings;
    settings.checkpoint = kDemo;
    settings.methods = parseMethodList("q4_k_m", 32);
    settings.rotate = true;
    EXPECT_NO_THROW((void)buildJobPlan(settings));
    settings.imatrix = "/nonexistent/demo.imatrix";  // never read: its Σx² are of the unrotated inputs
    try {
        (void)buildJobPlan(settings);
        ADD_FAILURE() << "an imatrix was accepted with --rotate";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--rotate: --imatrix"), std::string::npos) << e.what();
    }
}

TEST(RotatedExport, GptqExportIsAPlainGptqCheckpointThatEvaluatesToTheJobsKl) {
    JobPlan plan = demoPlan("gptq4,mxfp4", true, 11);
    const TokenSequences evaluation = plan.evaluation;
    const JobResult job = Job(std::move(plan)).run({}, CancelToken{});
    for (const MethodResult& r : job.methods) {
        ASSERT_TRUE(r.error.empty()) << r.error;
        const bool gptq = r.method.kind == MethodKind::Gptq;
        const auto dir = scratch(r.method.name);
        std::filesystem::remove_all(dir);
        exportCheckpoint({kDemo, dir, "", false, {}}, r, {}, CancelToken{});  // the method's own layout
        const io::Checkpoint exported = io::Checkpoint::open(dir);
        const nlohmann::json& config = exported.config();
        // The demo ties lm_head: the rotated one is its own tensor now.
        EXPECT_EQ(config["tie_word_embeddings"], false);
        ASSERT_NE(exported.find("lm_head.weight"), nullptr);
        EXPECT_EQ(config["architectures"][0], "Qwen3ForCausalLM");
        if (gptq) {
            EXPECT_EQ(config["quantization_config"]["quant_method"], "gptq");
            ASSERT_NE(exported.find("model.layers.0.self_attn.q_proj.qweight"), nullptr);
            EXPECT_EQ(exported.find("model.layers.0.self_attn.q_proj.weight"), nullptr);
        }
        // The norms the linears absorbed are identities; the per-head q/k norms stay.
        for (float v : exported.tensor("model.layers.1.input_layernorm.weight").toF32()) ASSERT_EQ(v, 1.0f);
        for (float v : exported.tensor("model.norm.weight").toF32()) ASSERT_EQ(v, 1.0f);
        const io::Checkpoint demo = io::Checkpoint::open(kDemo);
        EXPECT_EQ(exported.tensor("model.layers.0.self_attn.q_norm.weight").toF32(),
                  demo.tensor("model.layers.0.self_attn.q_norm.weight").toF32());
        // `eval` reads the export with the readers it reads any checkpoint with, against the original (tied,
        // unrotated): the Job's KL, up to the f32 rounding of the rotation (GPTQ: also its F16 scales).
        const CheckpointEvalResult e = evaluateCheckpoints({kDemo, dir, evaluation}, {}, CancelToken{});
        const double tolerance = gptq ? 0.02 : 0.002;
        EXPECT_NEAR(e.kl.meanKld.value, r.kl.meanKld.value, tolerance * r.kl.meanKld.value) << r.method.name;
        std::printf("[ figures  ] rotated %-6s mean KLD: Job %.6g, export %.6g\n", r.method.name.c_str(),
                    r.kl.meanKld.value, e.kl.meanKld.value);
        std::filesystem::remove_all(dir);
    }
}

// Negative control: `method`'s rotated codes written by `write` beside the source's unrotated embedding,
// output and norms (the result's rotation forgotten) score as another model.
void expectUnrotatedIsAnotherModel(
    const std::string& method, const std::string& name,
    const std::function<void(const MethodResult&, const std::filesystem::path&)>& write) {
    JobPlan plan = demoPlan(method, true, 11);
    const TokenSequences evaluation = plan.evaluation;
    JobResult job = Job(std::move(plan)).run({}, CancelToken{});
    MethodResult r = job.methods.front();
    const double rotatedKl = r.kl.meanKld.value;
    r.rotationSeed.reset();
    const auto path = scratch(name);
    std::filesystem::remove_all(path);
    write(r, path);
    const CheckpointEvalResult e = evaluateCheckpoints({kDemo, path, evaluation}, {}, CancelToken{});
    EXPECT_GT(e.kl.meanKld.value, 100.0 * rotatedKl);
    std::filesystem::remove_all(path);
}

TEST(RotatedExport, AnUnrotatedExportOfTheSameCodesIsAnotherModel) {
    expectUnrotatedIsAnotherModel("mxfp4", "unrotated", [](const MethodResult& r, const std::filesystem::path& dir) {
        exportCheckpoint({kDemo, dir, "", false, {}}, r, {}, CancelToken{});
    });
}

TEST(RotatedExport, MoeExportsFoldTheRouterAndEvaluateToTheJobsKl) {
    // The routers read the rotated stream behind post_attention_layernorm: written folded and rotated, or the
    // experts chosen would differ and the KL would jump. Mixtral's lm_head is untied: rotated as it is.
    for (const char* name : {"qwen3-moe-tiny", "mixtral-tiny"}) {
        SCOPED_TRACE(name);
        const auto source = std::filesystem::path(QS_TEST_DATA_DIR) / "moe" / name;
        JobPlan plan;
        plan.checkpoint = source;
        plan.methods = {parseMethod("nvfp4")};  // blocks of 16: the experts are 16 wide
        plan.calibration = test::tinyTokens(source, 4, 32);
        plan.evaluation = test::tinyTokens(source, 2, 32);
        plan.rotate = true;
        plan.rotationSeed = 2;
        const TokenSequences evaluation = plan.evaluation;
        const JobResult job = Job(std::move(plan)).run({}, CancelToken{});
        const MethodResult& r = job.methods.front();
        ASSERT_TRUE(r.error.empty()) << r.error;
        const auto dir = scratch(name);
        std::filesystem::remove_all(dir);
        exportCheckpoint({source, dir, "", false, {}}, r, {}, CancelToken{});
        const CheckpointEvalResult e = evaluateCheckpoints({source, dir, evaluation}, {}, CancelToken{});
        EXPECT_NEAR(e.kl.meanKld.value, r.kl.meanKld.value, 0.002 * r.kl.meanKld.value + 1e-7);
        std::printf("[ figures  ] rotated nvfp4 of %s mean KLD: Job %.6g, export %.6g\n", name, r.kl.meanKld.value,
                    e.kl.meanKld.value);
        std::filesystem::remove_all(dir);
    }
}

TEST(RotatedGgufExport, TheFileIsAPlainGgufThatEvaluatesToTheJobsKl) {
    JobPlan plan = demoPlan("q4_k_m,q8_0", true, 11);
    const TokenSequences evaluation = plan.evaluation;
    const JobResult job = Job(std::move(plan)).run({}, CancelToken{});
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    for (const MethodResult& r : job.methods) {
        ASSERT_TRUE(r.error.empty()) << r.error;
        const bool q4 = r.method.name == "q4_k_m";
        const auto file = scratch(r.method.name + ".gguf");
        std::filesystem::remove(file);
        writeGgufResult(demo, r, file, {}, {}, CancelToken{});
        const io::GgufFile gguf = io::GgufFile::open(file);
        // The demo ties lm_head: the rotated one is output.weight; token_embd keeps the type the tied file gives
        // it (the output's, Q6_K in a Q4_K_M), not an untied model's base type.
        ASSERT_NE(gguf.find("output.weight"), nullptr);
        EXPECT_EQ(*gguf.find("output.weight")->ggmlType, q4 ? io::GgmlType::Q6_K : io::GgmlType::Q8_0);
        EXPECT_EQ(*gguf.find("token_embd.weight")->ggmlType, q4 ? io::GgmlType::Q6_K : io::GgmlType::Q8_0);
        for (float v : gguf.view(*gguf.find("blk.1.attn_norm.weight")).toF32()) ASSERT_EQ(v, 1.0f);
        for (float v : gguf.view(*gguf.find("output_norm.weight")).toF32()) ASSERT_EQ(v, 1.0f);
        // The Job's size counts the untied output, and the export's measure is the file's.
        std::uint64_t tensorBytes = 0;
        for (const io::TensorInfo& t : gguf.tensors()) tensorBytes += gguf.view(t).bytes().size();
        EXPECT_EQ(r.checkpointBytes, tensorBytes);
        EXPECT_EQ(measureGgufResult(demo, r, {}), std::filesystem::file_size(file));
        // Read back as any downloaded GGUF, against the original (tied, unrotated): the Job ran these very
        // values (the same encoded embedding and lm_head), so the KL is the Job's, up to the f32 rounding of the
        // Job's reference, the rotated dense model (seen: 1e-5 of the KL).
        const CheckpointEvalResult e = evaluateCheckpoints({kDemo, file, evaluation}, {}, CancelToken{});
        EXPECT_NEAR(e.kl.meanKld.value, r.kl.meanKld.value, 0.002 * r.kl.meanKld.value) << r.method.name;
        std::printf("[ figures  ] rotated %-6s mean KLD: Job %.6g, GGUF file %.6g\n", r.method.name.c_str(),
                    r.kl.meanKld.value, e.kl.meanKld.value);
        std::filesystem::remove(file);
    }
}

TEST(RotatedGgufExport, TheSameCodesBesideTheUnrotatedEmbeddingAreAnotherModel) {
    expectUnrotatedIsAnotherModel("q8_0", "unrotated.gguf",
                                  [](const MethodResult& r, const std::filesystem::path& file) {
                                      writeGgufResult(io::Checkpoint::open(kDemo), r, file, {}, {}, CancelToken{});
                                  });
}

TEST(RotatedGgufExport, AMixOfGgmlTypesWritesTheRotatedEdgesInF16) {
    // A mix writes token_embd and output in F16 (the Job ran them dense): rotated ones, or the file is another
    // model (negative control: the same result written as if unrotated).
    JobPlan plan = demoPlan("rtn4", true, 11);
    plan.methods.clear();
    plan.mixed = {applyRules(parseMixMethod("q4_K"), {}, 2, "q4_K")};
    const TokenSequences evaluation = plan.evaluation;
    MethodResult r = Job(std::move(plan)).run({}, CancelToken{}).methods.front();
    ASSERT_TRUE(r.error.empty()) << r.error;
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    const auto file = scratch("mix.gguf");
    std::filesystem::remove(file);
    writeGgufMixResult(demo, r, file, {}, {}, CancelToken{});
    ASSERT_NE(io::GgufFile::open(file).find("output.weight"), nullptr);
    const double written = evaluateCheckpoints({kDemo, file, evaluation}, {}, CancelToken{}).kl.meanKld.value;
    // The F16 rounding of the edges, beside q4_K's error (seen: 1e-4 of the KL).
    EXPECT_NEAR(written, r.kl.meanKld.value, 0.05 * r.kl.meanKld.value);
    std::printf("[ figures  ] rotated q4_K mix mean KLD: Job %.6g, GGUF file %.6g\n", r.kl.meanKld.value, written);
    std::filesystem::remove(file);
    r.rotationSeed.reset();
    writeGgufMixResult(demo, r, file, {}, {}, CancelToken{});
    EXPECT_GT(evaluateCheckpoints({kDemo, file, evaluation}, {}, CancelToken{}).kl.meanKld.value,
              100.0 * r.kl.meanKld.value);
    std::filesystem::remove(file);
}
