// Reading llama.cpp's importance matrix (Imatrix::read) and quantizing the GGUF methods with it
// (JobPlan::imatrix, `--imatrix`): the imatrix a calibrated Job writes, read back, gives a Job without
// calibration the very codes of the calibrated one; the legacy .dat format (written here byte by byte as
// llama-imatrix's save_imatrix_legacy lays it out) reads to the same weights; what is not an imatrix,
// or not this model's, is refused in one line; the map the GUI draws holds each linear's mean importance and
// its columns' as the Job's calibration measured them. (tests/interop compares the reading with llama.cpp's own
// loader, common_imatrix_load.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/gguf_imatrix.h"
#include "qs/pipeline/imatrix_map.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/plan_builder.h"

#include "demo_tokens.h"
#include "io_test_util.h"
#include "legacy_imatrix.h"

using namespace qs;
using namespace qs::pipeline;
using qs::io::test::TempDir;
using testing::HasSubstr;

namespace {

namespace fs = std::filesystem;

const fs::path kDemo = fs::path(QS_RESOURCES_DIR) / "demo";

model::ModelConfig demoConfig() { return model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kDemo)); }

JobPlan q4kmPlan(bool calibrated, std::shared_ptr<const Imatrix> imatrix = nullptr) {
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = parseMethodList("q4_k_m", 128);
    if (calibrated) plan.calibration = test::demoTokens("calibration.txt", 8, 128);
    plan.imatrix = std::move(imatrix);
    return plan;
}

// Every linear's ggml blocks, by layer and module.
std::map<std::string, std::vector<std::uint8_t>> codesOf(const MethodResult& r) {
    std::map<std::string, std::vector<std::uint8_t>> out;
    for (std::size_t l = 0; l < r.layers.size(); ++l)
        for (const auto& [module, q] : r.layers[l]) out[std::to_string(l) + "." + module] = q->blocks;
    return out;
}

std::vector<float> meanOf(const quant::InputImportance& importance) {
    std::vector<float> mean(importance.sumSquares.size());
    for (std::size_t i = 0; i < mean.size(); ++i)
        mean[i] = importance.sumSquares[i] / static_cast<float>(importance.count);
    return mean;
}

class ImatrixReader : public testing::Test {
protected:
    // The calibrated Job's result and the imatrix written from it.
    static void SetUpTestSuite() {
        calibrated_ = new JobResult(Job(q4kmPlan(true)).run({}, CancelToken{}));
        dir_ = new TempDir();
        file_ = new fs::path(writeImatrix(calibrated_->methods.front(), demoConfig(), dir_->path() / "demo.imatrix",
                                          {{"calibration.txt"}, 8, 128}));
    }
    static void TearDownTestSuite() {
        delete calibrated_;
        delete file_;
        delete dir_;
    }
    static JobResult* calibrated_;
    static TempDir* dir_;
    static fs::path* file_;
};

JobResult* ImatrixReader::calibrated_ = nullptr;
TempDir* ImatrixReader::dir_ = nullptr;
fs::path* ImatrixReader::file_ = nullptr;

TEST_F(ImatrixReader, TheImatrixOfACalibratedRunGivesAnUncalibratedRunItsVeryCodes) {
    const auto imatrix = std::make_shared<const Imatrix>(Imatrix::read(*file_));
    EXPECT_EQ(imatrix->entries().size(), 14u);  // 7 linears x 2 layers
    EXPECT_EQ(imatrix->info().datasets, std::vector<std::string>{"calibration.txt"});
    EXPECT_EQ(imatrix->info().chunkCount, 8u);
    const JobResult fromFile = Job(q4kmPlan(false, imatrix)).run({}, CancelToken{});
    ASSERT_TRUE(fromFile.methods.front().error.empty()) << fromFile.methods.front().error;
    EXPECT_EQ(codesOf(fromFile.methods.front()), codesOf(calibrated_->methods.front()));
    // The negative control: without calibration or imatrix, other codes.
    const JobResult plain = Job(q4kmPlan(false)).run({}, CancelToken{});
    EXPECT_NE(codesOf(plain.methods.front()), codesOf(calibrated_->methods.front()));
}

