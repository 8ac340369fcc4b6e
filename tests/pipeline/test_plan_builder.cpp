// Which text a run reads (resolveRunText: the named file, else the checkpoint's own, else the bundled
// one) and the Job plan buildJobPlan makes of a user's choices, on the bundled demo and on a copy of
// it without its texts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/plan_builder.h"
#include "qs/pipeline/run_text.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

std::filesystem::path freshDir(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / ("qs_plan_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

// The demo's model and tokenizer without its calibration.txt / eval.txt.
std::filesystem::path bareDemo() {
    auto dir = freshDir("bare");
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
        std::filesystem::copy_file(kDemo / f, dir / f);
    return dir;
}

void writeFile(const std::filesystem::path& path, const std::string& content) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
}

// QS_RESOURCES_DIR for one scope: bundledResource() searches it first.
class ResourcesDir {
public:
    explicit ResourcesDir(const std::filesystem::path& dir) { ::setenv("QS_RESOURCES_DIR", dir.c_str(), 1); }
    ~ResourcesDir() { ::unsetenv("QS_RESOURCES_DIR"); }
};

TokenSequences windowsOf(const std::filesystem::path& file, int samples, int length) {
    return tokenWindows(model::Tokenizer::fromFile(kDemo), loadTexts(file), samples, length, file.string());
}

}  // namespace

TEST(RunText, TheNamedFileComesFirstThenTheCheckpointsOwn) {
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    EXPECT_EQ(resolveRunText(TextRole::Calibration, "/somewhere/mine.txt", demo), "/somewhere/mine.txt");
    EXPECT_EQ(resolveRunText(TextRole::Calibration, {}, demo), kDemo / "calibration.txt");
    EXPECT_EQ(resolveRunText(TextRole::Evaluation, {}, demo), kDemo / "eval.txt");
}

TEST(RunText, ACheckpointWithoutTextsFallsBackToTheBundledOnes) {
    const io::Checkpoint bare = io::Checkpoint::open(bareDemo());
    const auto resources = freshDir("resources");
    writeFile(resources / "demo" / "eval.txt", "held-out text");
    const ResourcesDir scope(resources);
    // $QS_RESOURCES_DIR first; without a calibration.txt there, the source tree's resources/.
    EXPECT_EQ(resolveRunText(TextRole::Evaluation, {}, bare), resources / "demo" / "eval.txt");
    EXPECT_EQ(resolveRunText(TextRole::Calibration, {}, bare), kDemo / "calibration.txt");
}

TEST(PlanBuilder, TokenizesTheResolvedTextsAndCarriesTheSettings) {
    const auto dir = freshDir("texts");
    writeFile(dir / "eval.json", R"(["The first of two texts, long enough for a window or two.", " And the second."])");
    PlanSettings s;
    s.checkpoint = kDemo;
    s.methods = parseMethodList("rtn4,gptq4-act");
    s.calibration = {{}, 3, 64};
    s.evaluation = {dir / "eval.json", 2, 24};
    s.perLayerKl = true;
    s.trueSequential = false;
    s.seed = 7;
    const BuiltPlan built = buildJobPlan(s);
    EXPECT_EQ(built.calibrationFile, kDemo / "calibration.txt");
    EXPECT_EQ(built.evaluationFile, dir / "eval.json");
    const JobPlan& plan = built.plan;
    EXPECT_EQ(plan.checkpoint, kDemo);
    ASSERT_EQ(plan.methods.size(), 2u);
    EXPECT_EQ(plan.methods[1].name, "gptq4-act");
    ASSERT_EQ(plan.calibration.size(), 3u);
    EXPECT_EQ(plan.calibration, windowsOf(kDemo / "calibration.txt", 3, 64));
    ASSERT_EQ(plan.evaluation.size(), 2u);
    EXPECT_EQ(plan.evaluation.front().size(), 24u);
    EXPECT_EQ(plan.evaluation, windowsOf(dir / "eval.json", 2, 24));
    EXPECT_NE(plan.evaluation, windowsOf(kDemo / "eval.txt", 2, 24));
    EXPECT_TRUE(plan.perLayerKl);
    EXPECT_FALSE(plan.trueSequential);
    EXPECT_EQ(plan.seed, 7u);
    EXPECT_EQ(plan.backend, nullptr);
}

TEST(PlanBuilder, ATextWithoutSamplesIsNotRead) {
    PlanSettings s;
    s.checkpoint = kDemo;
    s.methods = {parseMethod("fp8")};
    s.calibration = {"/no/such/calibration.txt", 0, 64};
    s.evaluation = {{}, 0, 64};
    const BuiltPlan built = buildJobPlan(s);
    EXPECT_TRUE(built.plan.calibration.empty());
    EXPECT_TRUE(built.plan.evaluation.empty());
    EXPECT_TRUE(built.calibrationFile.empty());
    EXPECT_TRUE(built.evaluationFile.empty());
}

TEST(PlanBuilder, RefusesNoMethodsAndATooShortTextByName) {
    PlanSettings s;
    s.checkpoint = kDemo;
    s.calibration = {{}, 2, 64};
    EXPECT_THROW(buildJobPlan(s), Error);
    const auto dir = freshDir("short");
    writeFile(dir / "short.txt", "too short");
    s.methods = {parseMethod("rtn4")};
    s.calibration = {dir / "short.txt", 2, 64};
    try {
        buildJobPlan(s);
        FAIL() << "a text of 9 bytes made a window of 64 tokens";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("short.txt"), std::string::npos) << e.what();
    }
}
