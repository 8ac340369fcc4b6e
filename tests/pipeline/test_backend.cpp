// Backend selection (no CUDA needed: a stand-in factory plays the device) and the CPU backend's
// operations, which must be exactly the core/quant functions they name.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <omp.h>

#include "qs/error.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/backend_self_check.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/pipeline/layer_statistics.h"
#include "qs/quant/awq.h"
#include "qs/quant/hessian.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/output_error.h"

#include "delegating_backend.h"

namespace qs::pipeline {
namespace {

// Restores "no CUDA backend registered" whatever a test registered.
class BackendSelectionTest : public ::testing::Test {
protected:
    void SetUp() override { registerCudaBackendFactory(nullptr); }
    void TearDown() override { registerCudaBackendFactory(nullptr); }
};

TEST(DeviceChoiceTest, ParsesTheThreeNamesAndRejectsOthers) {
    EXPECT_EQ(parseDeviceChoice("auto"), DeviceChoice::Auto);
    EXPECT_EQ(parseDeviceChoice("cpu"), DeviceChoice::Cpu);
    EXPECT_EQ(parseDeviceChoice("cuda"), DeviceChoice::Cuda);
    EXPECT_EQ(deviceChoiceName(DeviceChoice::Cuda), "cuda");
    EXPECT_THROW(parseDeviceChoice("gpu"), Error);
    EXPECT_THROW(parseDeviceChoice("CUDA"), Error);
}

TEST_F(BackendSelectionTest, AutoWithoutACudaBuildIsTheCpuAndSaysWhy) {
    EXPECT_FALSE(cudaBackendRegistered());
    const BackendSelection s = selectBackend(DeviceChoice::Auto);
    ASSERT_TRUE(s.backend);
    EXPECT_FALSE(s.backend->isCuda());
    EXPECT_NE(s.message.find("CPU ("), std::string::npos) << s.message;
    EXPECT_NE(s.message.find("no CUDA backend"), std::string::npos) << s.message;
}

TEST_F(BackendSelectionTest, ForcingCudaWithoutACudaBuildIsAnError) {
    try {
        selectBackend(DeviceChoice::Cuda);
        FAIL() << "--device cuda was accepted without a CUDA backend";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no CUDA backend"), std::string::npos) << e.what();
    }
}

TEST_F(BackendSelectionTest, AutoWithoutADeviceIsTheCpuWithTheReason) {
    registerCudaBackendFactory([](std::string& whyNot) -> std::shared_ptr<Backend> {
        whyNot = "no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)";
        return nullptr;
    });
    const BackendSelection s = selectBackend(DeviceChoice::Auto);
    EXPECT_FALSE(s.backend->isCuda());
    EXPECT_NE(s.message.find("no CUDA-capable device is detected"), std::string::npos) << s.message;
    try {
        selectBackend(DeviceChoice::Cuda);
        FAIL() << "--device cuda was accepted without a device";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--device cuda: no CUDA device"), std::string::npos) << e.what();
    }
}

TEST_F(BackendSelectionTest, AutoPrefersTheDeviceAndCpuIgnoresIt) {
    int calls = 0;
    registerCudaBackendFactory([&calls](std::string&) {
        ++calls;
        return makeCpuBackend();  // stands in for a device backend
    });
    const BackendSelection automatic = selectBackend(DeviceChoice::Auto);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(automatic.message, "device: " + automatic.backend->description()) << "a reason was given";
    selectBackend(DeviceChoice::Cpu);
    EXPECT_EQ(calls, 1) << "--device cpu asked for a device";
    const BackendSelection forced = selectBackend(DeviceChoice::Cuda);
    EXPECT_EQ(calls, 1) << "the device was built and checked again";
    EXPECT_EQ(forced.backend, automatic.backend) << "the checked device was not reused";
    // A new registration is a new device: it is built and checked afresh.
    registerCudaBackendFactory([&calls](std::string&) {
        calls += 10;
        return makeCpuBackend();
    });
    EXPECT_NE(selectBackend(DeviceChoice::Auto).backend, automatic.backend);
    EXPECT_EQ(calls, 11);
}

// A stand-in device: the CPU backend with one operation's result altered by `tamper` (for "awq", each
// linear of the result), and AWQ's whole result by `awqTamper` when given.
class TamperedBackend final : public Backend {
public:
    using Tamper = std::function<void(const char* operation, quant::QuantizedLinear&)>;
    using AwqTamper = std::function<void(quant::AwqResult&)>;
    explicit TamperedBackend(Tamper tamper, AwqTamper awqTamper = {})
        : cpu_(makeCpuBackend()), tamper_(std::move(tamper)), awqTamper_(std::move(awqTamper)) {}