TEST_F(ImatrixReader, TheLegacyFormatReadsToTheSameWeights) {
    const Imatrix gguf = Imatrix::read(*file_);
    const fs::path legacy = dir_->path() / "demo.dat";
    qs::test::writeLegacyImatrix(legacy, gguf, 8, "calibration.txt");
    const Imatrix dat = Imatrix::read(legacy);
    EXPECT_EQ(dat.entries().size(), gguf.entries().size());
    EXPECT_EQ(dat.info().datasets, std::vector<std::string>{"calibration.txt"});
    EXPECT_EQ(dat.info().chunkCount, 8u);
    const model::ModelConfig config = demoConfig();
    for (const std::string module : {"self_attn.q_proj", "mlp.down_proj"}) {
        const std::int64_t cols = module == "mlp.down_proj" ? 768 : 256;
        const std::vector<float> a = meanOf(gguf.importanceOf(config, 1, module, cols));
        const std::vector<float> b = meanOf(dat.importanceOf(config, 1, module, cols));
        ASSERT_EQ(a.size(), static_cast<std::size_t>(cols));
        ASSERT_EQ(b.size(), a.size());
        for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-6f * a[i]) << module << " column " << i;
    }
    EXPECT_TRUE(gguf.importanceOf(config, 5, "self_attn.q_proj", 256).sumSquares.empty());  // no such entry
    EXPECT_THAT([&] { (void)gguf.importanceOf(config, 0, "self_attn.q_proj", 64); },
                testing::ThrowsMessage<Error>(HasSubstr("1 x 256 values for a linear of 64 inputs")));
    EXPECT_NE(dat.fingerprint(), gguf.fingerprint());
    EXPECT_EQ(Imatrix::read(*file_).fingerprint(), gguf.fingerprint());
}

TEST_F(ImatrixReader, WhatIsNotAnImatrixOrNotThisModelsIsRefusedInOneLine) {
    const fs::path model = fs::path(QS_TEST_DATA_DIR) / "gguf" / "llama-2-tiny-random.gguf";
    EXPECT_THAT([&] { (void)Imatrix::read(model); }, testing::ThrowsMessage<Error>(HasSubstr("no imatrix entry")));
    const fs::path text = dir_->path() / "notes.txt";
    std::ofstream(text) << "not an imatrix at all";
    EXPECT_THAT([&] { (void)Imatrix::read(text); }, testing::ThrowsMessage<Error>(HasSubstr("neither a GGUF imatrix")));
    // Cut inside its first entry's values.
    const fs::path legacy = dir_->path() / "whole.dat", cut = dir_->path() / "cut.dat";
    qs::test::writeLegacyImatrix(legacy, Imatrix::read(*file_), 8, "calibration.txt");
    fs::copy_file(legacy, cut);
    fs::resize_file(cut, 100);
    EXPECT_THAT([&] { (void)Imatrix::read(cut); }, testing::ThrowsMessage<Error>(HasSubstr("ends inside")));

    PlanSettings settings;
    settings.checkpoint = kDemo;
    settings.imatrix = *file_;
    settings.methods = parseMethodList("gptq4", 128);
    EXPECT_THAT([&] { (void)buildJobPlan(settings); },
                testing::ThrowsMessage<Error>(HasSubstr("weighs the GGUF methods")));
    settings.methods = parseMethodList("q4_k_m", 128);
    EXPECT_NE(buildJobPlan(settings).plan.imatrix, nullptr);
    // Another model's names (a vision tower's "v.blk.N...." here): none of this model's linears.
    const fs::path other = dir_->path() / "other.dat";
    qs::test::writeLegacyImatrix(other, Imatrix::read(*file_), 8, "calibration.txt", "v.");
    settings.imatrix = other;
    EXPECT_THAT([&] { (void)buildJobPlan(settings); },
                testing::ThrowsMessage<Error>(HasSubstr("no entry for this model's linears (blk.0.")));
}

