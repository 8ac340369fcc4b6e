// `inspect` and `dequantize` on an EXL3 checkpoint written byte by byte here (a 3-bit q_proj with a
// bias, a 6-bit lm_head, a BF16 embedding): the format and each linear's bits are named, and the
// dense export holds exactly what the EXL3 reader decodes (tests/formats checks that decode against
// a brute-force reference).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"

#include "cli_process.h"
#include "safetensors_builder.h"

namespace {

using namespace qs::test;

const std::string kQ = "model.layers.0.self_attn.q_proj";

std::vector<std::uint16_t> randomU16(std::mt19937& rng, std::size_t count, std::uint16_t orMask = 0,
                                     std::uint16_t andMask = 0xFFFF) {
    std::vector<std::uint16_t> v(count);
    for (auto& x : v) x = static_cast<std::uint16_t>((rng() & andMask) | orMask);
    return v;
}

// K in, N out, `bits` per weight; suh/svh are f16 in +-[1, 2) (exponent 15, random sign and mantissa).
void addExl3Linear(std::vector<RawTensor>& tensors, std::mt19937& rng, const std::string& p, int k, int n, int bits) {
    tensors.push_back({p + ".trellis",
                       "I16",
                       {k / 16, n / 16, 16 * bits},
                       u16Bytes(randomU16(rng, std::size_t(k / 16 * n / 16 * 16 * bits)))});
    tensors.push_back({p + ".suh", "F16", {k}, u16Bytes(randomU16(rng, std::size_t(k), 0x3C00, 0x83FF))});
    tensors.push_back({p + ".svh", "F16", {n}, u16Bytes(randomU16(rng, std::size_t(n), 0x3C00, 0x83FF))});
}

void writeExl3Checkpoint(const std::filesystem::path& dir) {
    std::mt19937 rng(2024);
    std::vector<RawTensor> tensors;
    tensors.push_back(
        {"model.embed_tokens.weight", "BF16", {8, 128}, u16Bytes(std::vector<std::uint16_t>(8 * 128, 0x3F80))});
    addExl3Linear(tensors, rng, kQ, 128, 128, 3);
    tensors.push_back({kQ + ".bias", "F16", {128}, u16Bytes(std::vector<std::uint16_t>(128, 0x3800))});  // 0.5
    addExl3Linear(tensors, rng, "lm_head", 128, 256, 6);
    tensors.push_back({"lm_head.mcg", "I32", {}, {std::byte(0xED), std::byte(0x1F), std::byte(0xAC), std::byte(0xCB)}});
    writeFile(dir / "model.safetensors", safetensorsImage(tensors));
    const nlohmann::json config = {
        {"architectures", {"LlamaForCausalLM"}},
        {"model_type", "llama"},
        {"quantization_config", {{"quant_method", "exl3"}, {"version", "0.0.5"}, {"bits", 3.0}, {"head_bits", 6}}}};
    std::ofstream(dir / "config.json") << config.dump();
}

TEST(Exl3Cli, InspectNamesTheFormatAndEachLinearsBits) {
    TempDir dir;
    writeExl3Checkpoint(dir.path());
    const auto text = runCli({"inspect", dir.path().string(), "--layers"});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("exl3"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("2 linears: 1 exl3 3-bit, 1 exl3 6-bit"), std::string::npos) << text.out;

    const auto json = runCli({"inspect", dir.path().string(), "--json"});
    ASSERT_EQ(json.exitCode, 0) << json.err;
    const auto report = nlohmann::json::parse(json.out);
    EXPECT_EQ(report["quantization_format"], "exl3");
    ASSERT_EQ(report["quantized_linears"].size(), 2u);
    EXPECT_EQ(report["quantized_linears"][0]["linear"], "lm_head");
    EXPECT_EQ(report["quantized_linears"][0]["bits"], 6);
    EXPECT_EQ(report["quantized_linears"][0]["rows"], 256);
    EXPECT_EQ(report["quantized_linears"][1]["linear"], kQ);
    EXPECT_EQ(report["quantized_linears"][1]["bits"], 3);
    EXPECT_EQ(report["quantized_linears"][1]["codec"], "exl3");
}

TEST(Exl3Cli, DequantizeWritesTheDecodedWeights) {
    TempDir dir;
    const auto source = dir.path() / "exl3";
    const auto dense = dir.path() / "dense";
    std::filesystem::create_directories(source);
    writeExl3Checkpoint(source);
    const auto r = runCli({"dequantize", source.string(), "--out", dense.string(), "--dtype", "f32"});
    ASSERT_EQ(r.exitCode, 0) << r.err;

    const auto q = qs::io::Checkpoint::open(source);
    const auto d = qs::io::Checkpoint::open(dense);
    const qs::formats::LinearReader qReader(q), dReader(d);
    EXPECT_EQ(qReader.format().format, qs::formats::Format::Exl3);
    EXPECT_EQ(dReader.format().format, qs::formats::Format::Dense);
    for (const std::string& prefix : {kQ, std::string("lm_head")}) {
        const auto want = qReader.decodeF32(prefix);
        const auto got = d.tensor(prefix + ".weight").toMatrix();
        ASSERT_EQ(got.rows(), want.rows()) << prefix;
        ASSERT_EQ(got.cols(), want.cols()) << prefix;
        EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * static_cast<std::size_t>(want.size())), 0)
            << prefix;
        EXPECT_GT(want.norm(), 0.0f) << prefix;
        for (const char* part : {".trellis", ".suh", ".svh", ".mcg"})
            EXPECT_EQ(d.find(prefix + part), nullptr) << prefix << part;
    }
    EXPECT_EQ(d.tensor(kQ + ".bias").toF32(), std::vector<float>(128, 0.5f));
    std::ifstream in(dense / "config.json");
    EXPECT_FALSE(nlohmann::json::parse(in).contains("quantization_config"));
}

}  // namespace
