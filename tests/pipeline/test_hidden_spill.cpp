// Hidden states beyond the memory budget (JobPlan::maxMemory): the streams that do not fit live in
// the work folder and stream from there a sequence at a time; the result is the in-RAM run's, bit for
// bit, killed and resumed or not. Also the stream itself, the estimate's share, and --max-memory's sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/byte_size.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/work_folder.h"

#include "hidden_stream.h"
#include "job_comparison.h"
#include "stream_budget.h"
#include "synthetic_checkpoint.h"

using namespace qs;
using namespace qs::pipeline;
using namespace qs::test;
namespace fs = std::filesystem;

namespace {

Hidden randomSequences(unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.0f, 3.0f);
    Hidden out;
    for (int rows : {5, 1, 9}) out.push_back(MatrixF::NullaryExpr(rows, 7, [&] { return n(rng); }));
    return out;
}

// A change whose result depends on every bit of the input and on the sequence's position.
void scramble(MatrixF& h) {
    const MatrixF mixed = h * h.transpose() * h;
    h = (mixed.array() / (1.0f + h.array().abs()) + float(h.rows())).matrix();
}

std::vector<std::string> namesOf(const std::vector<TravellingStream>& streams) {
    std::vector<std::string> names;
    for (const auto& s : streams) names.push_back(s.name);
    return names;
}

// KV cache (the first method), true-sequential GPTQ and AWQ with their own streams, RTN and a GGUF mix
// on the original's statistics (the GGUF one from its own embedding), per-layer and per-group KL.
const std::string kMethods = "nvfp4,gptq4-act,awq4,q4_k_m,rtn4";

}  // namespace

TEST(HiddenStream, ASpilledStreamRunsToTheSameBitsAndNeverChangesACompleteFile) {
    const fs::path dir = tempDir("stream");
    fs::create_directories(dir);
    HiddenStream inRam(randomSequences(1));
    HiddenStream spilled = inRam.copy(dir / "layer0.f32");
    ASSERT_TRUE(spilled.isSpilled());
    EXPECT_EQ(spilled.size(), 3u);
    EXPECT_EQ(spilled.bytes(), (5u + 1u + 9u) * 7u * sizeof(float));
    EXPECT_EQ(fs::file_size(dir / "layer0.f32"), spilled.bytes());

    inRam.update(scramble, CancelToken{});
    spilled.update(scramble, CancelToken{});  // no target named: in place
    spilled.writeNextTo(dir / "layer1.f32");
    inRam.update(scramble, CancelToken{});
    spilled.update(scramble, CancelToken{});
    const Hidden once = [&] {
        HiddenStream reread = HiddenStream::spilled(dir / "layer0.f32", spilled.shape());
        return reread.inMemory();
    }();
    const Hidden expectedOnce = [] {
        Hidden h = randomSequences(1);
        for (auto& m : h) scramble(m);
        return h;
    }();
    MatrixF buffer;
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(sameMatrix(spilled.sequence(i, buffer), inRam.sequence(i, buffer))) << "sequence " << i;
        EXPECT_TRUE(sameMatrix(once[i], expectedOnce[i])) << "the first layer's file is as it was: " << i;
    }
    spilled.saveTo(dir / "saved.f32");  // a link (or a copy) of its file, not a rewrite
    EXPECT_EQ(fs::file_size(dir / "saved.f32"), spilled.bytes());
    EXPECT_TRUE(
        sameMatrix(HiddenStream::spilled(dir / "saved.f32", spilled.shape()).inMemory()[2], inRam.inMemory()[2]));

    CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW(spilled.update(scramble, cancel), Cancelled);
    EXPECT_THROW((void)HiddenStream::spilled(dir / "layer0.f32", SequenceShape{{5, 1}, 7}), Error)
        << "a file of another size";
    fs::remove_all(dir);
}

TEST(HiddenStream, TheBudgetKeepsStreamsInOrderWhileTheyFit) {
    const std::vector<TravellingStream> streams{{"a", 60}, {"b", 50}, {"c", 30}, {"d", 10}};
    EXPECT_EQ(spilledStreams(streams, 1000), (std::set<std::string>{}));
    EXPECT_EQ(spilledStreams(streams, 85), (std::set<std::string>{"b", "c"})) << "d still fits after a";
    EXPECT_EQ(spilledStreams(streams, 150), (std::set<std::string>{})) << "exactly the budget";
    EXPECT_EQ(spilledStreams(streams, 0), (std::set<std::string>{"a", "b", "c", "d"}));
    EXPECT_EQ(totalBytes(streams), 150u);

    JobPlan plan = planFor("unused", kMethods);
    EXPECT_EQ(namesOf(travellingStreams(plan, 128)),
              (std::vector<std::string>{"calibration", "evaluation", "kv_evaluation", "s0.evaluation", "s1.calibration",
                                        "s1.evaluation", "s2.calibration", "s2.evaluation", "s3.evaluation",
                                        "s4.evaluation"}));
    EXPECT_EQ(travellingStreams(plan, 128)[0].bytes, 6u * 48u * 128u * 4u);
    plan.methods = parseMethodList("gptq4", 32);
    EXPECT_EQ(namesOf(travellingStreams(plan, 128)),
              (std::vector<std::string>{"evaluation", "s0.calibration", "s0.evaluation"}))
        << "GPTQ alone calibrates on its own stream";
    plan.methods = parseMethodList("gptaq4", 32);
    EXPECT_EQ(namesOf(travellingStreams(plan, 128)),
              (std::vector<std::string>{"calibration", "evaluation", "s0.calibration", "s0.evaluation"}))
        << "GPTAQ pairs its own stream's inputs with the original's, which travels too";
}