    std::string description() const override { return "stand-in device"; }
    bool isCuda() const override { return true; }
    std::int64_t freeMemoryBytes() const override { return cpu_->freeMemoryBytes(); }
    std::unique_ptr<HessianSink> hessian(std::int64_t features) const override { return cpu_->hessian(features); }
    std::unique_ptr<DiagonalSink> hessianDiagonal(std::int64_t features) const override {
        return cpu_->hessianDiagonal(features);
    }
    quant::QuantizedLinear gptq(const MatrixF& w, const MatrixF& h, const quant::GptqOptions& o) const override {
        return altered("gptq", cpu_->gptq(w, h, o));
    }
    quant::QuantizedLinear fp8(const MatrixF& w, quant::Fp8Scaling s, int block) const override {
        return altered("fp8", cpu_->fp8(w, s, block));
    }
    quant::QuantizedLinear mxfp4(const MatrixF& w) const override { return altered("mxfp4", cpu_->mxfp4(w)); }
    quant::QuantizedLinear nvfp4(const MatrixF& w) const override { return altered("nvfp4", cpu_->nvfp4(w)); }
    quant::QuantizedLinear nf4(const MatrixF& w, const quant::Nf4Options& o) const override {
        return altered("nf4", cpu_->nf4(w, o));
    }
    quant::QuantizedLinear trellis(const MatrixF& w, const quant::TrellisOptions& o) const override {
        return altered("trellis", cpu_->trellis(w, o));
    }
    quant::AwqResult awq(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                         const quant::AwqOptions& o) const override {
        quant::AwqResult result = cpu_->awq(weights, meanAbs, h, o);
        for (quant::QuantizedLinear& q : result.linears) tamper_("awq", q);
        if (awqTamper_) awqTamper_(result);
        return result;
    }
    MatrixF decode(const quant::QuantizedLinear& q) const override { return cpu_->decode(q); }

private:
    quant::QuantizedLinear altered(const char* operation, quant::QuantizedLinear q) const {
        tamper_(operation, q);
        return q;
    }
    std::shared_ptr<Backend> cpu_;
    Tamper tamper_;
    AwqTamper awqTamper_;
};

void untouched(const char*, quant::QuantizedLinear&) {}

// Changes the code of every `stride`-th weight of `operation`'s result (staying a valid code).
TamperedBackend::Tamper changeCodes(std::string operation, std::size_t stride) {
    return [operation, stride](const char* op, quant::QuantizedLinear& q) {
        if (operation != op) return;
        for (std::size_t i = 0; i < q.codes.size(); i += stride) q.codes[i] ^= 1;
    };
}

TEST(BackendSelfCheckTest, TheCpuAgreesWithItself) { EXPECT_EQ(backendSelfCheck(*makeCpuBackend()), ""); }

TEST(BackendSelfCheckTest, AnyChangedEncoderCodeIsCaught) {
    for (const char* op : {"fp8", "mxfp4", "nvfp4", "nf4", "trellis", "awq"}) {
        const std::string why = backendSelfCheck(TamperedBackend(changeCodes(op, 100000)));
        EXPECT_NE(why.find("codes differ"), std::string::npos) << op << ": " << why;
    }
}

TEST(BackendSelfCheckTest, GptqIsAllowedItsStatedToleranceAndNoMore) {
    // 128 x 256 weights: one code in 32768 changed is within 99.9 %; one in 500 (66 codes) is not.
    EXPECT_EQ(backendSelfCheck(TamperedBackend(changeCodes("gptq", 32768))), "");
    const std::string why = backendSelfCheck(TamperedBackend(changeCodes("gptq", 500)));
    EXPECT_NE(why.find("GPTQ codes agree on only 99.79"), std::string::npos) << why;
}

TEST(BackendSelfCheckTest, AwqGridErrorsAreAllowed1e4AndNoMore) {
    const auto scaleGrid = [](double factor) {
        return [factor](quant::AwqResult& r) {
            for (double& e : r.gridError) e *= factor;
        };
    };
    EXPECT_EQ(backendSelfCheck(TamperedBackend(untouched, scaleGrid(1.0 + 5e-5))), "");
    const std::string why = backendSelfCheck(TamperedBackend(untouched, scaleGrid(1.0 + 2e-4)));
    EXPECT_NE(why.find("AWQ grid error differs at α = 0.000000 by more than 1e-4"), std::string::npos) << why;
}

TEST(BackendSelfCheckTest, AnotherAwqAlphaIsCaught) {
    const std::string why = backendSelfCheck(TamperedBackend(untouched, [](quant::AwqResult& r) { r.alpha += 0.05; }));
    EXPECT_NE(why.find("AWQ chose α = "), std::string::npos) << why;
    const std::string symmetric = backendSelfCheck(TamperedBackend(untouched, [](quant::AwqResult& r) {
        if (r.linears.front().symmetric) r.alpha += 0.05;
    }));
    EXPECT_NE(symmetric.find("AWQ (symmetric) chose α = "), std::string::npos) << symmetric;
}

// A device whose Hessian diagonal is off by one unit in the last place of one channel.
class SkewedDiagonalBackend final : public test::DelegatingBackend {
    class Sink final : public DiagonalSink {
    public:
        explicit Sink(std::unique_ptr<DiagonalSink> inner) : inner_(std::move(inner)) {}
        void add(const Eigen::Ref<const MatrixF>& x) override { inner_->add(x); }
        std::int64_t samples() const override { return inner_->samples(); }
        VectorD finalize() const override {
            VectorD d = inner_->finalize();
            d(5) = std::nextafter(d(5), 1e300);
            return d;
        }

