// `inspect --hessian LAYER` on the bundled demo Qwen3: its JSON carries, per linear, exactly the
// diagonal pipeline::hessianDiagonals gives for the same calibration windows (that function is
// checked against the full Hessian's diagonal in tests/pipeline), the act-order by descending H_cc,
// and the settings it ran with; the text report lists every linear; bad layers are one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/hessian_diagonals.h"

#include "cli_process.h"

namespace {

using qs::test::runCli;

const std::string kDemo = std::string(QS_RESOURCES_DIR) + "/demo";

qs::pipeline::LayerHessianDiagonals expected(int layer, int samples, int seqLen) {
    const auto checkpoint = qs::io::Checkpoint::open(kDemo);
    const auto tokenizer = qs::model::Tokenizer::fromFile(kDemo);
    const auto text = qs::pipeline::tokenWindows(tokenizer, qs::pipeline::loadTexts(kDemo + "/calibration.txt"),
                                                 samples, seqLen, "calibration.txt");
    return qs::pipeline::hessianDiagonals(checkpoint, layer, text, *qs::pipeline::makeCpuBackend(), {},
                                          qs::CancelToken{});
}

TEST(InspectHessian, JsonHasEveryChannelOfEveryLinearOfTheLayer) {
    const auto result =
        runCli({"inspect", kDemo, "--hessian", "1", "--samples", "4", "--seq-len", "64", "--json", "--device", "cpu"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    EXPECT_NE(result.err.find("device: CPU"), std::string::npos) << result.err;
    const auto json = nlohmann::json::parse(result.out);
    EXPECT_EQ(json["layer"], 1);
    EXPECT_EQ(json["samples"], 4 * 64);
    EXPECT_EQ(json["calibration"]["samples"], 4);
    EXPECT_EQ(json["calibration"]["seq_len"], 64);
    EXPECT_NE(json["calibration"]["file"].get<std::string>().find("calibration.txt"), std::string::npos);
    const auto reference = expected(1, 4, 64);
    ASSERT_EQ(json["modules"].size(), 7u);
    for (const auto& [module, d] : reference.modules) {
        const auto& got = json["modules"][module];
        EXPECT_EQ(got["diagonal"].get<std::vector<double>>(), d.diagonal) << module;
        const auto order = got["act_order"].get<std::vector<int>>();
        ASSERT_EQ(order.size(), d.diagonal.size()) << module;
        for (std::size_t r = 1; r < order.size(); ++r)
            EXPECT_GE(d.diagonal[static_cast<std::size_t>(order[r - 1])],
                      d.diagonal[static_cast<std::size_t>(order[r])]);
    }
    EXPECT_EQ(json["modules"]["mlp.down_proj"]["diagonal"].size(), 768u);
}

TEST(InspectHessian, TextListsEachLinearWithItsRangeAndFirstChannels) {
    const auto result = runCli({"inspect", kDemo, "--hessian", "0", "--samples", "2", "--seq-len", "32"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    EXPECT_EQ(result.out.rfind("layer 0 of " + kDemo + ": diag(H) = 2 Σ x² / n over 64 calibration tokens", 0), 0u)
        << result.out;
    const auto reference = expected(0, 2, 32);
    for (const auto& [module, d] : reference.modules) {
        const auto first =
            static_cast<int>(std::max_element(d.diagonal.begin(), d.diagonal.end()) - d.diagonal.begin());
        const std::string width = std::to_string(d.diagonal.size());
        const auto line = result.out.find("\n" + module + " ");
        ASSERT_NE(line, std::string::npos) << module << "\n" << result.out;
        const std::string row = result.out.substr(line + 1, result.out.find('\n', line + 1) - line - 1);
        EXPECT_NE(row.find(" " + width + " "), std::string::npos) << row;
        // The act-order column starts with the channel of the largest H_cc.
        const auto header = result.out.find("act-order first");
        ASSERT_NE(header, std::string::npos);
        const std::size_t column = header - result.out.rfind('\n', header) - 1;
        EXPECT_EQ(row.substr(column, row.find(' ', column) - column), std::to_string(first)) << row;
    }
}

// A mixture of experts (the tiny Mixtral, 4 experts, top 2): a row per expert linear with its routed
// tokens, in the text and in the JSON, which pipeline::hessianDiagonals checks against the Job's Hessians.
TEST(InspectHessian, AMixtureOfExpertsListsEachExpertWithItsRoutedTokens) {
    const std::string mixtral = std::string(QS_TEST_DATA_DIR) + "/moe/mixtral-tiny";
    const auto json = runCli(
        {"inspect", mixtral, "--hessian", "1", "--samples", "3", "--seq-len", "32", "--json", "--device", "cpu"});
    ASSERT_EQ(json.exitCode, 0) << json.err;
    const auto modules = nlohmann::json::parse(json.out)["modules"];
    ASSERT_EQ(modules.size(), 4u + 4u * 3u) << modules.dump();
    std::int64_t routed = 0;
    for (int e = 0; e < 4; ++e) {
        const auto& down = modules["block_sparse_moe.experts." + std::to_string(e) + ".w2"];
        ASSERT_TRUE(down.contains("routed_tokens")) << e;
        EXPECT_EQ(down["routed_tokens"],
                  modules["block_sparse_moe.experts." + std::to_string(e) + ".w1"]["routed_tokens"]);
        routed += down["routed_tokens"].get<std::int64_t>();
    }
    EXPECT_EQ(routed, 3 * 32 * 2);
    EXPECT_FALSE(modules["self_attn.q_proj"].contains("routed_tokens"));

    const auto text =
        runCli({"inspect", mixtral, "--hessian", "1", "--samples", "3", "--seq-len", "32", "--device", "cpu"});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("  routed  act-order first"), std::string::npos) << text.out;
    const auto row = text.out.find("\nblock_sparse_moe.experts.2.w3 ");
    ASSERT_NE(row, std::string::npos) << text.out;
    const std::string count = " " + modules["block_sparse_moe.experts.2.w3"]["routed_tokens"].dump() + " ";
    EXPECT_NE(text.out.substr(row, text.out.find('\n', row + 1) - row).find(count), std::string::npos) << text.out;
}

TEST(InspectHessian, ALayerThatIsNotThereIsAOneLineError) {
    const auto result = runCli({"inspect", kDemo, "--hessian", "5", "--samples", "2", "--seq-len", "32"});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err.rfind("quantscope-cli: error: ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find("layer 5 is not a decoder layer (it has 2, 0 to 1)"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << "not one line: " << result.err;
}

TEST(InspectHessian, CalibrationOptionsNeedHessian) {
    const auto result = runCli({"inspect", kDemo, "--samples", "2"});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_EQ(result.out, "");
    EXPECT_NE(result.err.find("--hessian"), std::string::npos) << result.err;
}

}  // namespace
