// --matmul: what each choice selects where, the calibration passes in BF16 (the evaluation in f32), and
// the work folder's identity naming a BF16 run so that it never resumes as an f32 one.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>

#include "qs/error.h"
#include "qs/model/bf16_layer_math.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/matmul_choice.h"

#include "delegating_backend.h"
#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

bool bf16Available() {
    try {
        (void)model::bf16LayerMath();
        return true;
    } catch (const Error&) {
        return false;
    }
}

MethodResult gptq4(MatmulChoice matmul) {
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = {parseMethod("gptq4", 128)};
    plan.calibration = test::tinyTokens(kDemo, 32, 128);  // on fewer tokens BF16's rounding weighs more (+9 % at 16)
    plan.evaluation = test::tinyTokens(kDemo, 4, 128);
    plan.matmul = matmul;
    plan.device = DeviceChoice::Cpu;
    auto result = Job(std::move(plan)).run({}, CancelToken{});
    EXPECT_EQ(result.bf16Calibration, matmul == MatmulChoice::Bf16);
    return std::move(result.methods.front());
}

}  // namespace

// On the CPU reference only: a backend with its own LayerMath (CUDA) keeps f32, and refuses bf16 asked for.
TEST(MatmulChoice, ChoosesBf16OnlyForTheCpuAndWhereAsked) {
    EXPECT_FALSE(selectMatmul(MatmulChoice::F32, false).bf16);
    EXPECT_FALSE(selectMatmul(MatmulChoice::Auto, true).bf16);
    EXPECT_THROW(selectMatmul(MatmulChoice::Bf16, true), Error);
    if (bf16Available()) {
        EXPECT_EQ(selectMatmul(MatmulChoice::Auto, false).bf16, model::cpuRunsBf16Natively());
    }
    EXPECT_EQ(parseMatmulChoice("bf16"), MatmulChoice::Bf16);
    EXPECT_THROW(parseMatmulChoice("fp16"), Error);
}

// GPTQ calibrated with BF16 matmuls: other Hessians (its KL is not the f32 run's), within a few percent
// of it on the demo; RTN, which reads no calibration, is bit for bit the same.
TEST(MatmulChoice, Bf16CalibrationStaysCloseToF32) {
    if (!bf16Available()) GTEST_SKIP() << "oneDNN has no BF16 matmul on this CPU";
    const MethodResult f32 = gptq4(MatmulChoice::F32), bf16 = gptq4(MatmulChoice::Bf16);
    std::printf("GPTQ int4 g128 on the demo: mean KL %.6g (f32 calibration), %.6g (BF16)\n", f32.kl.meanKld.value,
                bf16.kl.meanKld.value);
    EXPECT_NE(f32.kl.meanKld.value, bf16.kl.meanKld.value);
    EXPECT_LT(std::abs(bf16.kl.meanKld.value / f32.kl.meanKld.value - 1.0), 0.1);
}

// The CPU whose Hessians it counts, by the inputs their products read.
class CountingHessians final : public test::DelegatingBackend {
public:
    std::unique_ptr<HessianSink> hessian(std::int64_t features) const override {
        ++f32;
        return DelegatingBackend::hessian(features);
    }
    std::unique_ptr<HessianSink> hessianOfBf16Inputs(std::int64_t features) const override {
        ++bf16;
        return DelegatingBackend::hessianOfBf16Inputs(features);
    }
    mutable std::atomic<int> f32 = 0, bf16 = 0;
};

// The Hessians read what the calibration's GEMMs read: the inputs rounded to bfloat16 in a BF16 run.
TEST(MatmulChoice, ABf16RunsHessiansReadBf16Inputs) {
    if (!bf16Available()) GTEST_SKIP() << "oneDNN has no BF16 matmul on this CPU";
    for (const MatmulChoice matmul : {MatmulChoice::F32, MatmulChoice::Bf16}) {
        JobPlan plan;
        plan.checkpoint = kDemo;
        plan.methods = {parseMethod("gptq4", 128)};
        plan.calibration = test::tinyTokens(kDemo, 2, 64);
        plan.evaluation = test::tinyTokens(kDemo, 1, 64);
        plan.matmul = matmul;
        auto backend = std::make_shared<CountingHessians>();
        plan.backend = backend;
        const auto result = Job(std::move(plan)).run({}, CancelToken{});
        ASSERT_TRUE(result.methods.front().error.empty()) << result.methods.front().error;
        // The demo's layers: 4 distinct linear inputs each (q/k/v, o, gate/up, down).
        const int hessians = 4 * 2;
        EXPECT_EQ(backend->bf16.load(), matmul == MatmulChoice::Bf16 ? hessians : 0);
        EXPECT_EQ(backend->f32.load(), matmul == MatmulChoice::Bf16 ? 0 : hessians);
    }
}

TEST(MatmulChoice, TheWorkFolderNamesABf16Run) {
    if (!bf16Available()) GTEST_SKIP() << "oneDNN has no BF16 matmul on this CPU";
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.device = DeviceChoice::Cpu;
    plan.matmul = MatmulChoice::F32;
    EXPECT_FALSE(planIdentity(plan).contains("matmul"));  // as earlier releases wrote it
    plan.matmul = MatmulChoice::Bf16;
    EXPECT_EQ(planIdentity(plan).at("matmul"), "bf16");
}
