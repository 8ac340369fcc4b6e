// Hostile checkpoints through the CLI (issue 21): every refusal is exit code 2, exactly one line on
// stderr that names the file, nothing on stdout and nothing written; nothing hangs (FIFOs), nothing
// crashes (deep nesting), nothing a file says can forge a second line, and `inspect --json` stays
// valid JSON whatever bytes a message quotes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/safetensors_file.h"
#include "qs/quant/fp8.h"

#include "cli_process.h"
#include "safetensors_builder.h"

namespace {

using qs::test::runCli;
using qs::test::runCliWithin;
using qs::test::TempDir;

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

void expectRefusal(const qs::test::CliResult& r, const std::string& what, const std::string& mention) {
    EXPECT_EQ(r.exitCode, 2) << what << ": " << r.err;
    EXPECT_EQ(r.out, "") << what;
    EXPECT_EQ(r.err.rfind("quantscope-cli: error: ", 0), 0u) << what << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": not one line: " << r.err;
    EXPECT_NE(r.err.find(mention), std::string::npos) << what << ": " << r.err;
}

void writeText(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::byte> bytesOf(const std::string& text) {
    std::vector<std::byte> b(text.size());
    std::memcpy(b.data(), text.data(), text.size());
    return b;
}

// A file image with the header text as given (padded to 8 bytes) and `data` bytes after it.
std::vector<std::byte> rawImage(std::string header, std::size_t data) {
    while (header.size() % 8 != 0) header += ' ';
    std::vector<std::byte> out(8);
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<std::byte>((header.size() >> (8 * i)) & 0xFF);
    const auto h = bytesOf(header);
    out.insert(out.end(), h.begin(), h.end());
    out.resize(out.size() + data, std::byte{0});
    return out;
}

void copyDemo(const std::filesystem::path& to) {
    std::filesystem::copy(kDemo, to, std::filesystem::copy_options::recursive);
}

nlohmann::json readJson(const std::filesystem::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

void writeJson(const std::filesystem::path& path, const nlohmann::json& j) { writeText(path, j.dump(2)); }

// A copy of the demo at dir/ck whose config.json says `key: value`, the tensors unchanged.
std::filesystem::path demoWith(const TempDir& dir, const std::string& key, const nlohmann::json& value) {
    const auto folder = dir.path() / "ck";
    copyDemo(folder);
    auto config = readJson(folder / "config.json");
    config[key] = value;
    writeJson(folder / "config.json", config);
    return folder;
}

// An FP8 (128x128 blocks) export of one 256x256 linear, with `mutate` applied to its tensors.
void writeFp8Export(const std::filesystem::path& dir, const std::function<void(qs::formats::EncodedTensor&)>& mutate) {
    const std::string prefix = "model.layers.0.mlp.down_proj";
    qs::MatrixF w(256, 256);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = static_cast<float>((i * 7919) % 201 - 100) / 1000.0f;
    const auto q = qs::quant::quantizeFp8(w);
    const auto& encoder = qs::formats::encoderNamed("fp8");
    qs::formats::ExportScheme scheme;
    scheme.linears = {{prefix, &q}};
    qs::io::CheckpointWriter writer(dir);
    for (auto& t : encoder.encode(prefix, q)) {
        mutate(t);
        writer.addTensor(t.name, t.dtype, t.shape, t.bytes);
    }
    writer.setConfig({{"architectures", {"LlamaForCausalLM"}},
                      {"model_type", "llama"},
                      {"quantization_config", encoder.quantizationConfig(scheme)}});
    writer.finish();
}

}  // namespace

// --- hangs ---------------------------------------------------------------------------------------

TEST(HostileCli, NamedPipesAreRefusedNotWaitedOn) {
    for (const std::string file :
         {"config.json", "model.safetensors", "quantize_config.json", "tokenizer.json", "eval.txt"}) {
        TempDir dir;
        const auto folder = dir.path() / "ck";
        copyDemo(folder);
        std::filesystem::remove(folder / file);
        ASSERT_EQ(::mkfifo((folder / file).c_str(), 0600), 0);
        std::vector<std::string> args = {"inspect", folder.string()};
        if (file == "tokenizer.json")
            args = {"eval", kDemo.string(), folder.string(), "--samples", "1", "--seq-len", "16"};
        if (file == "eval.txt") args = {"eval", folder.string(), kDemo.string(), "--samples", "1", "--seq-len", "16"};
        const auto r = runCliWithin(args, 60);
        ASSERT_FALSE(r.timedOut) << file << " blocked the CLI";
        expectRefusal(r, file, file + ": is a named pipe, not a regular file");
    }
}

TEST(HostileCli, ConfigLinkedToDevZeroIsRefused) {
    TempDir dir;
    const auto folder = dir.path() / "ck";
    copyDemo(folder);
    std::filesystem::remove(folder / "config.json");
    std::filesystem::create_symlink("/dev/zero", folder / "config.json");
    const auto r = runCliWithin({"inspect", folder.string()}, 60);
    ASSERT_FALSE(r.timedOut);
    expectRefusal(r, "/dev/zero", "config.json: is a character device");
}

// --- crashes -------------------------------------------------------------------------------------

TEST(HostileCli, DeeplyNestedConfigIsOneLineAndWritesNothing) {
    TempDir dir;
    const auto folder = dir.path() / "ck";
    copyDemo(folder);
    writeText(folder / "config.json",
              R"({"model_type":"qwen3","extra":)" + std::string(100'000, '[') + std::string(100'000, ']') + "}");
    expectRefusal(runCli({"inspect", folder.string()}), "inspect", "nests deeper than 64 levels");
    const auto out = dir.path() / "dense";
    expectRefusal(runCli({"dequantize", folder.string(), "--out", out.string()}), "dequantize",
                  "nests deeper than 64 levels");
    EXPECT_FALSE(std::filesystem::exists(out));
}

// --- messages that cannot be forged --------------------------------------------------------------

TEST(HostileCli, AFileCannotForgeASecondLine) {
    TempDir dir;
    const std::string forged = "\\nquantscope-cli: error: forged\\r\\u001b[2J";
    const std::string header = R"({"w":{"dtype":"F32)" + forged + R"(","shape":[1],"data_offsets":[0,4]}})";
    const auto path = dir.path() / "forged.safetensors";
    qs::test::writeFile(path, rawImage(header, 4));
    const auto r = runCli({"inspect", path.string()});
    expectRefusal(r, "dtype with a newline", "unknown dtype 'F32\\nquantscope-cli: error: forged\\r\\x1b[2J'");

    const std::string name = R"({"a\nquantscope-cli: error: forged":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    qs::test::writeFile(path, rawImage(name, 4));
    expectRefusal(runCli({"inspect", path.string()}), "name with a newline", "name holds a control character");
}

TEST(HostileCli, HugeNamesAndPatternsGiveShortMessages) {
    TempDir dir;
    const auto path = dir.path() / "long.safetensors";
    const std::string name(200'000, 'n');
    qs::test::writeFile(path, rawImage(R"({")" + name + R"(":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4));
    const auto r = runCli({"inspect", path.string()});
    expectRefusal(r, "200,000-character name", "bytes long, more than the 1024 QuantScope accepts");
    EXPECT_LT(r.err.size(), 600u);
}

TEST(HostileCli, JsonReportStaysValidWhateverAMessageQuotes) {
    TempDir dir;
    const auto folder = dir.path() / "ck\xff\xfe";  // a path that is not UTF-8
    writeFp8Export(folder, [](qs::formats::EncodedTensor&) {});
    auto config = readJson(folder / "config.json");
    config["quantization_config"]["weight_block_size"] = {0, 128};  // every layer unreadable
    writeJson(folder / "config.json", config);
    const auto r = runCli({"inspect", folder.string(), "--json", "--layers"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto report = nlohmann::json::parse(r.out);  // throws when not valid UTF-8 JSON
    ASSERT_EQ(report["quantized_linears"].size(), 1u);
    EXPECT_NE(report["quantized_linears"][0]["problem"].get<std::string>().find("'weight_block_size'[0] is 0"),
              std::string::npos);
}

// --- silently wrong ------------------------------------------------------------------------------

TEST(HostileCli, NonFiniteWeightsAreRefusedUnlessAllowed) {
    TempDir dir;
    const auto source = dir.path() / "fp8";
    writeFp8Export(source, [](qs::formats::EncodedTensor& t) {
        if (!t.name.ends_with("weight_scale_inv")) return;
        const float nan = std::nanf("");
        std::memcpy(t.bytes.data() + 4, &nan, 4);  // one of the four 128x128 block scales
    });
    const auto out = dir.path() / "dense";
    const auto r = runCli({"dequantize", source.string(), "--out", out.string()});
    expectRefusal(r, "NaN scale",
                  "linear 'model.layers.0.mlp.down_proj' decodes to 16384 non-finite weights (NaN or Inf) of 65536");
    EXPECT_FALSE(std::filesystem::exists(out));
    const auto allowed = runCli({"dequantize", source.string(), "--out", out.string(), "--allow-nonfinite"});
    EXPECT_EQ(allowed.exitCode, 0) << allowed.err;
    EXPECT_TRUE(std::filesystem::exists(out / "model.safetensors"));

    // inspect --stats counts the stored NaN per tensor.
    const auto stats = runCli({"inspect", source.string(), "--stats", "--json"});
    ASSERT_EQ(stats.exitCode, 0) << stats.err;
    for (const auto& t : nlohmann::json::parse(stats.out)["tensors"])
        EXPECT_EQ(t["stats"]["nan"].get<int>(), t["name"].get<std::string>().ends_with("weight_scale_inv") ? 1 : 0)
            << t["name"];
}

TEST(HostileCli, DenseLinearsWithNaNAreRefusedByEveryCommandThatUsesThem) {
    TempDir dir;
    const auto folder = dir.path() / "ck";
    copyDemo(folder);
    const std::string linear = "model.layers.1.self_attn.q_proj";
    std::uint64_t offset = 0;
    {
        const auto shard = qs::io::SafetensorsFile::open(folder / "model.safetensors");
        const auto* info = shard.find(linear + ".weight");
        ASSERT_NE(info, nullptr);
        ASSERT_EQ(info->dtype, qs::io::DType::BF16);
        offset = 8 + shard.header().headerLength + info->begin + 2 * 7;  // element 7
    }
    {
        std::fstream file(folder / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
        file.seekp(static_cast<std::streamoff>(offset));
        const char nan[2] = {'\xC0', '\x7F'};  // BF16 quiet NaN, little-endian
        file.write(nan, 2);
    }
    const std::string expected = "linear '" + linear + "' decodes to 1 non-finite weights (NaN or Inf)";
    const auto out = dir.path() / "dense";
    expectRefusal(runCli({"dequantize", folder.string(), "--out", out.string()}), "dequantize", expected);
    EXPECT_FALSE(std::filesystem::exists(out));
    expectRefusal(runCli({"eval", kDemo.string(), folder.string(), "--samples", "1", "--seq-len", "16"}), "eval",
                  expected);
    expectRefusal(runCli({"compare", folder.string(), "--methods", "rtn4", "--samples", "1", "--seq-len", "16",
                          "--eval-samples", "1"}),
                  "compare", expected);
    EXPECT_EQ(runCli({"dequantize", folder.string(), "--out", out.string(), "--allow-nonfinite"}).exitCode, 0);
}

TEST(HostileCli, EmptyCheckpointsAreRefused) {
    TempDir dir;
    const auto empty = dir.path() / "empty.safetensors";
    qs::test::writeFile(empty, rawImage("{}", 0));
    expectRefusal(runCli({"inspect", empty.string()}), "header {}", "empty.safetensors: holds no tensors");
    const auto out = dir.path() / "dense";
    expectRefusal(runCli({"dequantize", empty.string(), "--out", out.string()}), "header {} dequantized",
                  "holds no tensors");
    EXPECT_FALSE(std::filesystem::exists(out));

    const auto folder = dir.path() / "indexed";
    copyDemo(folder);
    writeText(folder / "model.safetensors.index.json", R"({"metadata":{},"weight_map":{}})");
    expectRefusal(runCli({"inspect", folder.string()}), "empty weight_map", "weight_map is empty");
}

TEST(HostileCli, ConfigThatDisagreesWithTheTensorsIsAWarningForInspectAndAnErrorToRun) {
    const std::pair<const char*, nlohmann::json> changes[] = {
        {"hidden_size", 512}, {"num_hidden_layers", 3}, {"num_attention_heads", 8}, {"vocab_size", 400},
        {"head_dim", 32},     {"model_type", "llama"},  {"intermediate_size", 1024}};
    for (const auto& [key, value] : changes) {
        TempDir dir;
        const auto folder = demoWith(dir, key, value);
        const auto inspect = runCli({"inspect", folder.string()});
        EXPECT_EQ(inspect.exitCode, 0) << key << ": " << inspect.err;
        EXPECT_EQ(inspect.err.rfind("quantscope-cli: warning: ", 0), 0u) << key << ": " << inspect.err;
        EXPECT_NE(inspect.err.find(key), std::string::npos) << key << ": " << inspect.err;
        const auto eval = runCli({"eval", kDemo.string(), folder.string(), "--samples", "1", "--seq-len", "16"});
        expectRefusal(eval, key, "describes another model than its tensors");
    }
}

// transformers keeps a quoted size as a string and fails in nn.Linear: eval refuses it in one line.
TEST(HostileCli, EvalRefusesAQuotedSizeNamingTheKey) {
    TempDir dir;
    const auto folder =
        demoWith(dir, "hidden_size", std::to_string(readJson(kDemo / "config.json")["hidden_size"].get<int>()));
    expectRefusal(runCli({"eval", kDemo.string(), folder.string(), "--samples", "1", "--seq-len", "16"}), "hidden_size",
                  "'hidden_size' is \"");
}

// Tensors whose names look like a decoder layer's but name none: a loader leaves them unused, so the
// run goes on (the same model: KL 0) and says so in one warning line; inspect says the same.
TEST(HostileCli, TensorsThatNameNoLayerAreOneWarningAndTheRunGoesOn) {
    TempDir dir;
    const auto folder = dir.path() / "ck";
    {
        const qs::io::Checkpoint demo = qs::io::Checkpoint::open(kDemo);
        qs::io::CheckpointWriter writer(folder);
        for (const auto& t : demo.tensors())
            writer.addTensor(t.info->name, t.info->dtype, t.info->shape, demo.view(t).bytes());
        const std::vector<float> values(16, 1.0f);
        writer.addTensorF32("model.layers.-1.mlp.down_proj.weight", qs::io::DType::F32, {4, 4}, values);
        writer.addTensorF32("model.layers.99999999999.mlp.up_proj.weight", qs::io::DType::F32, {4, 4}, values);
        writer.setConfig(readJson(kDemo / "config.json"));
        writer.copyAuxiliaryFiles(kDemo);
        writer.finish();
    }
    const std::string warning =
        "quantscope-cli: warning: tensor 'model.layers.-1.mlp.down_proj.weight' and 1 more name no decoder layer";
    const auto json = dir.path() / "eval.json";
    const auto eval =
        runCli({"eval", kDemo.string(), folder.string(), "--samples", "1", "--seq-len", "16", "--json", json.string()});
    ASSERT_EQ(eval.exitCode, 0) << eval.err;
    EXPECT_NE(eval.err.find(warning), std::string::npos) << eval.err;
    EXPECT_EQ(eval.err.find("warning", eval.err.find(warning) + warning.size()), std::string::npos)
        << "one line: " << eval.err;
    EXPECT_EQ(readJson(json)["kl"]["mean_kld"]["value"].get<double>(), 0.0);
    const auto inspect = runCli({"inspect", folder.string()});
    EXPECT_EQ(inspect.exitCode, 0) << inspect.err;
    EXPECT_NE(inspect.err.find(warning), std::string::npos) << inspect.err;
}

TEST(HostileCli, EvalRefusesAModelWhoseForwardPassDiffers) {
    const std::pair<const char*, nlohmann::json> changes[] = {
        {"rope_theta", 1000000.0},
        {"rms_norm_eps", 1e-5},
        {"rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}}};
    for (const auto& [key, value] : changes) {
        TempDir dir;
        const auto folder = demoWith(dir, key, value);
        expectRefusal(runCli({"eval", kDemo.string(), folder.string(), "--samples", "1", "--seq-len", "16"}), key, key);
    }
}
