// `diff A B [--original O]` on exports of the demo made here as a user makes them (`quantize`): the JSON
// carries exactly formats::diffQuantizations' figures, the table prints them, the summary's means are
// checked against sums taken here and against `inspect`'s bits per weight of a GGUF file; the same file
// twice differs nowhere, --only-differing keeps the differing rows, and another model is refused in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/formats/linear_reader.h"
#include "qs/formats/quantization_diff.h"
#include "qs/io/checkpoint.h"

#include "cli_process.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using qs::test::runCli;

const std::string kDemo = std::string(QS_RESOURCES_DIR) + "/demo";
const std::string kStories = std::string(QS_RESOURCES_DIR) + "/models/stories260K";

// The demo quantized with `method` (extra arguments after it), once per test process.
std::string quantizedDemo(const std::string& name, const std::vector<std::string>& method) {
    static const fs::path root = fs::temp_directory_path() / ("qs_cli_diff_" + std::to_string(::getpid()));
    static std::map<std::string, std::string> made;
    if (const auto it = made.find(name); it != made.end()) return it->second;
    fs::create_directories(root);
    const std::string out = (root / name).string();
    std::vector<std::string> args{"quantize", kDemo, "--samples", "8", "--seq-len", "64", "--out", out};
    args.insert(args.end(), method.begin(), method.end());
    const auto r = runCli(args);
    EXPECT_EQ(r.exitCode, 0) << name << ": " << r.err;
    return r.exitCode == 0 ? made[name] = out : out;
}

std::string gptq4() { return quantizedDemo("gptq4", {"--method", "gptq4"}); }
std::string q4km() { return quantizedDemo("demo-Q4_K_M.gguf", {"--method", "q4_k_m"}); }
std::string q4ks() { return quantizedDemo("demo-Q4_K_S.gguf", {"--method", "q4_k_s"}); }

struct RemoveExports : testing::Environment {
    void TearDown() override {
        fs::remove_all(fs::temp_directory_path() / ("qs_cli_diff_" + std::to_string(::getpid())));
    }
};
[[maybe_unused]] testing::Environment* const kRemoveExports = testing::AddGlobalTestEnvironment(new RemoveExports);

// What the command computes, through the core API.
qs::formats::QuantizationDiff coreDiff(const std::string& a, const std::string& b, const std::string& original = "") {
    const qs::io::Checkpoint ca = qs::io::Checkpoint::open(a), cb = qs::io::Checkpoint::open(b);
    const qs::formats::LinearReader ra(ca), rb(cb);
    if (original.empty()) return qs::formats::diffQuantizations(ra, rb, nullptr, {}, qs::CancelToken());
    const qs::io::Checkpoint co = qs::io::Checkpoint::open(original);
    const qs::formats::LinearReader ro(co);
    return qs::formats::diffQuantizations(ra, rb, &ro, {}, qs::CancelToken());
}

json diffJson(const std::vector<std::string>& args) {
    std::vector<std::string> command{"diff"};
    command.insert(command.end(), args.begin(), args.end());
    command.push_back("--json");
    const auto r = runCli(command);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return r.exitCode == 0 ? json::parse(r.out) : json();
}

