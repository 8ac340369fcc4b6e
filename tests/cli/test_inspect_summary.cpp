// `inspect` on the bundled stories260K checkpoint: the summary, its JSON form and the tensor list
// agree with what the safetensors header says, read here independently of qs::io.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_process.h"

namespace {

using qs::test::runCli;

const std::string kModelDir = std::string(QS_RESOURCES_DIR) + "/models/stories260K";

struct HeaderTensor {
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t bytes = 0;
};

// name -> tensor, straight from the JSON header of model.safetensors.
std::map<std::string, HeaderTensor> readHeader() {
    std::ifstream in(kModelDir + "/model.safetensors", std::ios::binary);
    unsigned char lengthBytes[8] = {};
    in.read(reinterpret_cast<char*>(lengthBytes), 8);
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | lengthBytes[i];
    std::string text(length, '\0');
    in.read(text.data(), static_cast<std::streamsize>(length));
    std::map<std::string, HeaderTensor> tensors;
    const nlohmann::json header = nlohmann::json::parse(text);  // must outlive the loop over items()
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") continue;
        const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
        tensors[name] = {entry.at("dtype"), entry.at("shape").get<std::vector<std::int64_t>>(),
                         offsets[1] - offsets[0]};
    }
    return tensors;
}

std::int64_t parameterCount(const std::map<std::string, HeaderTensor>& tensors) {
    std::int64_t total = 0;
    for (const auto& [name, t] : tensors) {
        std::int64_t numel = 1;
        for (std::int64_t d : t.shape) numel *= d;
        total += numel;
    }
    return total;
}

bool hasLine(const std::string& text, const std::string& pattern) {
    return std::regex_search(text, std::regex("(^|\n)" + pattern + "(\n|$)"));
}

TEST(InspectSummary, PrintsArchitectureLayersHiddenSizeAndParameters) {
    const auto header = readHeader();
    const std::int64_t parameters = parameterCount(header);
    ASSERT_EQ(parameters, 260032);  // the model's name says ~260K; guards the independent count itself

    const auto result = runCli({"inspect", kModelDir});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    EXPECT_EQ(result.err, "");
    EXPECT_TRUE(hasLine(result.out, R"(Architecture +LlamaForCausalLM \(llama\))")) << result.out;
    EXPECT_TRUE(hasLine(result.out, "Layers +5")) << result.out;
    EXPECT_TRUE(hasLine(result.out, "Hidden size +64")) << result.out;
    EXPECT_TRUE(hasLine(result.out, R"(Parameters +260\.0K \(260,032\))")) << result.out;
    EXPECT_TRUE(hasLine(result.out, "Tensors +47 in 1 shard")) << result.out;
    EXPECT_TRUE(hasLine(result.out, "Quantization +dense")) << result.out;
    EXPECT_TRUE(hasLine(result.out, R"(Dtypes +F32 +\S+ KiB +100\.0 %)")) << result.out;
    EXPECT_EQ(result.out.find("model.layers.0"), std::string::npos) << "no tensor table without --tensors";
}

