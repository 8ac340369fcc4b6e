// `compare`, `quantize` and `eval` on quantized sources (issue 41, part 6): the demo's FP8 export (as
// DeepSeek-V3, Kimi-K2 and the Qwen3 FP8 releases are stored) and its GGUF of Q8_0 blocks, both made by
// the CLI as a user makes them. Each run says in one line that the source's decoded weights are the
// reference, the export holds the new layout alone, and `eval` of the export against its source gives
// the KL `compare` measured (as tests/cli/test_gguf_cli.cpp checks for a dense source).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/io/checkpoint.h"

#include "cli_process.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using qs::test::runCli;

const fs::path kDemo = fs::path(QS_RESOURCES_DIR) / "demo";

fs::path freshPath(const std::string& name) {
    auto p = fs::temp_directory_path() / ("qs_cli_qsrc_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(p);
    return p;
}

json readJson(const fs::path& file) { return json::parse(std::ifstream(file)); }

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

std::string referenceNote(const std::string& description) {
    return "source is already quantized (" + description +
           "): its decoded weights are the reference; KL is measured against them\n";
}

// The texts and sizes every run here shares, so that compare and quantize calibrate alike.
std::vector<std::string> withTexts(std::vector<std::string> args, bool evaluation) {
    for (const std::string& a : {std::string("--calib"), (kDemo / "calibration.txt").string(), std::string("--samples"),
                                 std::string("4"), std::string("--seq-len"), std::string("64")})
        args.push_back(a);
    if (evaluation)
        for (const std::string& a :
             {std::string("--eval"), (kDemo / "eval.txt").string(), std::string("--eval-samples"), std::string("2")})
            args.push_back(a);
    return args;
}

class QuantizedSourceCli : public testing::Test {
protected:
    static void SetUpTestSuite() {
        fp8_ = new fs::path(freshPath("fp8"));
        q8_ = new fs::path(freshPath("q8") += ".gguf");
        made_ = runCli({"quantize", kDemo.string(), "--method", "fp8", "--out", fp8_->string()}).exitCode == 0 &&
                runCli({"dequantize", kDemo.string(), "--out", q8_->string(), "--dtype", "q8_0"}).exitCode == 0;
    }
    static void TearDownTestSuite() {
        fs::remove_all(*fp8_);
        fs::remove(*q8_);
        delete fp8_;
        delete q8_;
    }
    void SetUp() override { ASSERT_TRUE(made_) << "quantscope-cli could not make the FP8 and Q8_0 sources"; }

    static inline fs::path* fp8_ = nullptr;
    static inline fs::path* q8_ = nullptr;
    static inline bool made_ = false;
};

}  // namespace

TEST_F(QuantizedSourceCli, CompareOnAnFp8AndAGgufQ8_0SourceSaysInOneLineThatTheirDecodedWeightsAreTheReference) {
    const std::vector<std::pair<fs::path, std::string>> sources = {
        {*fp8_, "fp8, fp8 block 128x128 sym, 14 quantized linears"}, {*q8_, "gguf, gguf q8_0, 14 quantized linears"}};
    for (const auto& [source, description] : sources) {
        SCOPED_TRACE(source.string());
        const fs::path report = freshPath("compare.json");
        const auto r = runCli(withTexts(
            {"compare", source.string(), "--methods", "rtn4,nvfp4", "--json", report.string(), "--device", "cpu"},
            true));
        ASSERT_EQ(r.exitCode, 0) << r.err;
        EXPECT_EQ(r.out.find(referenceNote(description)), 0u) << r.out;
        EXPECT_EQ(occurrences(r.out + r.err, "already quantized"), 1u) << r.out << r.err;
        const json j = readJson(report);
        EXPECT_EQ(j["source_quantization"]["format"], description.substr(0, description.find(',')));
        EXPECT_EQ(j["source_quantization"]["quantized_linears"], 14);
        EXPECT_GT(j["methods"][1]["kl"]["mean_kld"]["value"].get<double>(), 0.0);
        fs::remove(report);
    }
    // A dense source says nothing of the kind.
    const auto dense = runCli(withTexts({"compare", kDemo.string(), "--methods", "rtn4", "--device", "cpu"}, true));
    ASSERT_EQ(dense.exitCode, 0) << dense.err;
    EXPECT_EQ(occurrences(dense.out + dense.err, "already quantized"), 0u) << dense.out;
}

// quantize from the FP8 source writes the new layout alone, and its eval against the FP8 source is the KL
// compare measured: bit for bit for NVFP4, within the F16 scales GPTQ's layout stores for GPTQ.
TEST_F(QuantizedSourceCli, QuantizeFromTheFp8SourceWritesWhatCompareMeasuredAgainstIt) {
    const fs::path compared = freshPath("compare.json");
    const auto c = runCli(withTexts(
        {"compare", fp8_->string(), "--methods", "nvfp4,gptq4", "--json", compared.string(), "--device", "cpu"}, true));
    ASSERT_EQ(c.exitCode, 0) << c.err;
    const json measured = readJson(compared);
    for (int i = 0; i < 2; ++i) {
        const std::string method = i == 0 ? "nvfp4" : "gptq4";
        SCOPED_TRACE(method);
        const fs::path out = freshPath(method), evaluated = freshPath(method + ".json");
        const auto q =
            runCli(withTexts({"quantize", fp8_->string(), "--method", method, "--out", out.string()}, false));
        ASSERT_EQ(q.exitCode, 0) << q.err;
        EXPECT_EQ(occurrences(q.out, "source is already quantized (fp8"), 1u) << q.out;
        const qs::io::Checkpoint exported = qs::io::Checkpoint::open(out);
        for (const auto& t : exported.tensors()) {  // nothing of FP8's layout: its weight and its block scales
            EXPECT_FALSE(t.info->name.ends_with("weight_scale_inv")) << t.info->name;
            EXPECT_FALSE(t.naming.part == "weight" && t.naming.role == qs::io::TensorRole::Linear) << t.info->name;
        }
        EXPECT_EQ(readJson(out / "config.json")["quantization_config"]["quant_method"],
                  i == 0 ? "compressed-tensors" : "gptq");
        EXPECT_EQ(readJson(out / "quantscope_report.json")["source_quantization"]["scheme"], "fp8 block 128x128 sym");

        const auto e = runCli({"eval", fp8_->string(), out.string(), "--eval", (kDemo / "eval.txt").string(),
                               "--samples", "2", "--seq-len", "64", "--json", evaluated.string()});
        ASSERT_EQ(e.exitCode, 0) << e.err;
        const double kl = readJson(evaluated)["kl"]["mean_kld"]["value"].get<double>();
        const double reported = measured["methods"][i]["kl"]["mean_kld"]["value"].get<double>();
        if (i == 0)
            EXPECT_EQ(kl, reported);
        else
            EXPECT_NEAR(kl, reported, 0.02 * reported);
        fs::remove_all(out);
        fs::remove(evaluated);
    }
    fs::remove(compared);
}
