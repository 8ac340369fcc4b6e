// `quantize` and `dequantize` on the bundled demo: exit codes, the files written, a refused shape
// that writes nothing, and a dequantized export equal to what the readers decode from the quantized one.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"

#include "cli_process.h"

namespace {

using qs::test::runCli;

const std::string kDemo = std::string(QS_RESOURCES_DIR) + "/demo";

std::filesystem::path freshPath(const std::string& name) {
    auto p = std::filesystem::temp_directory_path() / ("qs_cli_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(p);
    return p;
}

nlohmann::json readJson(const std::filesystem::path& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
}

std::size_t lineCount(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(Quantize, GptqOnTheDemoWritesALoadableCheckpoint) {
    const auto out = freshPath("gptq");
    const auto r = runCli({"quantize", kDemo, "--method", "gptq", "--bits", "4", "--sym", "--act-order", "--group-size",
                           "64", "--samples", "4", "--seq-len", "64", "--out", out.string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("gptq"), std::string::npos) << r.out;
    for (const char* file :
         {"model.safetensors", "config.json", "quantize_config.json", "tokenizer.json", "quantscope_report.json"})
        EXPECT_TRUE(std::filesystem::exists(out / file)) << file;
    const auto config = readJson(out / "config.json")["quantization_config"];
    EXPECT_EQ(config["quant_method"], "gptq");
    EXPECT_EQ(config["checkpoint_format"], "gptq");
    EXPECT_EQ(config["bits"], 4);
    EXPECT_EQ(config["desc_act"], true);
    const auto report = readJson(out / "quantscope_report.json");
    EXPECT_EQ(report["settings"]["calibration"]["samples"], 4);
    const auto checkpoint = qs::io::Checkpoint::open(out);
    const qs::formats::LinearReader reader(checkpoint);
    EXPECT_EQ(reader.format().format, qs::formats::Format::Gptq);
    EXPECT_TRUE(reader.decode("model.layers.1.mlp.down_proj").quantized);
    std::filesystem::remove_all(out);
}

TEST(Quantize, RefusedShapeIsOneLineAndWritesNothing) {
    const auto out = freshPath("refused");
    const auto r =
        runCli({"quantize", kDemo, "--method", "gptq", "--bits", "4", "--group-size", "96", "--out", out.string()});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_EQ(lineCount(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("K=256 is not a multiple of group size 96"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));

    const auto awq =
        runCli({"quantize", kDemo, "--method", "rtn", "--format", "awq", "--group-size", "-1", "--out", out.string()});
    EXPECT_EQ(awq.exitCode, 2);
    EXPECT_NE(awq.err.find("AWQ needs a group size"), std::string::npos) << awq.err;
    EXPECT_FALSE(std::filesystem::exists(out));

    const auto unknown = runCli({"quantize", kDemo, "--method", "rtn", "--format", "exl2", "--out", out.string()});
    EXPECT_EQ(unknown.exitCode, 2);
    EXPECT_NE(unknown.err.find("gptq_v2"), std::string::npos) << unknown.err;  // the known names are listed
    EXPECT_FALSE(std::filesystem::exists(out));
}

// A quantized checkpoint is a source like any other: `quantize`, `compare` and `inspect --hessian` on a
// GPTQ export run on its decoded weights (they once failed with "no tensor named '...q_proj.weight'",
// then refused it), and the first two say so in one line. One whose format QuantScope cannot decode is
// refused in one line that says why, having written nothing.
TEST(Quantize, AQuantizedCheckpointIsQuantizedFromItsDecodedWeights) {
    const auto quantized = freshPath("already_gptq");
    ASSERT_EQ(runCli({"quantize", kDemo, "--method", "gptq4", "--samples", "4", "--seq-len", "32", "--out",
                      quantized.string()})
                  .exitCode,
              0);
    const auto out = freshPath("requantized");
    const std::string note =
        "source is already quantized (gptq, int4 g128 asym, 14 quantized linears): its decoded weights are the "
        "reference; KL is measured against them\n";
    const auto q = runCli({"quantize", quantized.string(), "--method", "rtn4", "--out", out.string()});
    ASSERT_EQ(q.exitCode, 0) << q.err;
    EXPECT_EQ(q.out.find(note), 0u) << q.out;
    EXPECT_EQ(readJson(out / "config.json")["quantization_config"]["checkpoint_format"], "gptq_v2");
    EXPECT_EQ(readJson(out / "quantscope_report.json")["source_quantization"]["format"], "gptq");
    const auto c = runCli({"compare", quantized.string(), "--methods", "rtn4", "--samples", "2", "--seq-len", "32",
                           "--eval-samples", "2"});
    ASSERT_EQ(c.exitCode, 0) << c.err;
    EXPECT_EQ(c.out.find(note), 0u) << c.out;
    const auto h = runCli({"inspect", quantized.string(), "--hessian", "0", "--samples", "2", "--seq-len", "32"});
    EXPECT_EQ(h.exitCode, 0) << h.err;
    EXPECT_NE(h.out.find("mlp.down_proj"), std::string::npos) << h.out;

    // quant_method 'hqq' names no layout QuantScope decodes.
    nlohmann::json config = readJson(quantized / "config.json");
    config["quantization_config"] = {{"quant_method", "hqq"}, {"nbits", 4}};
    std::ofstream(quantized / "config.json") << config.dump();
    std::filesystem::remove_all(out);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"quantize", quantized.string(), "--method", "rtn4", "--out", out.string()},
          std::vector<std::string>{"compare", quantized.string(), "--methods", "rtn4"},
          std::vector<std::string>{"inspect", quantized.string(), "--hessian", "0"}}) {
        const auto r = runCli(args);
        EXPECT_EQ(r.exitCode, 2) << args[0];
        EXPECT_EQ(lineCount(r.err), 1u) << r.err;
        EXPECT_NE(r.err.find(quantized.string() + ": its quantized linears cannot be decoded: quant_method 'hqq'"),
                  std::string::npos)
            << r.err;
    }
    EXPECT_FALSE(std::filesystem::exists(out));
    std::filesystem::remove_all(quantized);
}

TEST(Quantize, ExistingDestinationNeedsOverwrite) {
    const auto out = freshPath("exists");
    std::filesystem::create_directories(out);
    const auto r = runCli({"quantize", kDemo, "--method", "fp8", "--out", out.string()});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_NE(r.err.find("--overwrite"), std::string::npos) << r.err;
    const auto again = runCli({"quantize", kDemo, "--method", "fp8", "--out", out.string(), "--overwrite"});
    EXPECT_EQ(again.exitCode, 0) << again.err;
    EXPECT_EQ(readJson(out / "config.json")["quantization_config"]["quant_method"], "fp8");
    std::filesystem::remove_all(out);
}

TEST(Dequantize, RoundTripOfAQuantizedExportEqualsTheDecodedWeights) {
    const auto quantized = freshPath("rt_q");
    const auto dense = freshPath("rt_dense");
    ASSERT_EQ(
        runCli({"quantize", kDemo, "--method", "rtn", "--bits", "4", "--group-size", "64", "--out", quantized.string()})
            .exitCode,
        0);
    const auto r = runCli({"dequantize", quantized.string(), "--out", dense.string(), "--dtype", "f32"});
    ASSERT_EQ(r.exitCode, 0) << r.err;

    const auto q = qs::io::Checkpoint::open(quantized);
    const auto d = qs::io::Checkpoint::open(dense);
    const qs::formats::LinearReader qReader(q), dReader(d);
    EXPECT_EQ(dReader.format().format, qs::formats::Format::Dense);
    int linears = 0;
    for (const auto& ref : qReader.linears()) {
        const auto want = qReader.decodeF32(ref.prefix);
        const auto stored = d.tensor(ref.prefix + ".weight");
        EXPECT_EQ(stored.dtype(), qs::io::DType::F32);
        const auto got = stored.toMatrix();
        ASSERT_EQ(got.size(), want.size()) << ref.prefix;
        EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * want.size()), 0) << ref.prefix;
        ++linears;
    }
    EXPECT_EQ(linears, 14);
    const auto config = readJson(dense / "config.json");
    EXPECT_FALSE(config.contains("quantization_config"));
    EXPECT_EQ(config["torch_dtype"], "float32");
    const auto embed = d.tensor("model.embed_tokens.weight");
    EXPECT_EQ(embed.dtype(), q.tensor("model.embed_tokens.weight").dtype());
    EXPECT_TRUE(std::filesystem::exists(dense / "tokenizer.json"));
    std::filesystem::remove_all(quantized);
    std::filesystem::remove_all(dense);
}