TEST(InspectSummary, JsonHoldsTheSameNumbers) {
    const auto header = readHeader();
    std::uint64_t dataBytes = 0;
    for (const auto& [name, t] : header) dataBytes += t.bytes;

    const auto result = runCli({"inspect", kModelDir, "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    const auto j = nlohmann::json::parse(result.out);
    EXPECT_EQ(j.at("architecture"), "LlamaForCausalLM");
    EXPECT_EQ(j.at("model_type"), "llama");
    EXPECT_EQ(j.at("num_layers"), 5);
    EXPECT_EQ(j.at("hidden_size"), 64);
    EXPECT_EQ(j.at("parameters"), parameterCount(header));
    EXPECT_EQ(j.at("parameters_human"), "260.0K");
    EXPECT_EQ(j.at("tensor_count"), header.size());
    EXPECT_EQ(j.at("shards"), 1);
    EXPECT_EQ(j.at("quantization_format"), "dense");
    EXPECT_EQ(j.at("dtypes").size(), 1u);
    EXPECT_EQ(j.at("dtypes").at("F32").at("bytes"), dataBytes);
    EXPECT_EQ(j.at("size_on_disk"), std::filesystem::file_size(kModelDir + "/model.safetensors"));
    EXPECT_FALSE(j.contains("tensors"));
}

TEST(InspectSummary, TensorsListsEveryTensorWithDtypeShapeAndBytes) {
    const auto header = readHeader();
    const auto result = runCli({"inspect", kModelDir, "--tensors"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    for (const auto& [name, t] : header) {
        std::string shape = "[";
        for (std::size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
        shape += "]";
        const std::string row = std::regex_replace(name, std::regex(R"(\.)"), R"(\.)") + " +" + t.dtype + " +" +
                                std::regex_replace(shape, std::regex(R"([\[\]])"), R"(\$&)") + " +[0-9,]+";
        EXPECT_TRUE(hasLine(result.out, row)) << "no row for " << name;
    }
}

TEST(InspectSummary, TensorsJsonMatchesTheHeader) {
    const auto header = readHeader();
    const auto result = runCli({"inspect", kModelDir, "--tensors", "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    const auto tensors = nlohmann::json::parse(result.out).at("tensors");
    ASSERT_EQ(tensors.size(), header.size());
    for (const auto& t : tensors) {
        const auto it = header.find(t.at("name"));
        ASSERT_NE(it, header.end()) << t.at("name");
        EXPECT_EQ(t.at("dtype"), it->second.dtype);
        EXPECT_EQ(t.at("shape").get<std::vector<std::int64_t>>(), it->second.shape);
        EXPECT_EQ(t.at("bytes"), it->second.bytes);
        EXPECT_FALSE(t.contains("stats"));
    }
}

TEST(InspectSummary, FilterKeepsOnlyMatchingTensors) {
    const auto result = runCli({"inspect", kModelDir, "--json", "--filter", R"(layers\.3\..*_proj)"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    const auto j = nlohmann::json::parse(result.out);
    std::vector<std::string> names;
    for (const auto& t : j.at("tensors")) names.push_back(t.at("name"));
    const std::vector<std::string> expected{
        "model.layers.3.mlp.down_proj.weight",    "model.layers.3.mlp.gate_proj.weight",
        "model.layers.3.mlp.up_proj.weight",      "model.layers.3.self_attn.k_proj.weight",
        "model.layers.3.self_attn.o_proj.weight", "model.layers.3.self_attn.q_proj.weight",
        "model.layers.3.self_attn.v_proj.weight"};
    EXPECT_EQ(names, expected);
    EXPECT_EQ(j.at("tensor_count"), 47) << "the summary still describes the whole checkpoint";

    const auto text = runCli({"inspect", kModelDir, "--filter", "norm"});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_TRUE(hasLine(text.out, "11 of 47 tensors match 'norm'")) << text.out;
}

TEST(InspectSummary, SafetensorsFileCanBeGivenDirectly) {
    const auto result = runCli({"inspect", kModelDir + "/model.safetensors", "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err;
    EXPECT_EQ(nlohmann::json::parse(result.out).at("parameters"), 260032);
}

TEST(Cli, VersionPrintsProjectVersion) {
    const auto result = runCli({"--version"});
    EXPECT_EQ(result.exitCode, 0);
    EXPECT_EQ(result.out, std::string("quantscope-cli ") + QS_VERSION + "\n");
}

TEST(Cli, HelpExitsZeroAndParseErrorsExitTwo) {
    EXPECT_EQ(runCli({"--help"}).exitCode, 0);
    EXPECT_EQ(runCli({"inspect", "--help"}).exitCode, 0);
    EXPECT_EQ(runCli({}).exitCode, 2) << "a command is required";
    EXPECT_EQ(runCli({"inspect"}).exitCode, 2) << "PATH is required";
    EXPECT_EQ(runCli({"inspect", kModelDir, "--no-such-option"}).exitCode, 2);
    EXPECT_EQ(runCli({"inspect", kModelDir, "--threads", "-3"}).exitCode, 2);
}

}  // namespace