// Every stream spilled (a budget of one byte) against every stream in RAM: the same codes, scales,
// logs and KL tables; while a layer runs, its hidden states are being written into the work folder.
// A budget that fits spills nothing.
TEST(HiddenSpill, EveryStreamSpilledGivesTheInRamResultBitForBit) {
    const fs::path checkpoint = fourLayerCheckpoint("spill_model");
    const JobResult inRam = Job(planFor(checkpoint, kMethods)).run({}, CancelToken{});

    const fs::path work = tempDir("spill_work");
    JobPlan plan = planFor(checkpoint, kMethods);
    plan.workDir = work;
    plan.maxMemory = 1;
    const ResourceEstimate e = Job(plan).estimate();
    EXPECT_EQ(e.spilledStreams, namesOf(travellingStreams(plan, 128)));
    EXPECT_EQ(e.spilledBytes, e.hiddenBytes);
    EXPECT_TRUE(e.limitedByMaxMemory);
    EXPECT_NE(e.describe().find("of hidden states stream from the work folder"), std::string::npos) << e.describe();
    bool streaming = false;
    const auto watch = [&](const Progress& p) {  // layer 3's quantization: its hidden states are in the folder already
        if (p.stage == "quantize" && p.step == 3)
            streaming = streaming || (fs::exists(work / ".tmp-hidden-0002" / "calibration.f32") &&
                                      fs::exists(work / ".tmp-hidden-0002" / "kv_evaluation.f32"));
    };
    const JobResult spilled = Job(plan).run(watch, CancelToken{}, {}, true);
    EXPECT_TRUE(streaming);
    expectSameResult(inRam, spilled);
    WorkFolder::discard(work);

    plan.maxMemory = 0;  // what is available: a few MB of hidden states fit
    const ResourceEstimate fits = Job(plan).estimate();
    EXPECT_TRUE(fits.spilledStreams.empty());
    EXPECT_EQ(fits.spilledBytes, 0u);
    bool spilledAny = false;
    const JobResult resident = Job(plan).run(
        [&](const Progress& p) {
            if (p.stage == "quantize" && p.step == 3)
                spilledAny = spilledAny || fs::exists(work / ".tmp-hidden-0002" / "evaluation.f32");
        },
        CancelToken{});
    EXPECT_FALSE(spilledAny);
    expectSameResult(inRam, resident);
    WorkFolder::discard(work);
    fs::remove_all(checkpoint);
}

// A spilled run killed in its third layer and resumed (spilled again) equals the uninterrupted
// in-RAM run; the hidden-state folder it resumes from is the spill itself.
TEST(HiddenSpill, AKilledSpilledRunResumesToTheSameResult) {
    const fs::path checkpoint = fourLayerCheckpoint("spill_resume_model");
    const JobResult inRam = Job(planFor(checkpoint, kMethods)).run({}, CancelToken{});
    const fs::path work = tempDir("spill_resume_work");
    JobPlan plan = planFor(checkpoint, kMethods);
    plan.workDir = work;
    plan.resultsOnDisk = true;
    plan.maxMemory = 1;
    CancelToken cancel;
    const auto stopInLayer3 = [&cancel](const Progress& p) {
        if (p.stage == "quantize" && p.step == 3) cancel.cancel();  // half of layer 3's streams are written
    };
    EXPECT_THROW((void)Job(plan).run(stopInLayer3, cancel, {}, true), Cancelled);
    ASSERT_TRUE(fs::exists(work / "hidden-0001" / "s1.calibration.f32"));
    ASSERT_TRUE(fs::exists(work / ".tmp-hidden-0002" / "evaluation.f32"))
        << "the kill came while layer 3 was streaming";
    plan.resume = true;
    std::vector<std::string> stages;
    const JobResult resumed = Job(plan).run(
        [&](const Progress& p) { stages.push_back(p.stage + " " + std::to_string(p.step)); }, CancelToken{}, {}, true);
    EXPECT_NE(std::find(stages.begin(), stages.end(), "resume 2"), stages.end());
    expectSameResult(inRam, resumed);
    WorkFolder::discard(work);
    fs::remove_all(checkpoint);
}

