// The start-up check a device backend passes before Auto trusts it: every operation on small
// seeded inputs, compared with the CPU backend under the tolerances tests/gpu states for it.
// Kernels that have never run on a given device (a new architecture, a driver bug) then cost the
// user a line saying so, not a silently wrong checkpoint.
#include "qs/pipeline/backend_self_check.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "qs/error.h"

namespace qs::pipeline {
namespace {

MatrixF seededNormal(std::int64_t rows, std::int64_t cols, float sigma, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    MatrixF m(rows, cols);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

// Inputs with correlated channels and two outlier channels, like a real linear's activations.
MatrixF calibrationInputs(std::int64_t tokens, std::int64_t features) {
    MatrixF x = seededNormal(tokens, features, 1.0f, 17);
    x.rightCols(features - 1) += 0.5f * x.leftCols(features - 1);
    x.col(3) *= 8.0f;
    x.col(features / 2) *= 8.0f;
    return x;
}

bool sameBits(const MatrixF& a, const MatrixF& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0;
}

double relativeDifference(const MatrixF& a, const MatrixF& b) {
    const double reference = b.norm();
    return reference > 0 ? (a - b).norm() / reference : (a - b).norm();
}

// "" when the device's float result is within 1e-5 of the CPU's (relative), else what differs by how much.
std::string floatMismatch(const std::string& what, const MatrixF& device, const MatrixF& cpu) {
    const double diff = relativeDifference(device, cpu);
    return diff < 1e-5 ? std::string() : what + " differs by " + std::to_string(diff) + " (relative; 1e-5 allowed)";
}

double codeAgreement(const quant::QuantizedLinear& a, const quant::QuantizedLinear& b) {
    if (a.codes.size() != b.codes.size() || a.codes.empty()) return 0.0;
    std::size_t same = 0;
    for (std::size_t i = 0; i < a.codes.size(); ++i) same += a.codes[i] == b.codes[i];
    return static_cast<double>(same) / static_cast<double>(a.codes.size());
}

// "" when the parts agree bit for bit, else what differs.
std::string exactMismatch(const char* what, const quant::QuantizedLinear& device, const quant::QuantizedLinear& cpu) {
    if (device.codes != cpu.codes)
        return std::string(what) + " codes differ on " + std::to_string(100.0 * (1.0 - codeAgreement(device, cpu))) +
               " % of the weights";
    if (!sameBits(device.scales, cpu.scales)) return std::string(what) + " scales differ";
    if (device.globalScale != cpu.globalScale) return std::string(what) + " global scale differs";
    return {};
}

std::string checkHessian(const Backend& device, const Backend& cpu, const MatrixF& x, MatrixF& h) {
    auto d = device.hessian(x.cols());
    auto c = cpu.hessian(x.cols());
    d->add(x, 256);
    c->add(x, 256);
    h = c->finalize();
    if (std::string why = floatMismatch("Hessian", d->finalize(), h); !why.empty()) return why;
    if (d->samples() != c->samples()) return "Hessian counted " + std::to_string(d->samples()) + " samples";
    return {};
}

// diag(H) alone: f64 sums of exact squares in the same order on both, so the same bits.
std::string checkDiagonal(const Backend& device, const Backend& cpu, const MatrixF& x) {
    auto d = device.hessianDiagonal(x.cols());
    auto c = cpu.hessianDiagonal(x.cols());
    for (auto* sink : {d.get(), c.get()}) {
        sink->add(x.topRows(200));
        sink->add(x.bottomRows(x.rows() - 200));
    }
    if (d->samples() != c->samples())
        return "the Hessian diagonal counted " + std::to_string(d->samples()) + " samples";
    return d->finalize() == c->finalize() ? std::string() : "the Hessian diagonal differs";
}

std::string checkGptq(const Backend& device, const Backend& cpu, const MatrixF& w, const MatrixF& h) {
    quant::GptqOptions o;
    o.groupSize = 32;
    o.actOrder = true;
    const auto d = device.gptq(w, h, o);
    const auto c = cpu.gptq(w, h, o);
    const double agreement = codeAgreement(d, c);
    if (!(agreement >= 0.999)) return "GPTQ codes agree on only " + std::to_string(100.0 * agreement) + " %";
    if (d.gIdx != c.gIdx) return "GPTQ act-order groups differ";
    if (!(std::abs(d.gptqLoss - c.gptqLoss) <= 0.01 * std::abs(c.gptqLoss)))
        return "GPTQ loss differs by more than 1 %";
    return {};
}

std::string checkFormats(const Backend& device, const Backend& cpu, const MatrixF& w) {
    const quant::QuantizedLinear fp8 = device.fp8(w, quant::Fp8Scaling::Block, 128);
    std::string why = exactMismatch("FP8", fp8, cpu.fp8(w, quant::Fp8Scaling::Block, 128));
    if (why.empty()) why = exactMismatch("MXFP4", device.mxfp4(w), cpu.mxfp4(w));
    if (why.empty()) why = exactMismatch("NVFP4", device.nvfp4(w), cpu.nvfp4(w));
    if (why.empty()) why = exactMismatch("NF4", device.nf4(w, {}), cpu.nf4(w, {}));
    if (why.empty() && !sameBits(device.decode(fp8), cpu.decode(fp8))) why = "FP8 decoding differs";
    return why;
}

std::string checkTrellis(const Backend& device, const Backend& cpu, const MatrixF& w) {
    quant::TrellisOptions o;
    o.L = 8;
    o.K = 2;
    o.seed = 3;
    const auto d = device.trellis(w, o);
    const auto c = cpu.trellis(w, o);
    std::string why = exactMismatch("trellis", d, c);
    if (why.empty() && d.trellis.starts != c.trellis.starts) why = "trellis start states differ";
    return why;
}

// The device may search the α grid in another summation order, never pick another α or code.
std::string checkAwq(const Backend& device, const Backend& cpu, const MatrixF& x, const MatrixF& h) {
    const MatrixF gate = seededNormal(96, 256, 0.02f, 31), up = seededNormal(64, 256, 0.02f, 37);
    const std::vector<const MatrixF*> weights{&gate, &up};
    const VectorF meanAbs = x.cwiseAbs().colwise().mean().transpose();
    for (const bool sym : {false, true}) {
        const quant::AwqOptions o{.groupSize = 64, .sym = sym};
        const auto d = device.awq(weights, meanAbs, h, o);
        const auto c = cpu.awq(weights, meanAbs, h, o);
        const std::string what = sym ? "AWQ (symmetric)" : "AWQ";
        if (d.gridError.size() != c.gridError.size()) return what + " searched another grid";
        for (std::size_t i = 0; i < c.gridError.size(); ++i)
            if (!(std::abs(d.gridError[i] - c.gridError[i]) <= 1e-4 * std::abs(c.gridError[i])))
                return what + " grid error differs at α = " + std::to_string(double(i) / double(c.gridError.size())) +
                       " by more than 1e-4 (relative)";
        if (d.alpha != c.alpha)
            return what + " chose α = " + std::to_string(d.alpha) + ", the CPU " + std::to_string(c.alpha);
        if (d.linears.size() != c.linears.size())
            return what + " returned " + std::to_string(d.linears.size()) + " linears";
        for (std::size_t i = 0; i < c.linears.size(); ++i)
            if (std::string why = exactMismatch(what.c_str(), d.linears[i], c.linears[i]); !why.empty()) return why;
    }
    return {};
}

// The forward pass's linears and attention in another summation order: within 1e-5 (relative).
std::string checkLayerMath(const Backend& device, const MatrixF& x, const MatrixF& w) {
    const std::shared_ptr<const model::LayerMath> math = device.layerMath();
    if (!math) return {};  // its forward passes run on the CPU
    const model::LayerMath& cpu = model::cpuLayerMath();
    model::Linear linear;
    linear.weight = w;
    linear.bias = seededNormal(w.rows(), 1, 1.0f, 41).col(0);
    std::string why = floatMismatch("a linear", math->linear(x, linear), cpu.linear(x, linear));
    model::Linear up;
    up.weight = seededNormal(w.rows(), w.cols(), 0.02f, 43);
    if (why.empty())
        why =
            floatMismatch("the MLP's SiLU product", math->gatedProduct(x, linear, up), cpu.gatedProduct(x, linear, up));
    // 4 query heads on 2 KV heads of 32 dimensions, 300 positions (more than one 128-key step), a window.
    const MatrixF q = x.topRows(300).leftCols(128), k = x.bottomRows(300).leftCols(64),
                  v = x.bottomRows(300).rightCols(64);
    for (const int window : {0, 100}) {
        const model::AttentionShape shape{4, 2, 32, window};
        if (why.empty())
            why = floatMismatch("attention", math->attention(q, k, v, shape), cpu.attention(q, k, v, shape));
    }
    return why;
}

}  // namespace

std::string backendSelfCheck(const Backend& device) {
    const auto cpu = makeCpuBackend();
    try {
        const MatrixF x = calibrationInputs(512, 256);
        const MatrixF w = seededNormal(128, 256, 0.02f, 29);
        MatrixF h;
        std::string why = checkHessian(device, *cpu, x, h);
        if (why.empty()) why = checkDiagonal(device, *cpu, x);
        if (why.empty()) why = checkGptq(device, *cpu, w, h);
        if (why.empty()) why = checkAwq(device, *cpu, x, h);
        if (why.empty()) why = checkFormats(device, *cpu, w);
        if (why.empty()) why = checkTrellis(device, *cpu, w.topRows(4));
        if (why.empty()) why = checkLayerMath(device, x, w);
        return why;
    } catch (const std::exception& e) {
        return std::string("it failed: ") + e.what();
    }
}

}  // namespace qs::pipeline
