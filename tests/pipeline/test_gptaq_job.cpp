// GPTAQ in the Job (gptaq4): each linear quantized from the quantized model's inputs beside the
// full-precision model's, exported as GPTQ, and the export evaluating to the KL the Job measured.
#include <gtest/gtest.h>

#include <filesystem>
#include <utility>

#include <unistd.h>

#include "qs/error.h"
#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/export_check.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/resource_estimate.h"

#include "demo_tokens.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

using test::demoTokens;

JobPlan demoPlan(const char* methods) {
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = parseMethodList(methods, 64);
    plan.calibration = demoTokens("calibration.txt", 4, 64);
    plan.evaluation = demoTokens("eval.txt", 2, 64);
    return plan;
}

const MethodResult& resultOf(const JobResult& job, const std::string& name) {
    for (const MethodResult& r : job.methods)
        if (r.method.name == name) return r;
    throw Error("no result for " + name);
}

}  // namespace

TEST(GptaqJob, ParsesAsGptqThatExportsAsGptq) {
    const MethodSpec m = parseMethod("gptaq3-act", 64);
    EXPECT_EQ(m.kind, MethodKind::Gptq);
    EXPECT_TRUE(m.gptaq);
    EXPECT_TRUE(m.actOrder);
    EXPECT_EQ(m.bits, 3);
    EXPECT_EQ(m.label(), "GPTAQ int3, g64, act-order");
    EXPECT_FALSE(parseMethod("gptq3-act", 64).gptaq);
    EXPECT_THROW(parseMethod("gptaq"), Error);
}

TEST(GptaqJob, NeedsTrueSequentialCalibration) {
    JobPlan plan = demoPlan("gptaq4");
    plan.trueSequential = false;
    EXPECT_THROW(Job{std::move(plan)}, Error);
}

// Layer 0's inputs are the same embeddings in both models (X̃ = X), so there GPTAQ is GPTQ bit for bit;
// from layer 1 on the quantized model's inputs drift and the codes differ. The export, read back by the
// readers `eval` uses, evaluates to the Job's KL (the GPTQ layouts' F16 scales move it a little, as
// they move GPTQ's: test_export_kl_identity.cpp).
TEST(GptaqJob, IsGptqWhereTheInputsAgreeAndItsExportEvaluatesToTheJobsKl) {
    JobPlan plan = demoPlan("gptq4,gptaq4,gptaq4-sym");
    const TokenSequences evaluation = plan.evaluation;
    const JobResult job = Job(std::move(plan)).run({}, CancelToken{});
    const MethodResult& gptq = resultOf(job, "gptq4");
    const MethodResult& gptaq = resultOf(job, "gptaq4");
    ASSERT_TRUE(gptq.error.empty()) << gptq.error;
    ASSERT_TRUE(gptaq.error.empty()) << gptaq.error;
    ASSERT_EQ(gptaq.layers.size(), gptq.layers.size());
    ASSERT_GE(gptaq.layers.size(), 2u);
    for (const auto& [module, q] : gptaq.layers[0]) EXPECT_EQ(q->codes, gptq.layers[0].at(module)->codes) << module;
    int differing = 0;
    for (std::size_t l = 1; l < gptaq.layers.size(); ++l)
        for (const auto& [module, q] : gptaq.layers[l]) {
            EXPECT_EQ(q->method, quant::Method::Gptq);
            differing += q->codes != gptq.layers[l].at(module)->codes;
        }
    EXPECT_GT(differing, 0);
    std::printf("[ figures  ] demo (4 x 64 calibration, 2 x 64 evaluation): mean KLD gptq4 %.6g, gptaq4 %.6g\n",
                gptq.kl.meanKld.value, gptaq.kl.meanKld.value);

    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    const auto root = std::filesystem::temp_directory_path() / ("qs_gptaq_job_" + std::to_string(::getpid()));
    std::filesystem::create_directories(root);
    int exported = 0;
    // GPTQ v1 holds symmetric grids only (gptq_encoder.cpp): the symmetric variant goes there.
    for (const auto& [name, format] : {std::pair{"gptaq4", "gptq_v2"}, std::pair{"gptaq4-sym", "gptq"}}) {
        const MethodResult& r = resultOf(job, name);
        ASSERT_TRUE(r.error.empty()) << r.error;
        ASSERT_TRUE(exportRefusal(r.method, formats::encoderNamed(format), demo).empty()) << format;
        const auto dir = root / format;
        exportCheckpoint({kDemo, dir, format, false, {}}, r, {}, CancelToken{});
        const CheckpointEvalResult e = evaluateCheckpoints({kDemo, dir, evaluation}, {}, CancelToken{});
        EXPECT_NE(e.kl.meanKld.value, 0.0);
        EXPECT_NEAR(e.kl.meanKld.value, r.kl.meanKld.value, 0.02 * r.kl.meanKld.value) << name << " as " << format;
        std::printf("[ figures  ] %s as %s: mean KLD Job %.6g, export %.6g\n", name, format, r.kl.meanKld.value,
                    e.kl.meanKld.value);
        ++exported;
    }
    std::filesystem::remove_all(root);
    EXPECT_EQ(exported, 2);
}

// GPTAQ's D beside H, its copy of H and P, the original's calibration stream it pairs with and that
// stream's extra pass: more memory and time than GPTQ's plan predicts.
TEST(GptaqJob, TheEstimateCountsItsExtraMatricesAndPasses) {
    const ResourceEstimate gptq = Job(demoPlan("gptq4")).estimate();
    const ResourceEstimate gptaq = Job(demoPlan("gptaq4")).estimate();
    EXPECT_GT(gptaq.peakBytes - gptaq.fixedBytes, gptq.peakBytes - gptq.fixedBytes);  // the modelled part
    EXPECT_GT(gptaq.seconds, gptq.seconds);
    EXPECT_GT(gptaq.hiddenBytes, gptq.hiddenBytes);  // the original's calibration stream travels
}

// A work folder written by gptq4 is not resumed as gptaq4, nor the other way round.
TEST(GptaqJob, AWorkFolderTellsItFromGptq) {
    EXPECT_NE(planIdentity(demoPlan("gptq4")), planIdentity(demoPlan("gptaq4")));
    EXPECT_NE(planIdentity(demoPlan("gptq4-act")), planIdentity(demoPlan("gptaq4-act")));
    EXPECT_EQ(planIdentity(demoPlan("gptaq4")), planIdentity(demoPlan("gptaq4")));
}
