// `eval ORIGINAL QUANTIZED`: the demo against itself scores exactly zero, and a pair of different
// models is a one-line error with exit code 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "synthetic_checkpoint.h"

namespace {

using qs::test::runCli;

const std::string kDemo = std::string(QS_RESOURCES_DIR) + "/demo";

std::string tempPath(const std::string& name) {
    return (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))).string();
}

TEST(Eval, DemoAgainstItselfIsExactlyZero) {
    const std::string json = tempPath("qs_eval_json_");
    const auto r = runCli({"eval", kDemo, kDemo, "--samples", "2", "--seq-len", "128", "--json", json});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("====== KL divergence statistics ======"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Mean    KLD:   0.000000 ±   0.000000"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Mean PPL(Q)/PPL(base)         :   1.000000"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Same top p: 100.000"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(dense)"), std::string::npos) << r.out;

    std::ifstream in(json);
    const nlohmann::json report = nlohmann::json::parse(in);
    EXPECT_EQ(report["kl"]["positions"], 2 * 127);
    EXPECT_EQ(report["evaluation_tokens"], 2 * 128);
    EXPECT_EQ(report["kl"]["mean_kld"]["value"].get<double>(), 0.0);
    EXPECT_EQ(report["kl"]["kld"]["max"].get<double>(), 0.0);
    EXPECT_EQ(report["kl"]["ppl_ratio"]["value"].get<double>(), 1.0);
    EXPECT_GT(report["kl"]["ppl_base"]["value"].get<double>(), 1.0);
    EXPECT_EQ(report["quantized_format"], "dense");
    std::filesystem::remove(json);
}

TEST(Eval, DifferentModelsAreAOneLineError) {
    const std::filesystem::path other = tempPath("qs_eval_other_");
    qs::test::writeSyntheticCheckpoint(other, {});  // 64 wide, 96 tokens: not the demo's shape
    const auto r = runCli({"eval", kDemo, other.string(), "--samples", "2", "--seq-len", "64"});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(r.err.rfind("quantscope-cli: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("hidden_size 256 vs 64"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("vocab_size 320 vs 96"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
    std::filesystem::remove_all(other);
}

TEST(Eval, MissingCheckpointIsAnError) {
    const auto r = runCli({"eval", kDemo, "/nonexistent/quantized"});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_NE(r.err.find("/nonexistent/quantized"), std::string::npos) << r.err;
}

}  // namespace
