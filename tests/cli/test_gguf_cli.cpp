// quantscope-cli on GGUF files: inspect (text and JSON: container, ggml types with bits per weight,
// metadata), --tensors / --stats on decoded values, dequantize to safetensors (HF names, config.json,
// tokenizer.json) and to GGUF, eval against the original, quantize with llama-quantize's file types
// (--method q4_k_m, --imatrix-out), and broken files refused with one line naming the file (exit code 2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"

#include "cli_process.h"
#include "gguf_test_bytes.h"
#include "io_test_util.h"

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
    // One bits per weight, as quantize and the app give it: the decoder's linears (here all F16); the
    // F32 norms only count in the figure over every tensor.
    EXPECT_THAT(r.out, HasSubstr("Tensor types   2 types; 16.00 bits per weight of the decoder's linears, 1"));
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
    EXPECT_EQ(report["gguf"]["bits_per_weight"], 16.0);
    EXPECT_GT(report["gguf"]["bits_per_weight_all_tensors"].get<double>(), 16.0);
    EXPECT_EQ(report["gguf"]["tensor_types"]["f32"]["tensors"], 3);
    EXPECT_EQ(report["gguf"]["metadata"]["llama.block_count"], 1);
    EXPECT_EQ(report["gguf"]["metadata"]["general.architecture"], "llama");
    EXPECT_EQ(report["gguf"]["metadata"]["tokenizer.ggml.tokens"]["length"], 32000);
    EXPECT_EQ(
        report["dtypes"]["f16"]["bytes"].get<std::uint64_t>() + report["dtypes"]["f32"]["bytes"].get<std::uint64_t>(),
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
    const std::vector<float> values =
        qs::io::Checkpoint::open(kTinyLlama).tensor("model.layers.0.self_attn.q_proj.weight").toF32();
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
    for (const auto& t : source.tensors())
        EXPECT_EQ(hf.tensor(t.info->name).toF32(), source.tensor(t.info->name).toF32()) << t.info->name;
    EXPECT_EQ(hf.tensor("model.embed_tokens.weight").dtype(), qs::io::DType::F16);  // kept in its own float type
    EXPECT_EQ(hf.config()["architectures"][0], "LlamaForCausalLM");
    EXPECT_EQ(hf.config()["num_key_value_heads"], 2);
    EXPECT_TRUE(fs::exists(dir / "hf" / "tokenizer_config.json"));
    const std::string text = "Hello world, this is QuantScope reading llama.cpp's files.";
    EXPECT_EQ(qs::model::Tokenizer::fromFile(dir / "hf").encode(text),
              qs::model::Tokenizer::forCheckpoint(source).encode(text));
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

namespace {

// Σx² per input column of layer 0's attention input over `windows`, computed here from the
// checkpoint's own tensors: RMSNorm(embedding) * input_layernorm, as the model's first linears see it.
std::vector<double> layer0AttentionInputSquares(const qs::io::Checkpoint& demo,
                                                const qs::pipeline::TokenSequences& windows) {
    const std::vector<float> embedding = demo.tensor("model.embed_tokens.weight").toF32();
    const std::vector<float> norm = demo.tensor("model.layers.0.input_layernorm.weight").toF32();
    const double eps = demo.config()["rms_norm_eps"].get<double>();
    const std::size_t hidden = norm.size();
    std::vector<double> sums(hidden, 0.0);
    for (const auto& window : windows)
        for (const qs::model::TokenId token : window) {
            const float* x = embedding.data() + static_cast<std::size_t>(token) * hidden;
            double meanSquare = 0.0;
            for (std::size_t c = 0; c < hidden; ++c) meanSquare += double(x[c]) * double(x[c]);
            const double scale = 1.0 / std::sqrt(meanSquare / double(hidden) + eps);
            for (std::size_t c = 0; c < hidden; ++c) {
                const double v = double(x[c]) * scale * double(norm[c]);
                sums[c] += v * v;
            }
        }
    return sums;
}

}  // namespace

// quantize --method q4_k_m: one GGUF file in llama.cpp's mix, holding the bytes compare measured (its
// eval gives compare's KL), and the calibration as llama.cpp's imatrix.
TEST(CliGguf, QuantizeToQ4KMWritesWhatCompareMeasuredAndTheImatrix) {
    TempDir dir;
    const fs::path gguf = dir / "demo-Q4_K_M.gguf", imatrix = dir / "demo.imatrix.gguf";
    const fs::path compareJson = dir / "compare.json", evalJson = dir / "eval.json";
    const auto c = runCli({"compare", kDemo.string(), "--methods", "q4_k_m", "--samples", "8", "--seq-len", "128",
                           "--eval-samples", "4", "--json", compareJson.string()});
    ASSERT_EQ(c.exitCode, 0) << c.err;
    EXPECT_THAT(c.out, HasSubstr("GGUF Q4_K_M"));
    // What the row measured, and how quantize writes that file: weighed by the calibration, with --calib.
    EXPECT_THAT(c.out, HasSubstr("GGUF methods: weighed by the calibration's sum of x^2 per input column"));
    const auto q =
        runCli({"quantize", kDemo.string(), "--method", "q4_k_m", "--calib", (kDemo / "calibration.txt").string(),
                "--samples", "8", "--seq-len", "128", "--imatrix-out", imatrix.string(), "--out", gguf.string()});
    ASSERT_EQ(q.exitCode, 0) << q.err;
    EXPECT_THAT(q.out, HasSubstr("wrote " + gguf.string() + " and " + imatrix.string()));

    // llama.cpp's Q4_K_M on two layers: use_more_bits(1, 2) only, so layer 1's attn_v and ffn_down
    // are Q6_K, and the tied token_embd (the output) Q6_K.
    const qs::io::GgufFile file = qs::io::GgufFile::open(gguf);
    EXPECT_EQ(file.metadata().integer("general.file_type"), 15);
    using T = qs::io::GgmlType;
    EXPECT_EQ(*file.find("blk.0.attn_v.weight")->ggmlType, T::Q4_K);
    EXPECT_EQ(*file.find("blk.1.attn_v.weight")->ggmlType, T::Q6_K);
    EXPECT_EQ(*file.find("blk.0.ffn_down.weight")->ggmlType, T::Q4_K);
    EXPECT_EQ(*file.find("blk.1.ffn_down.weight")->ggmlType, T::Q6_K);
    EXPECT_EQ(*file.find("blk.1.attn_q.weight")->ggmlType, T::Q4_K);
    EXPECT_EQ(*file.find("token_embd.weight")->ggmlType, T::Q6_K);

    const auto e = runCli(
        {"eval", kDemo.string(), gguf.string(), "--samples", "4", "--seq-len", "128", "--json", evalJson.string()});
    ASSERT_EQ(e.exitCode, 0) << e.err;
    const json compared = json::parse(std::ifstream(compareJson)), evaluated = json::parse(std::ifstream(evalJson));
    const double measured = compared["methods"][0]["kl"]["mean_kld"]["value"].get<double>();
    EXPECT_GT(measured, 0.0);
    EXPECT_EQ(evaluated["kl"]["mean_kld"]["value"].get<double>(), measured);

    // The imatrix: Σx² of each linear's input over the 8 x 128 calibration tokens, and their count.
    const qs::io::GgufFile im = qs::io::GgufFile::open(imatrix);
    ASSERT_NE(im.metadata().string("general.type"), nullptr);
    EXPECT_EQ(*im.metadata().string("general.type"), "imatrix");
    EXPECT_EQ(im.metadata().integer("imatrix.chunk_count"), 8);
    EXPECT_EQ(im.metadata().integer("imatrix.chunk_size"), 128);
    EXPECT_EQ(im.tensors().size(), 2u * 7u * 2u);
    EXPECT_EQ(im.tensor("blk.1.ffn_down.weight.counts").toF32(), std::vector<float>{1024.0f});
    const qs::io::Checkpoint demo = qs::io::Checkpoint::open(kDemo);
    const auto windows =
        qs::pipeline::tokenWindows(qs::model::Tokenizer::forCheckpoint(demo),
                                   qs::pipeline::loadTexts(kDemo / "calibration.txt"), 8, 128, "calibration.txt");
    const std::vector<double> expected = layer0AttentionInputSquares(demo, windows);
    const std::vector<float> sums = im.tensor("blk.0.attn_q.weight.in_sum2").toF32();
    ASSERT_EQ(sums.size(), expected.size());
    for (std::size_t i = 0; i < sums.size(); ++i) EXPECT_NEAR(sums[i], expected[i], 1e-3 * expected[i]) << i;
    EXPECT_EQ(im.tensor("blk.0.attn_k.weight.in_sum2").toF32(), sums);  // q, k and v read the same input
}

// A GGUF method writes one .gguf file and nothing else; the other methods write no GGUF.
TEST(CliGguf, QuantizeRefusesWhatAGgufMethodDoesNotWrite) {
    TempDir dir;
    const std::string demo = kDemo.string();
    expectOneLineError(runCli({"quantize", demo, "--method", "gptq4", "--out", (dir / "x.gguf").string()}), "gptq4",
                       "a GGUF file is written by llama.cpp's methods");
    expectOneLineError(runCli({"quantize", demo, "--method", "q4_k_m", "--out", (dir / "demo-q4").string()}), "demo-q4",
                       "must end in .gguf");
    expectOneLineError(
        runCli({"quantize", demo, "--method", "q6_k", "--format", "gptq_v2", "--out", (dir / "x.gguf").string()}),
        "q6_k", "writes a GGUF file, not --format gptq_v2");
    expectOneLineError(runCli({"quantize", demo, "--method", "fp8", "--imatrix-out", (dir / "i.gguf").string(), "--out",
                               (dir / "fp8").string()}),
                       "--imatrix-out", "apply to the GGUF methods only");
    expectOneLineError(runCli({"quantize", demo, "--method", "q5_k_x", "--out", (dir / "x.gguf").string()}), "q5_k_x",
                       "unknown method");
    EXPECT_TRUE(fs::is_empty(dir.path())) << "a refused quantize wrote something";
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
    cases.push_back(
        {"has unknown ggml type 77", GgufBytes().header(1, 0).tensor("t", {4}, 77, 0).padTo(32).fill(32).bytes()});
    cases.push_back({"the tensor count is 72057594037927936", GgufBytes().header(1ull << 56, 0).bytes()});
    cases.push_back({"claims 4294967296 bytes", GgufBytes().header(0, 1).str("k").u32(8).u64(1ull << 32).bytes()});
    cases.push_back(
        {"overlaps tensor",
         GgufBytes().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).padTo(32).fill(64).bytes()});
    for (const auto& [what, bytes] : cases) {
        const fs::path file = dir / "broken.gguf";
        writeBytes(file, bytes);
        expectOneLineError(runCli({"inspect", file.string()}), file.string(), what);
        expectOneLineError(runCli({"dequantize", file.string(), "--out", (dir / "out").string()}), file.string(), what);
        EXPECT_FALSE(fs::exists(dir / "out")) << what;
    }
}
