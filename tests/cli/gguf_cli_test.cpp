// quantscope-cli on GGUF files: inspect (text and JSON: container, ggml types with bits per weight,
// metadata), --tensors / --stats on decoded values, dequantize to safetensors (HF names, config.json,
// tokenizer.json) and to GGUF, eval against the original, and broken files refused with one line
// naming the file (exit code 2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "gguf_test_bytes.h"
#include "io_test_util.h"
#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using qs::io::test::GgufBytes;
using qs::io::test::TempDir;
using qs::io::test::writeBytes;
using qs::test::runCli;
using testing::HasSubstr;

const fs::path kTinyLlama = fs::path(QS_TEST_DATA_DIR) / "gguf" / "llama-2-tiny-random.gguf";
const fs::path kDemo = fs::path(QS_RESOURCES_DIR) / "demo";

void expectOneLineError(const qs::test::CliResult& r, const std::string& file, const std::string& what) {
    EXPECT_EQ(r.exitCode, 2) << what;
    EXPECT_EQ(r.out, "") << what;
    EXPECT_EQ(r.err.rfind("quantscope-cli: error: ", 0), 0u) << r.err;
    EXPECT_THAT(r.err, HasSubstr(file)) << what;
    EXPECT_THAT(r.err, HasSubstr(what));
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
}

}  // namespace