    private:
        std::unique_ptr<DiagonalSink> inner_;
    };

public:
    bool isCuda() const override { return true; }
    std::unique_ptr<DiagonalSink> hessianDiagonal(std::int64_t features) const override {
        return std::make_unique<Sink>(DelegatingBackend::hessianDiagonal(features));
    }
};

TEST(BackendSelfCheckTest, TheHessianDiagonalMustAgreeBitForBit) {
    EXPECT_EQ(backendSelfCheck(SkewedDiagonalBackend()), "the Hessian diagonal differs");
}

TEST(BackendSelfCheckTest, AnOperationThatThrowsIsReported) {
    const std::string why = backendSelfCheck(TamperedBackend([](const char* op, quant::QuantizedLinear&) {
        if (std::string(op) == "nvfp4") throw Error("cudaLaunchKernel: no kernel image is available for execution");
    }));
    EXPECT_NE(why.find("no kernel image"), std::string::npos) << why;
}

TEST_F(BackendSelectionTest, ADeviceThatFailsItsCheckIsNotTrusted) {
    registerCudaBackendFactory([](std::string&) -> std::shared_ptr<Backend> {
        return std::make_shared<TamperedBackend>(changeCodes("mxfp4", 7));
    });
    const BackendSelection s = selectBackend(DeviceChoice::Auto);
    EXPECT_FALSE(s.backend->isCuda()) << "Auto kept a device that disagrees with the CPU";
    EXPECT_NE(s.message.find("CPU ("), std::string::npos) << s.message;
    EXPECT_NE(s.message.find("stand-in device failed its start-up check against the CPU: MXFP4 codes differ"),
              std::string::npos)
        << s.message;
    try {
        selectBackend(DeviceChoice::Cuda);
        FAIL() << "--device cuda was accepted from a device that failed its check";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--device cuda: stand-in device failed"), std::string::npos) << e.what();
    }
}

// The CPU's forward pass with every linear's output scaled by 1 + skew.
class SkewedMath final : public model::LayerMath {
public:
    explicit SkewedMath(float skew) : skew_(skew) {}
    std::string_view name() const override { return "skewed"; }
    MatrixF linear(const MatrixF& x, const model::Linear& l) const override {
        return model::cpuLayerMath().linear(x, l) * (1.0f + skew_);
    }
    MatrixF attention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                      const Eigen::Ref<const MatrixF>& v, const model::AttentionShape& shape) const override {
        return model::cpuLayerMath().attention(q, k, v, shape);
    }

private:
    float skew_;
};

class BackendWithMath final : public test::DelegatingBackend {
public:
    explicit BackendWithMath(float skew) : math_(std::make_shared<SkewedMath>(skew)) {}
    std::shared_ptr<const model::LayerMath> layerMath() const override { return math_; }

private:
    std::shared_ptr<const model::LayerMath> math_;
};

TEST(BackendSelfCheckTest, TheForwardPassIsAllowed1e5AndNoMore) {
    EXPECT_EQ(backendSelfCheck(BackendWithMath(2e-6f)), "");
    const std::string why = backendSelfCheck(BackendWithMath(3e-5f));
    EXPECT_NE(why.find("a linear differs by"), std::string::npos) << why;
}

TEST(CpuBackendTest, DescribesItsThreads) {
    const auto cpu = makeCpuBackend();
    EXPECT_EQ(cpu->description().rfind("CPU (", 0), 0u);
    const int threads = omp_get_max_threads();
    EXPECT_NE(cpu->description().find(std::to_string(threads) + (threads == 1 ? " thread)" : " threads)")),
              std::string::npos)
        << cpu->description();
    EXPECT_GT(cpu->freeMemoryBytes(), 0);
}

TEST(CpuBackendTest, RunsTheCoreFunctions) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    MatrixF x(300, 64), w(32, 64);
    for (std::int64_t i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
    for (std::int64_t i = 0; i < w.size(); ++i) w.data()[i] = 0.02f * normal(rng);
    const auto cpu = makeCpuBackend();

    auto sink = cpu->hessian(64);
    sink->add(x, 100);
    quant::HessianAccumulator reference(64);
    reference.add(x, 100);
    EXPECT_EQ(sink->finalize(), reference.finalize());
    EXPECT_EQ(sink->meanAbs(), reference.meanAbs());
    EXPECT_EQ(sink->samples(), 300);

    const MatrixF h = reference.finalize();
    quant::GptqOptions o;
    o.groupSize = 32;
    EXPECT_EQ(cpu->gptq(w, h, o).codes, quant::quantizeGptq(w, h, o).codes);
    const auto mx = cpu->mxfp4(w);
    EXPECT_EQ(mx.codes, quant::quantizeMxfp4(w).codes);
    EXPECT_EQ(cpu->decode(mx), quant::dequantizeMxfp4(mx));
    EXPECT_EQ(cpu->fp8(w, quant::Fp8Scaling::PerChannel, 128).scales,
              quant::quantizeFp8(w, quant::Fp8Scaling::PerChannel, 128).scales);
}

MatrixF normalMatrix(std::int64_t rows, std::int64_t cols, float sigma, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, sigma);
    MatrixF m(rows, cols);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

// Inputs with a shared component and one outlier channel, so that the AWQ search moves off α = 0.
MatrixF awqInputs(std::int64_t tokens, std::int64_t features, std::mt19937& rng) {
    MatrixF x = normalMatrix(tokens, features, 0.5f, rng);
    x.colwise() += normalMatrix(tokens, 1, 1.0f, rng).col(0);
    x.col(1) *= 10.0f;
    return x;
}

TEST(AwqFromGridErrorsTest, FinishesExactlyAsTheCpuSearch) {
    std::mt19937 rng(9);
    const MatrixF x = awqInputs(400, 64, rng);
    const MatrixF a = normalMatrix(24, 64, 0.02f, rng), b = normalMatrix(16, 64, 0.02f, rng);
    const std::vector<const MatrixF*> weights{&a, &b};
    quant::HessianAccumulator acc(64);
    acc.add(x);
    const MatrixF h = acc.finalize();
    const quant::AwqOptions o{.groupSize = 32, .clipSearch = true};
    const quant::AwqResult cpu = quant::quantizeAwqFromStats(weights, acc.meanAbs(), h, o);
    ASSERT_GT(cpu.alpha, 0.0);
    const quant::AwqResult finished = quant::awqFromGridErrors(weights, acc.meanAbs(), h, cpu.gridError, o);
    EXPECT_EQ(finished.alpha, cpu.alpha);
    EXPECT_EQ(finished.scales, cpu.scales);
    EXPECT_EQ(finished.gridError, cpu.gridError);
    for (std::size_t i = 0; i < weights.size(); ++i) {
        EXPECT_EQ(finished.linears[i].codes, cpu.linears[i].codes);
        EXPECT_EQ(finished.linears[i].scales, cpu.linears[i].scales);
        EXPECT_EQ(finished.linears[i].outputMse, cpu.linears[i].outputMse);
        EXPECT_EQ(finished.linears[i].outputError, cpu.linears[i].outputError);
    }
    // The grid decides: a strict minimum at step 7, and a tie between steps 3 and 5 keeps step 3.
    std::vector<double> grid(20, 1.0);
    grid[7] = 0.5;
    const quant::AwqResult seven = quant::awqFromGridErrors(weights, acc.meanAbs(), h, grid, o);
    EXPECT_EQ(seven.alpha, 0.35);
    EXPECT_EQ(seven.linears[0].inputScales, quant::awqScales(acc.meanAbs(), 0.35));
    grid[7] = 1.0;
    grid[3] = grid[5] = 0.25;
    EXPECT_EQ(quant::awqFromGridErrors(weights, acc.meanAbs(), h, grid, o).alpha, 0.15);
    EXPECT_THROW(quant::awqFromGridErrors(weights, acc.meanAbs(), h, std::vector<double>(19, 1.0), o), Error);
}

TEST(AwqFromGridErrorsTest, OutputErrorsComeFromTheGivenQuadraticForm) {
    std::mt19937 rng(10);
    const MatrixF x = awqInputs(300, 64, rng);
    const MatrixF a = normalMatrix(24, 64, 0.02f, rng);
    const std::vector<const MatrixF*> weights{&a};
    quant::HessianAccumulator acc(64);
    acc.add(x);
    const MatrixF h = acc.finalize();
    const quant::AwqOptions o{.groupSize = 32};
    const quant::AwqResult cpu = quant::quantizeAwqFromStats(weights, acc.meanAbs(), h, o);
    int calls = 0;
    // A device's form: here the CPU's, doubled, so that its use shows in the result.
    const quant::AwqResult viaForm =
        quant::awqFromGridErrors(weights, acc.meanAbs(), h, cpu.gridError, o, [&](const MatrixF& d) {
            ++calls;
            return 2.0 * quant::hessianQuadratic(d, h);
        });
    EXPECT_EQ(calls, 2) << "the error and its reference, once per weight";
    EXPECT_EQ(viaForm.linears[0].codes, cpu.linears[0].codes);
    EXPECT_DOUBLE_EQ(viaForm.linears[0].outputMse, 2.0 * cpu.linears[0].outputMse);
    EXPECT_DOUBLE_EQ(viaForm.linears[0].outputError, cpu.linears[0].outputError);  // a ratio: the factor cancels
}

constexpr std::array<std::string_view, 3> kQkv{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"};
constexpr std::array<std::string_view, 1> kO{"self_attn.o_proj"};
constexpr std::array<std::string_view, 2> kGateUp{"mlp.gate_proj", "mlp.up_proj"};
constexpr std::array<std::string_view, 1> kDown{"mlp.down_proj"};

TEST(BackendAwqTest, QuantizeLayerSearchesThroughTheBackend) {
    std::mt19937 rng(4);
    LayerStatistics stats;
    const auto hook = stats.hook();
    hook({0, kQkv, awqInputs(90, 32, rng)});
    hook({0, kO, awqInputs(90, 32, rng)});
    hook({0, kGateUp, awqInputs(90, 32, rng)});
    hook({0, kDown, awqInputs(90, 64, rng)});
    model::LayerWeights w;
    w.inputNorm = w.postAttentionNorm = VectorF::Ones(32);
    w.q.weight = normalMatrix(32, 32, 0.02f, rng);
    w.k.weight = normalMatrix(16, 32, 0.02f, rng);
    w.v.weight = normalMatrix(16, 32, 0.02f, rng);
    w.o.weight = normalMatrix(32, 32, 0.02f, rng);
    w.gate.weight = normalMatrix(64, 32, 0.02f, rng);
    w.up.weight = normalMatrix(64, 32, 0.02f, rng);
    w.down.weight = normalMatrix(32, 64, 0.02f, rng);
    int calls = 0;
    const TamperedBackend backend(changeCodes("awq", 1), [&calls](quant::AwqResult&) { ++calls; });
    const MethodSpec method = parseMethod("awq4", 16);
    const QuantizedLayer viaBackend = quantizeLayer(method, w, stats, 7, CancelToken{}, &backend);
    EXPECT_EQ(calls, 4) << "one search per input: q/k/v, o, gate/up, down";
    const QuantizedLayer onCpu = quantizeLayer(method, w, stats, 7, CancelToken{});
    ASSERT_EQ(viaBackend.size(), 7u);
    for (const auto& [module, q] : onCpu) {
        std::vector<std::uint8_t> flipped = q->codes;
        for (std::uint8_t& code : flipped) code ^= 1;
        EXPECT_EQ(viaBackend.at(module)->codes, flipped) << module << ": the backend's result was not used";
    }
}

}  // namespace
}  // namespace qs::pipeline