TEST(Dequantize, BadDtypeAndUnreadableSourceAreErrors) {
    const auto out = freshPath("bad");
    EXPECT_EQ(runCli({"dequantize", kDemo, "--out", out.string(), "--dtype", "f8"}).exitCode, 2);
    EXPECT_EQ(runCli({"dequantize", out.string() + "_missing", "--out", out.string()}).exitCode, 2);
    EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace

TEST(Quantize, W8A8WithAnFp8CacheIsInspectedAndEvaluatedAsServed) {
    const auto out = freshPath("w8a8");
    const auto r = runCli({"quantize", kDemo, "--method", "fp8-w8a8", "--kv-cache", "fp8", "--samples", "4",
                           "--seq-len", "64", "--format", "modelopt-fp8", "--out", out.string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto hf = readJson(out / "hf_quant_config.json");
    EXPECT_EQ(hf["quantization"]["quant_algo"], "FP8");
    EXPECT_EQ(hf["quantization"]["kv_cache_quant_algo"], "FP8");
    EXPECT_EQ(readJson(out / "quantscope_report.json")["settings"]["kv_cache"], "fp8");

    const auto inspect = runCli({"inspect", out.string()});
    ASSERT_EQ(inspect.exitCode, 0) << inspect.err;
    EXPECT_NE(inspect.out.find("Input scales"), std::string::npos) << inspect.out;  // 14 linears
    EXPECT_NE(inspect.out.find("KV k_scale"), std::string::npos) << inspect.out;
    const auto json = nlohmann::json::parse(runCli({"inspect", out.string(), "--json"}).out);
    EXPECT_EQ(json["serving_scales"].size(), 14u + 2u + 2u);  // 7 linears x 2 layers, k and v per layer
    std::filesystem::remove_all(out);
}

TEST(Quantize, ServingOptionsThatMakeNoSenseAreOneLine) {
    const auto out = freshPath("serving_refused");
    const auto kv = runCli({"quantize", kDemo, "--method", "fp8", "--kv-cache", "int4", "--out", out.string()});
    EXPECT_EQ(kv.exitCode, 2);
    EXPECT_EQ(lineCount(kv.err), 1u) << kv.err;
    const auto cal =
        runCli({"quantize", kDemo, "--method", "fp8-w8a8", "--act-calibration", "p0", "--out", out.string()});
    EXPECT_EQ(cal.exitCode, 2);
    EXPECT_NE(cal.err.find("p99.9"), std::string::npos) << cal.err;
    // GPTQ's layout cannot state an FP8 KV cache: refused before any work, naming a linear.
    const auto gptq = runCli({"quantize", kDemo, "--method", "gptq4", "--kv-cache", "fp8", "--out", out.string()});
    EXPECT_EQ(gptq.exitCode, 2);
    EXPECT_NE(gptq.err.find("KV-cache scale"), std::string::npos) << gptq.err;
    const auto gguf =
        runCli({"quantize", kDemo, "--method", "q8_0", "--kv-cache", "fp8", "--out", (out.string() + ".gguf")});
    EXPECT_EQ(gguf.exitCode, 2);
    EXPECT_NE(gguf.err.find("--cache-type-k"), std::string::npos) << gguf.err;
    EXPECT_FALSE(std::filesystem::exists(out));
}
