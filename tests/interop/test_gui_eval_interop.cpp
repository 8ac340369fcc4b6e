// The GUI's Evaluate on a GGUF that llama.cpp itself quantized (ctest -L interop): the demo written as
// an F32 GGUF, then llama_model_quantize to Q4_K_M (llama-quantize's own type choices and encoder),
// evaluated against the demo by `quantscope --evaluate --json` and by `quantscope-cli eval --json`. The
// two reports must be one, to the last bit but for the time taken; and the Q4_K_M must cost some KL
// where the F32 GGUF it was made from, the negative control, costs none. Then ours beside llama.cpp's,
// as the Side by side tab compares them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "qs/formats/quantization_diff.h"
#include "qs/io/checkpoint.h"

#include "llama_libraries.h"

namespace qs {
namespace {

namespace fs = std::filesystem;

const fs::path kDemo = fs::path(QS_RESOURCES_DIR) / "demo";

int run(const std::string& command) { return std::system((command + " > /dev/null 2>&1").c_str()); }

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

nlohmann::json readJson(const fs::path& path) {
    std::ifstream in(path);
    return in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
}

class GuiEvalInterop : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / ("qs-gui-eval-" + std::to_string(::getpid()));
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }

    // `quantscope-cli eval DEMO QUANTIZED --json`, without its time.
    nlohmann::json cliReport(const fs::path& quantized) {
        const fs::path cli = dir / (quantized.stem().string() + "-cli.json");
        EXPECT_EQ(
            run(quoted(QS_CLI_EXE) + " eval " + quoted(kDemo) + " " + quoted(quantized) + " --json " + quoted(cli)), 0);
        nlohmann::json c = readJson(cli);
        c.erase("time_s");
        return c;
    }

    // `quantscope --original DEMO --evaluate --json`, without its time.
    nlohmann::json guiReport(const fs::path& quantized) {
        const fs::path gui = dir / (quantized.stem().string() + "-gui.json");
        EXPECT_EQ(run("QT_QPA_PLATFORM=offscreen " + quoted(QS_QUANTSCOPE_EXE) + " --original " + quoted(kDemo) +
                      " --evaluate --json " + quoted(gui) + " --screenshot " + quoted(dir / "results.png") +
                      " --tab results --size 1366x768 --timeout 300 " + quoted(quantized)),
                  0);
        nlohmann::json g = readJson(gui);
        g.erase("time_s");
        return g;
    }

    fs::path dir;
};

TEST_F(GuiEvalInterop, LlamaCppsOwnQ4KMIsEvaluatedByTheAppAsByTheCli) {
    const fs::path f32 = dir / "demo-f32.gguf", q4km = dir / "demo-Q4_K_M.gguf";
    ASSERT_EQ(run(quoted(QS_CLI_EXE) + " dequantize " + quoted(kDemo) + " --out " + quoted(f32) + " --dtype f32"), 0);
    const interop::LlamaQuantizer quantizer;  // fails, saying how to install it, when llama.cpp is missing
    quantizer.quantize(f32, q4km, 15, 2);     // 15: LLAMA_FTYPE_MOSTLY_Q4_K_M

    const nlohmann::json gui = guiReport(q4km), cli = cliReport(q4km);
    ASSERT_TRUE(cli.contains("kl"));
    EXPECT_EQ(gui, cli);
    EXPECT_EQ(gui["quantized_format"], "gguf (Q4_K_M)");
    EXPECT_GT(gui["kl"]["mean_kld"]["value"].get<double>(), 0.0);
    EXPECT_EQ(cliReport(f32)["kl"]["mean_kld"]["value"].get<double>(), 0.0);
}

// The Side by side tab's comparison of ours against llama.cpp's Q4_K_M, weighted by the same importance
// (our calibration, as our imatrix file): llama-quantize's mix, so the same ggml type and bits per weight
// for every linear, and errors against the original within 2 % of each other (each K-quant search its
// own: they differ); llama.cpp's file against a second run of llama-quantize, the negative control,
// differs nowhere. `quantscope --second` shows the first.
TEST_F(GuiEvalInterop, OursAgainstLlamaCppsQ4KMSideBySide) {
    const fs::path f32 = dir / "demo-f32.gguf", ours = dir / "ours-q4_k_m.gguf", imatrix = dir / "demo.imatrix.gguf";
    ASSERT_EQ(run(quoted(QS_CLI_EXE) + " dequantize " + quoted(kDemo) + " --out " + quoted(f32) + " --dtype f32"), 0);
    ASSERT_EQ(run(quoted(QS_CLI_EXE) + " quantize " + quoted(kDemo) + " --method q4_k_m --imatrix-out " +
                  quoted(imatrix) + " --out " + quoted(ours)),
              0);
    const auto importance = interop::loadImatrixAsLlamaQuantize(imatrix);
    const interop::LlamaQuantizer quantizer;
    const fs::path theirs = dir / "llama-Q4_K_M.gguf", again = dir / "llama-Q4_K_M-again.gguf";
    quantizer.quantize(f32, theirs, 15, 2, &importance);  // 15: LLAMA_FTYPE_MOSTLY_Q4_K_M
    quantizer.quantize(f32, again, 15, 1, &importance);

    const io::Checkpoint a = io::Checkpoint::open(ours), b = io::Checkpoint::open(theirs),
                         c = io::Checkpoint::open(again), o = io::Checkpoint::open(kDemo);
    const formats::LinearReader ra(a), rb(b), rc(c), ro(o);
    const formats::QuantizationDiff diff = formats::diffQuantizations(ra, rb, &ro, {}, CancelToken());
    ASSERT_EQ(diff.linears.size(), 14u);  // 7 linears x 2 layers
    for (const formats::LinearDiff& d : diff.linears) {
        SCOPED_TRACE(d.ref.prefix);
        EXPECT_EQ(d.typeA, d.typeB);
        EXPECT_EQ(d.bitsA, d.bitsB);
        EXPECT_TRUE(d.differs);
        EXPECT_NEAR(*d.errorA, *d.errorB, 0.02 * *d.errorB);
    }
    for (const formats::LinearDiff& d : formats::diffQuantizations(rb, rc, nullptr, {}, CancelToken()).linears) {
        EXPECT_FALSE(d.differs) << d.ref.prefix;
        EXPECT_EQ(d.rmsAMinusB, 0.0) << d.ref.prefix;
    }
    EXPECT_EQ(run("QT_QPA_PLATFORM=offscreen " + quoted(QS_QUANTSCOPE_EXE) + " --second " + quoted(theirs) +
                  " --original " + quoted(kDemo) + " --tab side-by-side --size 1366x768 --screenshot " +
                  quoted(dir / "side.png") + " " + quoted(ours)),
              0);
}

}  // namespace
}  // namespace qs