// The GUI's importance map of the file a calibrated Job wrote: one cell per linear, holding the mean over its
// columns of Σx²/count as the Job measured it; one linear's columns exactly as the Job's Σx² / tokens.
TEST_F(ImatrixReader, TheMapHoldsWhatTheCalibrationMeasured) {
    const Imatrix imatrix = Imatrix::read(*file_);
    const ImatrixMap map = imatrixMap(imatrix);
    EXPECT_EQ(map.layers, 2);
    EXPECT_EQ(map.kinds, (std::vector<std::string>{"attn_k", "attn_output", "attn_q", "attn_v", "ffn_down", "ffn_gate",
                                                   "ffn_up"}));
    EXPECT_EQ(map.cells.size(), 14u);
    EXPECT_TRUE(map.otherEntries.empty());
    const model::ModelConfig config = demoConfig();
    const MethodResult& result = calibrated_->methods.front();
    for (std::size_t layer = 0; layer < result.layers.size(); ++layer)
        for (const auto& [module, q] : result.layers[layer]) {
            SCOPED_TRACE(module);
            double mean = 0.0;  // the brute force: each column's Σx² / tokens, averaged
            for (const float s : q->inputSumSquares) mean += double(s) / double(q->inputCount);
            mean /= double(q->inputSumSquares.size());
            const std::string entry = imatrixPlaceOf(config, int(layer), module).names.front();
            const auto cell = std::find_if(map.cells.begin(), map.cells.end(),
                                           [&](const ImatrixCell& c) { return c.entry == entry; });
            ASSERT_NE(cell, map.cells.end()) << entry;
            EXPECT_EQ(cell->layer, int(layer));
            EXPECT_EQ(map.cellAt(cell->layer, cell->kind), &*cell);
            EXPECT_NEAR(cell->meanImportance, mean, 1e-12 * mean);
            const std::vector<float> columns = columnImportance(imatrix, config, int(layer), module);
            ASSERT_EQ(columns.size(), q->inputSumSquares.size());
            for (std::size_t c = 0; c < columns.size(); ++c)
                EXPECT_EQ(columns[c], q->inputSumSquares[c] / float(q->inputCount)) << "column " << c;
        }
    EXPECT_TRUE(columnImportance(imatrix, config, 7, "self_attn.q_proj").empty());  // no such layer
}

TEST_F(ImatrixReader, CoverageCountsTheModelsLinearsItHasAnEntryFor) {
    const Imatrix imatrix = Imatrix::read(*file_);
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    const ImatrixCoverage own = imatrixCoverage(imatrix, demo, demoConfig());
    EXPECT_EQ(own.linears, 14u);
    EXPECT_EQ(own.covered, 14u);
    // Another model (a Llama of other shapes) under llama.cpp's same names: 7 linears a layer, of which the demo's
    // first 2 layers have entries.
    const io::Checkpoint llama = io::Checkpoint::open(fs::path(QS_TEST_DATA_DIR) / "gguf" / "llama-2-tiny-random.gguf");
    const model::ModelConfig llamaConfig = model::ModelConfig::fromCheckpoint(llama);
    const ImatrixCoverage other = imatrixCoverage(imatrix, llama, llamaConfig);
    EXPECT_EQ(other.linears, 7u * std::size_t(llamaConfig.numLayers));
    EXPECT_EQ(other.covered, 7u * std::size_t(std::min(llamaConfig.numLayers, 2)));
    EXPECT_EQ(other.firstWanted, "blk.0.ffn_down.weight");  // the first by Hugging Face name: mlp.down_proj
}

}  // namespace
