// `compare` on the bundled demo: the table, the JSON report and the per-module log agree, and bad
// method names are one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_process.h"

namespace {

using qs::test::runCli;

const std::string kDemo = std::string(QS_RESOURCES_DIR) + "/demo";

std::string tempPath(const std::string& name) {
    return (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))).string();
}

TEST(Compare, PrintsTableJsonAndModuleLog) {
    const std::string json = tempPath("qs_compare_json_");
    const std::string log = tempPath("qs_compare_log_");
    const auto r = runCli({"compare", kDemo, "--methods", "rtn4,fp8", "--group-size", "64", "--samples", "4",
                           "--seq-len", "64", "--eval-samples", "4", "--json", json, "--log", log});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("RTN int4, g64"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("FP8 E4M3, 128x128 blocks"), std::string::npos);
    EXPECT_NE(r.out.find("mean KLD"), std::string::npos);

    std::ifstream in(json);
    const nlohmann::json report = nlohmann::json::parse(in);
    ASSERT_EQ(report["methods"].size(), 2u);
    EXPECT_EQ(report["calibration_tokens"], 4 * 64);
    const auto& rtn = report["methods"][0];
    EXPECT_EQ(rtn["method"], "rtn4");
    EXPECT_EQ(rtn["kl"]["positions"], 4 * 63);
    EXPECT_GT(rtn["kl"]["mean_kld"]["value"].get<double>(),
              report["methods"][1]["kl"]["mean_kld"]["value"].get<double>());
    EXPECT_EQ(rtn["modules"].size(), 14u);  // 2 layers x 7 linears

    std::ifstream logIn(log);
    std::string line;
    int lines = 0;
    while (std::getline(logIn, line)) {
        const auto entry = nlohmann::json::parse(line);
        EXPECT_TRUE(entry.contains("output_error"));
        EXPECT_EQ(entry["in_features"].get<int>() > 0, true);
        ++lines;
    }
    EXPECT_EQ(lines, 28);  // both methods
    std::filesystem::remove(json);
    std::filesystem::remove(log);
}

TEST(Compare, UnknownMethodIsAOneLineError) {
    const auto r = runCli({"compare", kDemo, "--methods", "rtn4,int3"});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_TRUE(r.out.empty());
    EXPECT_EQ(r.err.rfind("quantscope-cli: error: unknown method 'int3'", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

// --max-memory below what the hidden states need, with a work folder: they stream from there, and the
// KL tables are the in-memory run's to the last bit.
TEST(Compare, HiddenStatesBeyondMaxMemoryStreamFromTheWorkFolder) {
    const std::string inRam = tempPath("qs_compare_ram_"), spilled = tempPath("qs_compare_spilled_"),
                      work = tempPath("qs_compare_work_");
    const std::vector<std::string> args{"compare",   kDemo, "--methods",      "gptq4,rtn4", "--samples",  "4",
                                        "--seq-len", "64",  "--eval-samples", "2",          "--per-layer"};
    auto ram = args, spill = args;
    ram.insert(ram.end(), {"--json", inRam});
    spill.insert(spill.end(), {"--json", spilled, "--work-dir", work, "--max-memory", "1K", "--force"});
    ASSERT_EQ(runCli(ram).exitCode, 0);
    const auto r = runCli(spill);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("compare: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" of hidden states (of "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("stream from " + work), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(work)) << "the work folder goes with the run";
    const auto read = [](const std::string& path) {
        std::ifstream in(path);
        return nlohmann::json::parse(in);
    };
    const nlohmann::json a = read(inRam), b = read(spilled);
    ASSERT_EQ(a.at("methods").size(), 2u);
    for (std::size_t m = 0; m < 2; ++m) {
        EXPECT_EQ(a["methods"][m].at("kl"), b["methods"][m].at("kl"));
        EXPECT_EQ(a["methods"][m].at("per_layer_mean_kld"), b["methods"][m].at("per_layer_mean_kld"));
    }
    std::filesystem::remove(inRam);
    std::filesystem::remove(spilled);
}

TEST(Compare, ABadMaxMemoryIsAOneLineError) {
    for (const std::string bad : {"16Q", "2.5.1G", "0"}) {
        SCOPED_TRACE(bad);
        const auto r = runCli({"compare", kDemo, "--methods", "rtn4", "--samples", "2", "--seq-len", "16",
                               "--eval-samples", "1", "--max-memory", bad});
        EXPECT_EQ(r.exitCode, 2);
        EXPECT_TRUE(r.out.empty());
        EXPECT_EQ(r.err.rfind("quantscope-cli: error: --max-memory: not a size: '" + bad + "'", 0), 0u) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
    }
}

}  // namespace
