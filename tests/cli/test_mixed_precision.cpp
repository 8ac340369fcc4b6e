// quantize / compare with a bits-per-weight budget and per-module rules on the bundled demo: the
// allocation reaches the export and the report, the export reads back with the methods the report
// names, and every refusal is one line that writes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/io/gguf_names.h"

#include "cli_process.h"

namespace {

using qs::test::runCli;

const std::string kDemo = std::string(QS_RESOURCES_DIR) + "/demo";
const std::vector<std::string> kSmall = {"--samples", "4", "--seq-len", "64"};

std::filesystem::path freshPath(const std::string& name) {
    auto p = std::filesystem::temp_directory_path() / ("qs_cli_mixed_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(p);
    return p;
}

nlohmann::json readJson(const std::filesystem::path& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

std::size_t lineCount(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(MixedCli, QuantizeAtABudgetExportsTheAllocationAndReportsIt) {
    const auto out = freshPath("budget");
    const auto r = runCli(with({"quantize", kDemo, "--target-bpw", "5", "--candidates", "gptq4-sym,gptq8-sym",
                                "--eval-samples", "4", "--out", out.string()},
                               kSmall));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("ct-mixed"), std::string::npos) << r.out;
    const auto mixed = readJson(out / "quantscope_report.json")["settings"]["mixed_precision"];
    EXPECT_EQ(mixed["target_bpw"], 5.0);
    EXPECT_EQ(mixed["sensitivity"], "group-kl");  // the default
    EXPECT_TRUE(mixed["predicted_kl"].is_number());
    EXPECT_GT(mixed["measured_kl"].get<double>(), 0.0);
    EXPECT_LE(mixed["bits_per_weight"].get<double>(), 5.0);
    const auto& methods = mixed["allocation"]["methods"];
    ASSERT_EQ(methods.size(), 14u);
    const auto checkpoint = qs::io::Checkpoint::open(out);
    const qs::formats::LinearReader reader(checkpoint);
    int eight = 0;
    for (const auto& [name, method] : methods.items()) {
        const int bits = reader.decode(name).parts.bits;
        EXPECT_EQ(bits, method == "gptq8-sym" ? 8 : 4) << name;
        eight += bits == 8;
    }
    EXPECT_GT(eight, 0);  // 5 bits buy some 8-bit groups
    EXPECT_LT(eight, 14);
    std::filesystem::remove_all(out);
}

TEST(MixedCli, RulesWithoutABudgetExportGptqWithDynamic) {
    const auto out = freshPath("rules");
    const auto r = runCli(with(
        {"quantize", kDemo, "--method", "gptq4-sym", "--override", "layers\\.1\\.mlp\\.down_proj=gptq8-sym", "--ignore",
         "layers\\.0\\.self_attn\\.o_proj", "--format", "gptq", "--eval-samples", "4", "--out", out.string()},
        kSmall));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto config = readJson(out / "config.json")["quantization_config"];
    EXPECT_EQ(config["bits"], 4);
    EXPECT_EQ(config["dynamic"]["+:^model\\.layers\\.1\\.mlp\\.down_proj$"]["bits"], 8) << config.dump();
    EXPECT_TRUE(config["dynamic"].contains("-:^model\\.layers\\.0\\.self_attn\\.o_proj$")) << config.dump();
    const auto checkpoint = qs::io::Checkpoint::open(out);
    const qs::formats::LinearReader reader(checkpoint);
    EXPECT_EQ(reader.decode("model.layers.1.mlp.down_proj").parts.bits, 8);
    EXPECT_EQ(reader.decode("model.layers.0.mlp.down_proj").parts.bits, 4);
    EXPECT_FALSE(reader.decode("model.layers.0.self_attn.o_proj").quantized);
    std::filesystem::remove_all(out);
}

TEST(MixedCli, CompareAtABudgetPrintsTheFrontierAndWritesIt) {
    const auto json = freshPath("frontier.json");
    const auto r = runCli(with({"compare", kDemo, "--methods", "rtn4,rtn8", "--target-bpw", "6", "--eval-samples", "4",
                                "--json", json.string()},
                               kSmall));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("frontier (group-kl"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("<- --target-bpw 6"), std::string::npos) << r.out;
    const auto mixed = readJson(json)["mixed_precision"];
    ASSERT_GE(mixed["frontier"].size(), 3u);
    EXPECT_EQ(mixed["candidates"].size(), 2u);
    double previous = 1e9;
    for (const auto& point : mixed["frontier"]) {  // the frontier's predicted KL falls as the bits grow
        EXPECT_LE(point["predicted_kl"].get<double>(), previous);
        previous = point["predicted_kl"].get<double>();
    }
    EXPECT_LE(mixed["at_budget"]["bits_per_weight"].get<double>(), 6.0);
    // The allocation at the budget is quantized: the bits the table predicted are those the linears
    // store, and swapping rtn4 groups for rtn8 lands its KL between the two uniform methods'.
    EXPECT_NE(r.out.find("the allocation at --target-bpw 6, quantized"), std::string::npos) << r.out;
    const auto& at = mixed["at_budget"];
    EXPECT_NEAR(at["measured_bits_per_weight"].get<double>(), at["bits_per_weight"].get<double>(), 1e-9);
    EXPECT_LT(at["measured_kl"].get<double>(), mixed["candidates"][0]["measured_kl"].get<double>());
    EXPECT_GT(at["measured_kl"].get<double>(), mixed["candidates"][1]["measured_kl"].get<double>());
    std::filesystem::remove_all(json);
}

TEST(MixedCli, RefusalsAreOneLineAndWriteNothing) {
    const auto out = freshPath("refused");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--target-bpw", "3", "--candidates", "gptq4-sym,gptq8-sym"}, "below the cheapest allocation"},
        {{"--target-bpw", "5", "--candidates", "gptq4,gptq9"}, "gptq9"},
        {{"--target-bpw", "5", "--candidates", "gptq4,gptq8", "--ignore", "lm_head"},
         "--ignore 'lm_head' matches no quantized linear"},
        {{"--target-bpw", "5", "--candidates", "gptq4,gptq8", "--override", "k_proj=gptq8"},
         "vLLM runs them as one fused linear"},
        {{"--method", "gptq4", "--ignore", "nothing_like_this"}, "matches no quantized linear"},
        {{"--target-bpw", "5", "--candidates", "gptq3,gptq4"}, "cannot export gptq3 as ct-mixed"},
        {{"--target-bpw", "5", "--candidates", "awq4,gptq4", "--format", "gptq_v2"}, "cannot be mixed per linear"},
        {{"--target-bpw", "5", "--candidates", "gptq4,gptq8", "--sym"}, "name them in --candidates"},
    };
    for (const auto& [args, expected] : cases) {
        const auto r = runCli(with(with({"quantize", kDemo, "--out", out.string()}, args), kSmall));
        EXPECT_EQ(r.exitCode, 2) << expected;
        EXPECT_EQ(lineCount(r.err), 1u) << r.err;  // before any work: no progress line either
        EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
        EXPECT_FALSE(std::filesystem::exists(out)) << expected;
    }
}

// ggml types as candidates: one GGUF whose tensors carry the allocated types, the allocation in its
// quantscope.report; --override and --ignore reach the file (q8_0, F16).
TEST(MixedCli, QuantizeGgmlTypesAtABudgetWritesOneGgufWithTheAllocatedTypes) {
    const std::filesystem::path out = freshPath("budget").string() + ".gguf";
    const auto r = runCli(with({"quantize", kDemo, "--target-bpw", "4.5", "--candidates", "q3_K,q4_K,q5_K,q6_K",
                                "--format", "gguf", "--override", "layers\\.0\\.mlp\\.down_proj=q8_0", "--ignore",
                                "layers\\.1\\.self_attn\\.o_proj", "--eval-samples", "4", "--out", out.string()},
                               kSmall));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("(gguf, mixed 4.50 bpw"), std::string::npos) << r.out;
    const auto file = qs::io::GgufFile::open(out);
    const std::string* text = file.metadata().string("quantscope.report");
    ASSERT_NE(text, nullptr);
    const auto report = nlohmann::json::parse(*text);
    EXPECT_EQ(report["format"], "gguf");
    const auto mixed = report["settings"]["mixed_precision"];
    EXPECT_EQ(mixed["target_bpw"], 4.5);
    EXPECT_LE(mixed["bits_per_weight"].get<double>(), 4.5);
    EXPECT_GT(mixed["measured_kl"].get<double>(), 0.0);
    const auto& methods = mixed["allocation"]["methods"];
    ASSERT_EQ(methods.size(), 13u);  // 14 linears, o_proj of layer 1 kept dense
    std::set<std::string> types;
    for (const auto& [name, method] : methods.items()) {
        const auto gguf = qs::io::ggufNameOfHfTensor(name + ".weight");
        ASSERT_TRUE(gguf.has_value()) << name;
        const auto* tensor = file.find(*gguf);
        ASSERT_NE(tensor, nullptr) << *gguf;
        EXPECT_EQ(std::string(qs::io::ggmlTypeTraits(*tensor->ggmlType).name), method.get<std::string>()) << name;
        types.insert(method.get<std::string>());
    }
    EXPECT_EQ(methods["model.layers.0.mlp.down_proj"], "q8_0");
    EXPECT_GE(types.size(), 3u) << mixed.dump();  // q8_0 and at least two of the candidates
    EXPECT_EQ(*file.find("blk.1.attn_output.weight")->ggmlType, qs::io::GgmlType::F16);
    EXPECT_EQ(*file.find("token_embd.weight")->ggmlType, qs::io::GgmlType::F16);
    EXPECT_EQ(*file.find("blk.0.attn_norm.weight")->ggmlType, qs::io::GgmlType::F32);
    std::filesystem::remove_all(out);
}

TEST(MixedCli, CompareAtABudgetWithGgmlTypesPrintsTheFrontier) {
    const auto json = freshPath("gguf_frontier.json");
    const auto r = runCli(with({"compare", kDemo, "--methods", "q4_K,q6_K", "--target-bpw", "5.5", "--eval-samples",
                                "4", "--json", json.string()},
                               kSmall));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("frontier (group-kl"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("<- --target-bpw 5.5"), std::string::npos) << r.out;
    const auto mixed = readJson(json)["mixed_precision"];
    ASSERT_GE(mixed["frontier"].size(), 3u);
    // ggml's own bits per weight: q4_K 144 bytes per 256, q6_K 210 per 256.
    EXPECT_DOUBLE_EQ(mixed["frontier"].front()["bits_per_weight"].get<double>(), 4.5);
    EXPECT_DOUBLE_EQ(mixed["frontier"].back()["bits_per_weight"].get<double>(), 6.5625);
    const auto& at = mixed["at_budget"];
    EXPECT_LE(at["measured_bits_per_weight"].get<double>(), 5.5);
    EXPECT_LT(at["measured_kl"].get<double>(), mixed["candidates"][0]["measured_kl"].get<double>());
    EXPECT_GT(at["measured_kl"].get<double>(), mixed["candidates"][1]["measured_kl"].get<double>());
    std::filesystem::remove_all(json);
}

TEST(MixedCli, MixesAFormatCannotHoldAreRefusedNamingTheMethod) {
    const std::filesystem::path gguf = freshPath("refused").string() + ".gguf", folder = freshPath("refused_folder");
    const std::vector<std::tuple<std::filesystem::path, std::vector<std::string>, std::string>> cases = {
        {gguf, {"--target-bpw", "5", "--candidates", "gptq4,q4_K"}, "gptq4 cannot be written into a GGUF file"},
        {gguf,
         {"--target-bpw", "7", "--candidates", "q4_K,q8_0", "--override", "down_proj=gptq8"},
         "gptq8 cannot be written into a GGUF"},
        {folder,
         {"--target-bpw", "5", "--candidates", "q4_K,q8_0"},
         "q4_K is a ggml type, which only a GGUF file holds"},
        {folder,
         {"--target-bpw", "7", "--candidates", "gptq4,gptq8", "--override", "down_proj=q8_0"},
         "q8_0 is a ggml type"},
        {gguf, {"--target-bpw", "5", "--candidates", "q4_k_m,q8_0"}, "(q4_k_m) chooses for a whole layer"},
        {folder, {"--target-bpw", "5", "--candidates", "q4_K,q8_0", "--format", "gguf"}, "must end in .gguf"},
    };
    for (const auto& [out, args, expected] : cases) {
        const auto r = runCli(with(with({"quantize", kDemo, "--out", out.string()}, args), kSmall));
        EXPECT_EQ(r.exitCode, 2) << expected;
        EXPECT_EQ(lineCount(r.err), 1u) << r.err;
        EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
        EXPECT_FALSE(std::filesystem::exists(out)) << expected;
    }
}
