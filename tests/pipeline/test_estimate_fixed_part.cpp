// The estimate's fixed part: what the process holds besides the job's own work (the program and its
// libraries, the high-water mark it has reached, the lm_head's pages and blocks while the logits are
// computed), so that --max-memory bounds the peak resident set, and a limit below what the process
// already holds is refused before any work, naming both numbers.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/resource_estimate.h"

#include "job_comparison.h"

using namespace qs;
using namespace qs::pipeline;
using namespace qs::test;
namespace fs = std::filesystem;

namespace {

// A plan whose peak is its end: a wide vocabulary's logits against a small model's layers.
WorkloadShape logitsBoundShape() {
    WorkloadShape s;
    s.config.hiddenSize = 256;
    s.config.intermediateSize = 512;
    s.config.numLayers = 2;
    s.config.numHeads = 4;
    s.config.numKvHeads = 2;
    s.config.headDim = 64;
    s.config.vocabSize = 100000;
    s.methods = 1;
    s.evaluationTokens = 512;
    s.evaluationSequenceLength = 512;
    return s;
}

}  // namespace

TEST(EstimateFixedPart, TheLmHeadsPagesCountWhileTheLogitsAreComputed) {
    WorkloadShape shape = logitsBoundShape();
    const std::uint64_t without = predictedJobBytes(shape);
    shape.lmHeadFileBytes = 100000ull * 256 * 2;  // a BF16 head
    EXPECT_EQ(predictedJobBytes(shape) - without, shape.lmHeadFileBytes);
    // Brute force: two sequences' logits, one 8192-row block of the head in f32 and its product, the pages.
    const double seq = 512, vocab = 100000, h = 256;
    const double atLeast = 2 * seq * vocab * 4 + 8192 * h * 4 + seq * 8192 * 4 + double(shape.lmHeadFileBytes);
    EXPECT_GE(double(predictedJobBytes(shape)), atLeast);
    EXPECT_LT(double(predictedJobBytes(shape)), atLeast * 1.2) << "the end dominates this plan";
}

TEST(EstimateFixedPart, TheFixedPartIsWhatTheProcessHoldsWhenEstimated) {
    const fs::path checkpoint = fourLayerCheckpoint("fixed_part_model");
    const ResourceEstimate e = Job(planFor(checkpoint, "rtn4")).estimate();
    EXPECT_GT(e.residentAtStartBytes, 1u << 20) << "a process holds its program and libraries";
    EXPECT_GE(e.highWaterBytes, e.residentAtStartBytes);
    EXPECT_EQ(e.fixedBytes, e.residentAtStartBytes + kRunOverheadBytes);
    EXPECT_GT(e.peakBytes, e.fixedBytes);
    EXPECT_FALSE(e.limitedByMaxMemory);
    fs::remove_all(checkpoint);
}

// A process that once held 96 MiB more than now has a peak resident set of at least that: under
// --max-memory the estimate cannot promise less (without a limit it predicts the job's own peak).
TEST(EstimateFixedPart, UnderALimitThePeakIsAtLeastTheHighWaterMarkReached) {
    const fs::path checkpoint = fourLayerCheckpoint("high_water_model");
    {
        std::vector<char> touched(96u << 20);
        std::memset(touched.data(), 1, touched.size());
        ASSERT_EQ(touched[touched.size() / 2], 1);
    }  // freed: malloc returns a block this large to the system
    const std::uint64_t highWater = residentHighWaterBytes();
    JobPlan plan = planFor(checkpoint, "rtn4");
    const ResourceEstimate free = Job(plan).estimate();
    ASSERT_LT(free.peakBytes, highWater) << "the job's own peak is below the buffer's high-water mark";
    ASSERT_GT(free.availableBytes / 2, highWater);
    plan.maxMemory =
        free.availableBytes / 2;  // a limit above everything here, below what is available however that moves
    const ResourceEstimate limited = Job(plan).estimate();
    EXPECT_TRUE(limited.limitedByMaxMemory);
    EXPECT_GE(limited.peakBytes, highWater);
    EXPECT_TRUE(limited.fits());
    fs::remove_all(checkpoint);
}

TEST(EstimateFixedPart, ALimitBelowWhatTheProcessHoldsIsRefusedInOneLineNamingBoth) {
    const fs::path checkpoint = fourLayerCheckpoint("below_fixed_model");
    const fs::path work = tempDir("below_fixed_work");
    JobPlan plan = planFor(checkpoint, "rtn4");
    plan.workDir = work;  // spilling every stream would not help: the program alone is over the limit
    plan.maxMemory = 1u << 20;
    const ResourceEstimate e = Job(plan).estimate();
    EXPECT_FALSE(e.fits());
    EXPECT_EQ(e.belowFixedPart().rfind("--max-memory 1.00 MiB is below what the process holds before any work: ", 0),
              0u)
        << e.belowFixedPart();
    try {
        (void)Job(plan).run({}, CancelToken{});
        FAIL() << "a plan below the fixed part ran";
    } catch (const Error& error) {
        const std::string message = error.what();
        EXPECT_EQ(message.rfind("--max-memory 1.00 MiB is below what the process holds before any work: ", 0), 0u)
            << message;
        EXPECT_NE(message.find(" MiB resident"), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos);
    }
    EXPECT_FALSE(fs::exists(work)) << "refused before any work";
    plan.maxMemory = 0;  // without a limit the same plan runs
    EXPECT_TRUE(Job(plan).estimate().belowFixedPart().empty());
    fs::remove_all(checkpoint);
}