std::string printed(const char* format, double value) {
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

// The table's line of `linear`, else "".
std::string lineOf(const std::string& text, const std::string& linear) {
    std::size_t at = text.find('\n' + linear + ' ');
    if (at == std::string::npos) return "";
    const std::size_t end = text.find('\n', at + 1);
    return text.substr(at + 1, end - at - 1);
}

void expectSide(const json& side, const std::string& type, bool quantized, double bits,
                const std::optional<double>& error) {
    EXPECT_EQ(side["type"], type);
    EXPECT_EQ(side["quantized"], quantized);
    EXPECT_EQ(side["bits_per_weight"].get<double>(), bits);  // exactly: JSON doubles round-trip
    if (error)
        EXPECT_EQ(side["rms_error"].get<double>(), *error);
    else
        EXPECT_TRUE(side["rms_error"].is_null());
}

void expectLinearsAsCore(const json& linears, const qs::formats::QuantizationDiff& diff) {
    ASSERT_EQ(linears.size(), diff.linears.size());
    for (std::size_t i = 0; i < diff.linears.size(); ++i) {
        const qs::formats::LinearDiff& d = diff.linears[i];
        const json& l = linears[i];
        SCOPED_TRACE(d.ref.prefix);
        EXPECT_EQ(l["name"], d.ref.prefix);
        EXPECT_EQ(l["rows"], d.rows);
        EXPECT_EQ(l["cols"], d.cols);
        expectSide(l["a"], d.typeA, d.quantizedA, d.bitsA, d.errorA);
        expectSide(l["b"], d.typeB, d.quantizedB, d.bitsB, d.errorB);
        EXPECT_EQ(l["rms_a_minus_b"].get<double>(), d.rmsAMinusB);
        EXPECT_EQ(l["differs"], d.differs);
    }
}

// The summary's means as the brief states them, summed here: bits over the file's quantized linears,
// errors over every linear, each weighted by out x in.
void expectSummarySide(const json& side, const qs::formats::QuantizationDiff& diff, bool isA) {
    double bits = 0.0, error = 0.0, quantizedWeights = 0.0, allWeights = 0.0;
    int quantized = 0;
    for (const qs::formats::LinearDiff& d : diff.linears) {
        const double weights = double(d.rows) * double(d.cols);
        allWeights += weights;
        if (isA ? d.quantizedA : d.quantizedB) {
            ++quantized;
            quantizedWeights += weights;
            bits += (isA ? d.bitsA : d.bitsB) * weights;
        }
        if (diff.withOriginal) error += *(isA ? d.errorA : d.errorB) * weights;
    }
    EXPECT_EQ(side["quantized_linears"], quantized);
    EXPECT_NEAR(side["bits_per_weight"].get<double>(), bits / quantizedWeights, 1e-12);
    if (diff.withOriginal)
        EXPECT_NEAR(side["mean_rms_error"].get<double>(), error / allWeights, 1e-15);
    else
        EXPECT_TRUE(side["mean_rms_error"].is_null());
}

int differingCount(const qs::formats::QuantizationDiff& diff) {
    return static_cast<int>(
        std::count_if(diff.linears.begin(), diff.linears.end(), [](const auto& d) { return d.differs; }));
}

}  // namespace

// Our GPTQ int4 folder against our Q4_K_M file, with the original: every figure is the core's.
TEST(CliDiff, JsonAndTableCarryTheCoresDiff) {
    const std::string a = gptq4(), b = q4km();
    const qs::formats::QuantizationDiff diff = coreDiff(a, b, kDemo);
    ASSERT_EQ(diff.linears.size(), 14u);  // 2 layers x 7 linears of the demo, all quantized in both
    const json report = diffJson({a, b, "--original", kDemo});
    expectLinearsAsCore(report["linears"], diff);
    EXPECT_EQ(report["summary"]["linears"], 14);
    EXPECT_EQ(report["summary"]["differing"], differingCount(diff));
    EXPECT_EQ(report["summary"]["differing"], 14);  // int4 g128 against ggml's blocks: nowhere the same bits
    expectSummarySide(report["summary"]["a"], diff, true);
    expectSummarySide(report["summary"]["b"], diff, false);

    // A GGUF file's bits per weight as `inspect` reads them from its ggml types (io::ggufBitsPerWeight).
    const auto inspected = runCli({"inspect", b, "--json"});
    ASSERT_EQ(inspected.exitCode, 0) << inspected.err;
    EXPECT_NEAR(report["summary"]["b"]["bits_per_weight"].get<double>(),
                json::parse(inspected.out)["gguf"]["bits_per_weight"].get<double>(), 1e-9);

    const auto text = runCli({"diff", a, b, "--original", kDemo});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    for (const qs::formats::LinearDiff& d : diff.linears) {
        const std::string line = lineOf(text.out, d.ref.prefix);
        SCOPED_TRACE(line);
        ASSERT_FALSE(line.empty()) << d.ref.prefix << " missing:\n" << text.out;
        for (const std::string& cell :
             {d.typeA, printed("%.3f", d.bitsA), printed("%.6g", *d.errorA), d.typeB, printed("%.3f", d.bitsB),
              printed("%.6g", *d.errorB), printed("%.6g", d.rmsAMinusB)})
            EXPECT_NE(line.find("  " + cell), std::string::npos) << cell;
        EXPECT_TRUE(line.ends_with("yes"));
    }
    const auto& s = report["summary"];
    EXPECT_NE(text.out.find("14 of 14 linears differ; bits per weight A " +
                            printed("%.3f", s["a"]["bits_per_weight"].get<double>()) + ", B " +
                            printed("%.3f", s["b"]["bits_per_weight"].get<double>()) + "; mean RMS error A " +
                            printed("%.6g", s["a"]["mean_rms_error"].get<double>()) + ", B " +
                            printed("%.6g", s["b"]["mean_rms_error"].get<double>()) + "\n"),
              std::string::npos)
        << text.out;
}

