// The GUI's Evaluate on a GGUF that llama.cpp itself quantized (ctest -L interop): the demo written as
// an F32 GGUF, then llama_model_quantize to Q4_K_M (llama-quantize's own type choices and encoder),
// evaluated against the demo by `quantscope --evaluate --json` and by `quantscope-cli eval --json`. The
// two reports must be one, to the last bit but for the time taken; and the Q4_K_M must cost some KL
// where the F32 GGUF it was made from, the negative control, costs none.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace qs
