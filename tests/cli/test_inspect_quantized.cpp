// `inspect` on a GPTQ checkpoint written byte by byte here: it names the format and, per quantized
// linear, the bits, group size, act-order and symmetry.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "safetensors_builder.h"

namespace {

using namespace qs::test;

std::vector<std::byte> i32Bytes(const std::vector<std::int32_t>& values) {
    std::vector<std::byte> out(values.size() * 4);
    for (std::size_t i = 0; i < values.size(); ++i)
        for (int b = 0; b < 4; ++b)
            out[i * 4 + std::size_t(b)] = std::byte((std::uint32_t(values[i]) >> (8 * b)) & 0xFF);
    return out;
}

// One GPTQ 4-bit linear, K = N = 64, group 32, act-order (a g_idx that is not k / 32).
void writeGptqCheckpoint(const std::filesystem::path& dir) {
    const int k = 64, n = 64, groups = 2;
    std::vector<std::int32_t> gIdx(k);
    for (int i = 0; i < k; ++i) gIdx[std::size_t(i)] = (i % 2 == 0) ? 0 : 1;
    const std::string p = "model.layers.0.self_attn.q_proj.";
    const std::vector<RawTensor> tensors = {
        {p + "qweight", "I32", {k / 8, n}, i32Bytes(std::vector<std::int32_t>(std::size_t(k / 8 * n), 0x12345678))},
        {p + "qzeros",
         "I32",
         {groups, n / 8},
         i32Bytes(std::vector<std::int32_t>(std::size_t(groups * n / 8), 0x77777777))},
        {p + "scales", "F16", {groups, n}, u16Bytes(std::vector<std::uint16_t>(std::size_t(groups * n), 0x3C00))},
        {p + "g_idx", "I32", {k}, i32Bytes(gIdx)},
    };
    writeFile(dir / "model.safetensors", safetensorsImage(tensors));
    const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                   {"model_type", "llama"},
                                   {"quantization_config",
                                    {{"quant_method", "gptq"},
                                     {"bits", 4},
                                     {"group_size", 32},
                                     {"desc_act", true},
                                     {"sym", true},
                                     {"checkpoint_format", "gptq"}}}};
    std::ofstream(dir / "config.json") << config.dump();
}

TEST(InspectQuantized, NamesTheFormatAndEachLinearsScheme) {
    TempDir dir;
    writeGptqCheckpoint(dir.path());
    const auto text = runCli({"inspect", dir.path().string(), "--layers"});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("gptq"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("1 linear: 1 int4 g32"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("model.layers.0.self_attn.q_proj"), std::string::npos) << text.out;

    const auto json = runCli({"inspect", dir.path().string(), "--json"});
    ASSERT_EQ(json.exitCode, 0) << json.err;
    const auto report = nlohmann::json::parse(json.out);
    ASSERT_EQ(report["quantized_linears"].size(), 1u);
    const auto& linear = report["quantized_linears"][0];
    EXPECT_EQ(linear["linear"], "model.layers.0.self_attn.q_proj");
    EXPECT_EQ(linear["bits"], 4);
    EXPECT_EQ(linear["group_size"], 32);
    EXPECT_EQ(linear["act_order"], true);
    EXPECT_EQ(linear["sym"], true);
    EXPECT_EQ(linear["rows"], 64);
    EXPECT_EQ(linear["cols"], 64);
    // The model has the 64 x 64 weights the layer stands for; the file stores 8 x 64 packed int32,
    // 2 x 8 zeros, 2 x 64 scales and 64 g_idx entries.
    EXPECT_EQ(report["parameters"], 64 * 64);
    EXPECT_EQ(report["stored_elements"], 8 * 64 + 2 * 8 + 2 * 64 + 64);
    EXPECT_NE(text.out.find("Parameters     4.1K (4,096), 720 stored elements"), std::string::npos) << text.out;
}

TEST(InspectQuantized, DenseCheckpointHasNoQuantizedLinears) {
    const auto json = runCli({"inspect", std::string(QS_RESOURCES_DIR) + "/models/stories260K", "--json"});
    ASSERT_EQ(json.exitCode, 0) << json.err;
    EXPECT_TRUE(nlohmann::json::parse(json.out)["quantized_linears"].empty());
}

}  // namespace