// GPTAQ alone: the original's calibration stream travels for it only, and moves past each layer once
// GPTAQ has read the layer's inputs beside its own; spilled, killed in layer 3 and resumed, the run
// equals the in-RAM one bit for bit.
TEST(HiddenSpill, AKilledSpilledGptaqRunResumesToTheSameResult) {
    const fs::path checkpoint = fourLayerCheckpoint("spill_gptaq_model");
    const JobResult inRam = Job(planFor(checkpoint, "gptaq4")).run({}, CancelToken{});
    ASSERT_TRUE(inRam.methods[0].error.empty()) << inRam.methods[0].error;
    const fs::path work = tempDir("spill_gptaq_work");
    JobPlan plan = planFor(checkpoint, "gptaq4");
    plan.workDir = work;
    plan.maxMemory = 1;
    CancelToken cancel;
    const auto stopInLayer3 = [&cancel](const Progress& p) {
        if (p.stage == "quantize" && p.step == 3) cancel.cancel();
    };
    EXPECT_THROW((void)Job(plan).run(stopInLayer3, cancel, {}, true), Cancelled);
    ASSERT_TRUE(fs::exists(work / "hidden-0001" / "calibration.f32"));
    plan.resume = true;
    const JobResult resumed = Job(plan).run({}, CancelToken{}, {}, true);
    expectSameResult(inRam, resumed);
    WorkFolder::discard(work);
    fs::remove_all(checkpoint);
}

TEST(HiddenSpill, TheEstimateCountsOnlyTheStreamsInMemory) {
    const fs::path checkpoint = fourLayerCheckpoint("spill_estimate_model");
    WorkloadShape shape;
    shape.config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(checkpoint));
    shape.methods = 2;
    shape.sequentialMethods = 1;
    shape.calibrationTokens = 128 * 2048;
    shape.evaluationTokens = 32 * 512;
    shape.evaluationSequenceLength = 512;
    const std::uint64_t all = predictedJobBytes(shape);
    const std::uint64_t oneStream = 128ull * 2048 * 128 * sizeof(float);
    shape.spilledHiddenBytes = oneStream;
    EXPECT_EQ(all - predictedJobBytes(shape), oneStream);
    fs::remove_all(checkpoint);
}

TEST(HiddenSpill, WithoutAWorkFolderAPlanBeyondTheBudgetIsRefusedInOneLine) {
    const fs::path checkpoint = fourLayerCheckpoint("spill_refused_model");
    JobPlan plan = planFor(checkpoint, "rtn4");
    // Above what the process holds (a limit below that is refused as such: test_estimate_fixed_part),
    // below what the plan needs.
    const ResourceEstimate free = Job(plan).estimate();
    plan.maxMemory = free.residentAtStartBytes + (free.peakBytes - free.residentAtStartBytes) / 2;
    const ResourceEstimate e = Job(plan).estimate();
    ASSERT_TRUE(e.belowFixedPart().empty()) << e.belowFixedPart();
    EXPECT_EQ(e.spilledBytes, 0u) << "nowhere to spill to";
    try {
        (void)Job(plan).run({}, CancelToken{});
        FAIL() << "a plan beyond --max-memory ran";
    } catch (const Error& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("allowed (--max-memory)"), std::string::npos) << message;
        EXPECT_NE(message.find("--work-dir"), std::string::npos) << message;
        EXPECT_NE(message.find("raise --max-memory"), std::string::npos) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos);
    }
    fs::remove_all(checkpoint);
}

TEST(ByteSize, BinaryAndDecimalUnitsAndRefusals) {
    EXPECT_EQ(parseByteSize("16G"), 16ull << 30);
    EXPECT_EQ(parseByteSize("16g"), 16ull << 30);
    EXPECT_EQ(parseByteSize("16GiB"), 16ull << 30);
    EXPECT_EQ(parseByteSize("64GB"), 64'000'000'000ull);
    EXPECT_EQ(parseByteSize("512M"), 512ull << 20);
    EXPECT_EQ(parseByteSize("1.5K"), 1536u);
    EXPECT_EQ(parseByteSize("2T"), 2ull << 40);
    EXPECT_EQ(parseByteSize("3tb"), 3'000'000'000'000ull);
    EXPECT_EQ(parseByteSize("4096"), 4096u);
    EXPECT_EQ(parseByteSize("100B"), 100u);
    for (const char* bad : {"", "G", "-1G", "16Q", "0", "0.1", "1e9", "1.2.3G", " 5G", "16 G", "99999999999T"}) {
        SCOPED_TRACE(bad);
        try {
            (void)parseByteSize(bad);
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            const std::string message = e.what();
            EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
            EXPECT_EQ(message.find('\n'), std::string::npos);
        }
    }
}