TEST(CliGguf, InspectSummarisesContainerTypesAndMetadata) {
    const auto r = runCli({"inspect", kTinyLlama.string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("Architecture   LlamaForCausalLM (llama)"));
    EXPECT_THAT(r.out, HasSubstr("Layers         1"));
    EXPECT_THAT(r.out, HasSubstr("Format         GGUF v3 (llama.cpp), file type F16, alignment 32"));
    EXPECT_THAT(r.out, HasSubstr("Tensor types   2 types"));
    EXPECT_THAT(r.out, HasSubstr("Metadata       18 keys"));
    EXPECT_THAT(r.out, HasSubstr("general.architecture"));
    EXPECT_THAT(r.out, HasSubstr("[string x 32000]"));
    EXPECT_THAT(r.out, testing::ContainsRegex("f16 +9 +"));
    EXPECT_THAT(r.out, HasSubstr("Quantization   dense"));

    const auto j = runCli({"inspect", kTinyLlama.string(), "--json"});
    ASSERT_EQ(j.exitCode, 0) << j.err;
    const json report = json::parse(j.out);
    EXPECT_EQ(report["gguf"]["version"], 3);
    EXPECT_EQ(report["gguf"]["file_type"], "F16");
    EXPECT_EQ(report["gguf"]["tensor_types"]["f16"]["tensors"], 9);
    EXPECT_EQ(report["gguf"]["tensor_types"]["f16"]["bits_per_weight"], 16.0);
    EXPECT_EQ(report["gguf"]["tensor_types"]["f32"]["tensors"], 3);
    EXPECT_EQ(report["gguf"]["metadata"]["llama.block_count"], 1);
    EXPECT_EQ(report["gguf"]["metadata"]["general.architecture"], "llama");
    EXPECT_EQ(report["gguf"]["metadata"]["tokenizer.ggml.tokens"]["length"], 32000);
    EXPECT_EQ(report["dtypes"]["f16"]["bytes"].get<std::uint64_t>() + report["dtypes"]["f32"]["bytes"].get<std::uint64_t>(),
              1750560u - 724416u);
}

TEST(CliGguf, TensorsAndStatsAreTheDecodedHuggingFaceTensors) {
    const auto r = runCli({"inspect", kTinyLlama.string(), "--stats", "--json", "--filter", "q_proj"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json report = json::parse(r.out);
    ASSERT_EQ(report["tensors"].size(), 1u);
    const json& t = report["tensors"][0];
    EXPECT_EQ(t["name"], "model.layers.0.self_attn.q_proj.weight");
    EXPECT_EQ(t["dtype"], "f16");
    EXPECT_EQ(t["shape"], json::array({8, 8}));
    const std::vector<float> values = qs::io::Checkpoint::open(kTinyLlama).tensor("model.layers.0.self_attn.q_proj.weight").toF32();
    double sum = 0.0;
    float lo = values[0], hi = values[0];
    for (const float v : values) sum += v, lo = std::min(lo, v), hi = std::max(hi, v);
    EXPECT_EQ(t["stats"]["count"], 64);
    EXPECT_FLOAT_EQ(t["stats"]["min"].get<float>(), lo);
    EXPECT_FLOAT_EQ(t["stats"]["max"].get<float>(), hi);
    EXPECT_NEAR(t["stats"]["mean"].get<double>(), sum / 64.0, 1e-9);
}

TEST(CliGguf, DequantizeToSafetensorsGivesAHuggingFaceCheckpoint) {
    TempDir dir;
    const auto r = runCli({"dequantize", kTinyLlama.string(), "--out", (dir / "hf").string(), "--dtype", "f32"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto source = qs::io::Checkpoint::open(kTinyLlama);
    const auto hf = qs::io::Checkpoint::open(dir / "hf");
    ASSERT_EQ(hf.gguf(), nullptr);
    EXPECT_EQ(hf.tensors().size(), 12u);
    for (const auto& t : source.tensors()) EXPECT_EQ(hf.tensor(t.info->name).toF32(), source.tensor(t.info->name).toF32()) << t.info->name;
    EXPECT_EQ(hf.tensor("model.embed_tokens.weight").dtype(), qs::io::DType::F16);   // kept in its own float type
    EXPECT_EQ(hf.config()["architectures"][0], "LlamaForCausalLM");
    EXPECT_EQ(hf.config()["num_key_value_heads"], 2);
    EXPECT_TRUE(fs::exists(dir / "hf" / "tokenizer_config.json"));
    const std::string text = "Hello world, this is QuantScope reading llama.cpp's files.";
    EXPECT_EQ(qs::model::Tokenizer::fromFile(dir / "hf").encode(text), qs::model::Tokenizer::forCheckpoint(source).encode(text));
}

TEST(CliGguf, DequantizeToGgufThenEvalAgainstTheOriginal) {
    TempDir dir;
    const fs::path gguf = dir / "demo-q8.gguf";
    const auto d = runCli({"dequantize", kDemo.string(), "--out", gguf.string(), "--dtype", "q8_0"});
    ASSERT_EQ(d.exitCode, 0) << d.err;
    EXPECT_THAT(d.out, HasSubstr("wrote " + gguf.string()));
    const auto i = runCli({"inspect", gguf.string()});
    ASSERT_EQ(i.exitCode, 0) << i.err;
    EXPECT_THAT(i.out, HasSubstr("file type Q8_0"));
    EXPECT_THAT(i.out, HasSubstr("Quantization   gguf"));
    EXPECT_THAT(i.out, HasSubstr("14 linears: 14 gguf q8_0"));
    const auto e = runCli({"eval", kDemo.string(), gguf.string(), "--samples", "2", "--seq-len", "64"});
    ASSERT_EQ(e.exitCode, 0) << e.err;
    EXPECT_THAT(e.out, HasSubstr("(gguf (Q8_0))"));
    EXPECT_THAT(e.out, HasSubstr("Mean    KLD"));
    // A safetensors destination does not take a ggml type.
    const auto bad = runCli({"dequantize", kDemo.string(), "--out", (dir / "x").string(), "--dtype", "q8_0"});
    expectOneLineError(bad, "--dtype q8_0", "a safetensors destination takes bf16, f16 or f32");
}

TEST(CliGguf, BrokenFilesAreOneLineNamingTheFile) {
    TempDir dir;
    const auto valid = [] {
        GgufBytes b;
        b.header(1, 1).kvString("general.architecture", "llama").tensor("token_embd.weight", {4, 2}, 0, 0).padTo(32);
        return b.fill(32, 0);
    };
    std::vector<std::pair<std::string, std::vector<std::byte>>> cases;
    {
        auto bytes = valid().bytes();
        bytes.resize(bytes.size() - 8);
        cases.push_back({"runs past the end of the file", bytes});
    }
    cases.push_back({"not a multiple of the alignment 32",
                     GgufBytes().header(1, 0).tensor("t", {4}, 0, 16).padTo(32).fill(64).bytes()});
    cases.push_back({"has unknown ggml type 77", GgufBytes().header(1, 0).tensor("t", {4}, 77, 0).padTo(32).fill(32).bytes()});
    cases.push_back({"the tensor count is 72057594037927936", GgufBytes().header(1ull << 56, 0).bytes()});
    cases.push_back({"claims 4294967296 bytes", GgufBytes().header(0, 1).str("k").u32(8).u64(1ull << 32).bytes()});
    cases.push_back({"overlaps tensor", GgufBytes().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).padTo(32).fill(64).bytes()});
    for (const auto& [what, bytes] : cases) {
        const fs::path file = dir / "broken.gguf";
        writeBytes(file, bytes);
        expectOneLineError(runCli({"inspect", file.string()}), file.string(), what);
        expectOneLineError(runCli({"dequantize", file.string(), "--out", (dir / "out").string()}), file.string(), what);
        EXPECT_FALSE(fs::exists(dir / "out")) << what;
    }
}
