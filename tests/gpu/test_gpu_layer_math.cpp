// The forward pass on the device (cuBLAS SGEMM without TF32, the fused attention kernel) against the
// CPU's LayerMath on the same inputs: within 1e-5 relative (f32 sums in a different order).
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "qs/error.h"
#include "qs/model/layer_math.h"

#include "gpu_test_support.h"

namespace qs::gpu::test {
namespace {

class GpuLayerMath : public GpuParity {
protected:
    const model::LayerMath& device() const { return *cuda().layerMath(); }
    const model::LayerMath& host() const { return model::cpuLayerMath(); }
};

double relativeDifference(const MatrixF& a, const MatrixF& b) {
    return (a.cast<double>() - b.cast<double>()).norm() / b.cast<double>().norm();
}

model::Linear randomLinear(std::int64_t out, std::int64_t in, bool bias, std::uint32_t seed) {
    model::Linear l;
    l.weight = gaussian(out, in, seed, 0.05f);
    if (bias) l.bias = gaussian(out, 1, seed + 1).col(0);
    return l;
}

TEST_F(GpuLayerMath, TheCudaBackendHasOne) {
    ASSERT_NE(cuda().layerMath(), nullptr);
    EXPECT_EQ(device().name(), "CUDA");
}

TEST_F(GpuLayerMath, LinearMatchesTheCpuWithAndWithoutBias) {
    const MatrixF x = gaussian(257, 384, 3);
    for (bool bias : {false, true}) {
        const model::Linear l = randomLinear(200, 384, bias, 4);
        EXPECT_LT(relativeDifference(device().linear(x, l), host().linear(x, l)), 1e-5) << "bias " << bias;
    }
}

TEST_F(GpuLayerMath, SharedInputLinearsTheGatedProductAndPlainProductsMatchTheCpu) {
    const MatrixF x = gaussian(130, 256, 13);
    const model::Linear q = randomLinear(192, 256, true, 14), k = randomLinear(64, 256, true, 15);
    const std::array<const model::Linear*, 2> both{&q, &k};
    const auto got = device().linears(x, both), want = host().linears(x, both);
    ASSERT_EQ(got.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) EXPECT_LT(relativeDifference(got[i], want[i]), 1e-5) << i;
    const model::Linear gate = randomLinear(320, 256, false, 16), up = randomLinear(320, 256, false, 17);
    EXPECT_LT(relativeDifference(device().gatedProduct(x, gate, up), host().gatedProduct(x, gate, up)), 1e-5);
    EXPECT_LT(relativeDifference(device().product(x, up.weight), host().product(x, up.weight)), 1e-5);  // lm_head's
}

TEST_F(GpuLayerMath, ResidentWeightsGiveTheSameResultAndAreDroppedWithTheirScope) {
    model::LayerWeights w;
    w.q = randomLinear(64, 48, true, 5);
    w.k = randomLinear(32, 48, true, 6);
    w.v = randomLinear(32, 48, true, 7);
    w.o = randomLinear(48, 64, false, 8);
    w.gate = randomLinear(96, 48, false, 9);
    w.up = randomLinear(96, 48, false, 10);
    w.down = randomLinear(48, 96, false, 11);
    const MatrixF x = gaussian(33, 48, 12);
    const MatrixF reference = host().linear(x, w.gate);
    {
        const auto scope = device().keepResident(w);
        EXPECT_LT(relativeDifference(device().linear(x, w.gate), reference), 1e-5);
        EXPECT_LT(relativeDifference(device().linear(x, w.q), host().linear(x, w.q)), 1e-5);
    }
    // After the scope the host weight may change: the device must read the new one, not a stale copy.
    w.gate.weight *= 2.0f;
    EXPECT_LT(relativeDifference(device().linear(x, w.gate), host().linear(x, w.gate)), 1e-5);
}

struct AttentionCase {
    int heads, kvHeads, headDim, window;
    std::int64_t queries, keys;
};

TEST_F(GpuLayerMath, AttentionMatchesTheCpu) {
    const std::vector<AttentionCase> cases = {
        {4, 4, 64, 0, 300, 300},   // multi-head, more keys than one 128-key step
        {8, 2, 128, 0, 200, 200},  // grouped-query, Llama's head size
        {4, 1, 6, 0, 40, 40},      // multi-query, a head narrower than a warp
        {4, 2, 96, 50, 260, 260},  // sliding window
        {4, 2, 64, 0, 3, 131},     // a KV cache: the queries are the last 3 of 131 positions
        {2, 2, 256, 0, 20, 20},    // wide heads: two dimensions per thread
    };
    std::uint32_t seed = 20;
    for (const AttentionCase& c : cases) {
        const MatrixF q = gaussian(c.queries, std::int64_t(c.heads) * c.headDim, seed++);
        const MatrixF k = gaussian(c.keys, std::int64_t(c.kvHeads) * c.headDim, seed++);
        const MatrixF v = gaussian(c.keys, std::int64_t(c.kvHeads) * c.headDim, seed++);
        const model::AttentionShape shape{c.heads, c.kvHeads, c.headDim, c.window};
        const MatrixF got = device().attention(q, k, v, shape), want = host().attention(q, k, v, shape);
        EXPECT_LT(relativeDifference(got, want), 1e-5)
            << c.heads << "/" << c.kvHeads << " heads, d " << c.headDim << ", window " << c.window;
    }
}

TEST_F(GpuLayerMath, AttentionRejectsWhatTheCpuRejects) {
    const MatrixF q = gaussian(4, 12, 1), k = gaussian(3, 12, 2);
    EXPECT_THROW(device().attention(q, k, k, {2, 2, 6, 0}), Error);  // fewer keys than queries
    EXPECT_THROW(device().attention(q, q, q, {3, 2, 4, 0}), Error);  // heads not a multiple of kv heads
}

}  // namespace
}  // namespace qs::gpu::test