// A linear one file leaves dense (--ignore) is a row with its dense type, and that file's bits per weight
// are over the linears it quantizes.
TEST(CliDiff, ALinearOneFileLeavesDenseIsARowButNotInItsBits) {
    const std::string a = gptq4();
    const std::string b =
        quantizedDemo("gptq4-dense-down", {"--method", "gptq4", "--ignore", "layers\\.1\\.mlp\\.down_proj"});
    const qs::formats::QuantizationDiff diff = coreDiff(a, b);
    const json report = diffJson({a, b});
    expectLinearsAsCore(report["linears"], diff);
    const auto dense = std::find_if(report["linears"].begin(), report["linears"].end(),
                                    [](const json& l) { return l["name"] == "model.layers.1.mlp.down_proj"; });
    ASSERT_NE(dense, report["linears"].end());
    EXPECT_EQ((*dense)["b"]["quantized"], false);
    EXPECT_EQ((*dense)["b"]["type"].get<std::string>().rfind("dense ", 0), 0u) << (*dense)["b"]["type"];
    EXPECT_EQ(report["summary"]["b"]["quantized_linears"], 13);
    EXPECT_LT(report["summary"]["b"]["bits_per_weight"].get<double>(), 5.0);  // no 16-bit linear in the mean
    expectSummarySide(report["summary"]["a"], diff, true);
    expectSummarySide(report["summary"]["b"], diff, false);
}

TEST(CliDiff, TheSameFileTwiceDiffersNowhere) {
    const std::string a = q4km();
    const json report = diffJson({a, a, "--original", kDemo});
    ASSERT_EQ(report["linears"].size(), 14u);
    for (const json& l : report["linears"]) {
        EXPECT_FALSE(l["differs"].get<bool>()) << l["name"];
        EXPECT_EQ(l["rms_a_minus_b"].get<double>(), 0.0);
        EXPECT_EQ(l["a"]["rms_error"], l["b"]["rms_error"]);
    }
    EXPECT_EQ(report["summary"]["differing"], 0);
    EXPECT_EQ(report["summary"]["a"], report["summary"]["b"]);

    const json only = diffJson({a, a, "--only-differing"});
    EXPECT_TRUE(only["linears"].empty());
    EXPECT_EQ(only["summary"]["linears"], 14);  // the summary still counts every linear
    const auto text = runCli({"diff", a, a});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("\n0 of 14 linears differ; "), std::string::npos) << text.out;
}

// Q4_K_M against Q4_K_S: the same q4_K where both use it, other types for a few attn_v / ffn_down.
TEST(CliDiff, OnlyDifferingKeepsExactlyTheRowsThatDiffer) {
    const std::string a = q4km(), b = q4ks();
    const qs::formats::QuantizationDiff diff = coreDiff(a, b);
    const int differing = differingCount(diff);
    ASSERT_GT(differing, 0);
    ASSERT_LT(differing, static_cast<int>(diff.linears.size())) << "no row for the filter to hide";
    qs::formats::QuantizationDiff expected = diff;
    std::erase_if(expected.linears, [](const qs::formats::LinearDiff& d) { return !d.differs; });

    const json report = diffJson({a, b, "--only-differing"});
    expectLinearsAsCore(report["linears"], expected);
    EXPECT_EQ(report["summary"]["linears"], diff.linears.size());
    EXPECT_EQ(report["summary"]["differing"], differing);
    EXPECT_EQ(report["only_differing"], true);

    const auto all = runCli({"diff", a, b});
    const auto only = runCli({"diff", a, b, "--only-differing"});
    ASSERT_EQ(only.exitCode, 0) << only.err;
    for (const qs::formats::LinearDiff& d : diff.linears) {
        EXPECT_FALSE(lineOf(all.out, d.ref.prefix).empty()) << d.ref.prefix;
        EXPECT_EQ(lineOf(only.out, d.ref.prefix).empty(), !d.differs) << d.ref.prefix;
    }
}

// stories260K's 64-wide linears against the demo's 256: checkSameModel's message, one line, nothing on stdout.
TEST(CliDiff, AnotherModelIsRefusedInOneLine) {
    const std::string a = gptq4();
    for (const bool asJson : {false, true}) {
        std::vector<std::string> args{"diff", a, kStories};
        if (asJson) args.push_back("--json");
        const auto r = runCli(args);
        EXPECT_EQ(r.exitCode, 2);
        EXPECT_EQ(r.out, "");
        EXPECT_EQ(r.err.rfind("quantscope-cli: error: ", 0), 0u) << r.err;
        EXPECT_NE(r.err.find(kStories + " is not a quantization of the model " + a + " quantizes: "), std::string::npos)
            << r.err;
        EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    }
    const auto original = runCli({"diff", a, q4km(), "--original", kStories});
    EXPECT_EQ(original.exitCode, 2);
    EXPECT_EQ(original.out, "");
    EXPECT_EQ(original.err.find('\n'), original.err.size() - 1) << original.err;
}
