// `logits PATH --ids ...`: the JSON holds every position's logits as the references computed them
// outside QuantScope (the demo's float64 forward pass of its training script; llama2.c's stories260K),
// the table names each position's top next id, and bad ids are one-line errors with exit code 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/safetensors_file.h"
#include "qs/matrix.h"

#include "cli_process.h"

namespace {

using qs::test::runCli;

const std::string kDemo = std::string(QS_RESOURCES_DIR) + "/demo";
const std::string kStories = std::string(QS_RESOURCES_DIR) + "/models/stories260K";
const std::filesystem::path kData = QS_TEST_DATA_DIR;

std::string tempPath(const std::string& name) {
    return (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))).string();
}

std::string joinIds(const std::vector<int>& ids) {
    std::string text;
    for (int id : ids) text += (text.empty() ? "" : ",") + std::to_string(id);
    return text;
}

nlohmann::json readJson(const std::filesystem::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

// The table's rows (after the header's rule), each split at its blanks: position, id, top next id, its logit.
std::vector<std::vector<std::string>> tableRows(const std::string& out) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream lines(out);
    bool body = false;
    for (std::string line; std::getline(lines, line);) {
        if (!body) {
            body = line.rfind("--", 0) == 0;
            continue;
        }
        std::istringstream cells(line);
        std::vector<std::string> row;
        for (std::string cell; cells >> cell;) row.push_back(cell);
        if (!row.empty()) rows.push_back(row);
    }
    return rows;
}

// The same tolerance as tests/model's comparison of the forward pass with these references: absolute,
// on logits that span about ±20, so that what the JSON carries is checked to be the model's logits.
constexpr double kLogitTolerance = 1e-4;

TEST(Logits, DemoJsonMatchesTheFloat64ReferenceAtEveryPosition) {
    const qs::io::SafetensorsFile ref = qs::io::SafetensorsFile::open(kData / "demo/reference_logits.safetensors");
    const qs::MatrixF refLogits = ref.tensor("logits").toMatrix();
    const std::vector<int> ids = readJson(kData / "demo/reference.json").at("token_ids").get<std::vector<int>>();
    ASSERT_EQ(static_cast<Eigen::Index>(ids.size()), refLogits.rows());

    const std::string json = tempPath("qs_logits_demo_");
    const auto r = runCli({"logits", kDemo, "--ids", joinIds(ids), "--json", json, "--device", "cpu"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("device: CPU"), std::string::npos) << r.err;
    const nlohmann::json report = readJson(json);
    std::filesystem::remove(json);
    EXPECT_EQ(report.at("token_ids").get<std::vector<int>>(), ids);
    EXPECT_EQ(report.at("positions"), ids.size());
    EXPECT_EQ(report.at("vocab_size"), 320);
    EXPECT_EQ(report.at("model_type"), "qwen3");
    EXPECT_EQ(report.at("format"), "dense");
    const auto& rows = report.at("logits");
    ASSERT_EQ(rows.size(), ids.size());
    double maxDiff = 0.0;
    for (std::size_t t = 0; t < rows.size(); ++t) {
        const std::vector<double> row = rows[t].get<std::vector<double>>();
        ASSERT_EQ(row.size(), 320u) << "position " << t;
        for (std::size_t v = 0; v < row.size(); ++v)
            maxDiff = std::max(maxDiff, std::abs(row[v] - refLogits(static_cast<Eigen::Index>(t), v)));
    }
    std::printf("logits JSON of the demo: max |ours - reference| = %.3g over %zu x 320\n", maxDiff, rows.size());
    EXPECT_LT(maxDiff, kLogitTolerance);
    EXPECT_GT(refLogits.cwiseAbs().maxCoeff(), 5.0f);  // a trained model's logits, not a flat row

    // The table: one row per position with the reference's top next id (its argmax list).
    const std::vector<int> argmax = readJson(kData / "demo/reference.json").at("argmax").get<std::vector<int>>();
    EXPECT_NE(r.out.find("at 128 positions, vocabulary 320, on CPU"), std::string::npos) << r.out;
    const auto table = tableRows(r.out);
    ASSERT_EQ(table.size(), ids.size()) << r.out;
    for (std::size_t t = 0; t < ids.size(); ++t) {
        ASSERT_EQ(table[t].size(), 4u) << r.out;
        EXPECT_EQ(table[t][0], std::to_string(t));
        EXPECT_EQ(table[t][1], std::to_string(ids[t]));
        EXPECT_EQ(table[t][2], std::to_string(argmax[t])) << "position " << t;
    }
}

TEST(Logits, Stories260KMatchesLlama2cOnItsFirstFourPositions) {
    const nlohmann::json ref = readJson(kData / "stories260K/reference_greedy.json");
    const std::vector<int> greedy = ref.at("greedy_ids").get<std::vector<int>>();
    const std::vector<int> ids{1, greedy[0], greedy[1], greedy[2]};
    const std::string json = tempPath("qs_logits_stories_");
    const auto r = runCli({"logits", kStories, "--ids", joinIds(ids), "--json", json, "--device", "cpu"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const nlohmann::json report = readJson(json);
    std::filesystem::remove(json);
    EXPECT_EQ(report.at("model_type"), "llama");
    ASSERT_EQ(report.at("logits").size(), 4u);
    double maxDiff = 0.0;
    for (std::size_t t = 0; t < 4; ++t) {
        const std::vector<double> ours = report.at("logits")[t].get<std::vector<double>>();
        const std::vector<double> theirs = ref.at("logits_first4")[t].get<std::vector<double>>();
        ASSERT_EQ(ours.size(), 512u);
        ASSERT_EQ(theirs.size(), 512u);
        for (std::size_t v = 0; v < 512; ++v) maxDiff = std::max(maxDiff, std::abs(ours[v] - theirs[v]));
    }
    EXPECT_LT(maxDiff, kLogitTolerance);
    // Greedy decoding took the top id at each position: the table says so.
    const auto table = tableRows(r.out);
    ASSERT_EQ(table.size(), 4u) << r.out;
    for (std::size_t t = 0; t < 4; ++t) EXPECT_EQ(table[t][2], std::to_string(greedy[t])) << "position " << t;
}

TEST(Logits, AnIdOutsideTheVocabularyIsAOneLineError) {
    const auto r = runCli({"logits", kDemo, "--ids", "1,320,2", "--device", "cpu"});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(r.err.rfind("quantscope-cli: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("token id 320 is outside the vocabulary of 320"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(Logits, MorePositionsThanTheModelHasAreRefused) {
    const std::vector<int> ids(1025, 7);  // the demo's max_position_embeddings is 1024
    const auto r = runCli({"logits", kDemo, "--ids", joinIds(ids), "--device", "cpu"});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_NE(r.err.find("1025 positions exceed max_position_embeddings 1024"), std::string::npos) << r.err;
}

TEST(Logits, NegativeOrMissingIdsAreRefusedBeforeAnyWork) {
    const auto negative = runCli({"logits", kDemo, "--ids", "1,-2"});
    EXPECT_EQ(negative.exitCode, 2);
    EXPECT_TRUE(negative.out.empty()) << negative.out;
    const auto missing = runCli({"logits", kDemo});
    EXPECT_EQ(missing.exitCode, 2);
    EXPECT_NE(missing.err.find("--ids"), std::string::npos) << missing.err;
}

}  // namespace
