// The BF16 LayerMath (oneDNN): each linear is x and W rounded to bfloat16 (nearest even) multiplied with
// f32 accumulation, plus the f32 bias; against a double-precision product of the same rounded values, the
// only difference is the order of the f32 sums. A weight kept resident gives the same bits as one
// converted per call. Runs where oneDNN has a BF16 matmul for this CPU (natively or emulated).
#include <gtest/gtest.h>

#include <random>

#include "qs/error.h"
#include "qs/model/bf16_layer_math.h"

#include "bf16_rounding.h"

using namespace qs;
using namespace qs::model;

namespace {

using qs::quant::testing::roundedToBf16;

MatrixF randomMatrix(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d;
    MatrixF m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = d(rng);
    return m;
}

std::shared_ptr<const LayerMath> bf16OrSkip() {
    try {
        return bf16LayerMath();
    } catch (const Error& e) {
        return nullptr;
    }
}

}  // namespace

TEST(Bf16LayerMath, IsTheProductOfTheRoundedValuesInF32) {
    const auto math = bf16OrSkip();
    if (!math) GTEST_SKIP() << "oneDNN has no BF16 matmul on this CPU";
    for (const auto& [m, k, n] : {std::tuple{7, 96, 33}, std::tuple{130, 256, 64}, std::tuple{1, 48, 320}}) {
        const MatrixF x = randomMatrix(m, k, 1);
        Linear l;
        l.weight = randomMatrix(n, k, 2);
        l.bias = randomMatrix(n, 1, 3).col(0);
        const MatrixF y = math->linear(x, l);
        ASSERT_EQ(y.rows(), m);
        ASSERT_EQ(y.cols(), n);
        double worst = 0.0;
        for (Eigen::Index i = 0; i < m; ++i)
            for (Eigen::Index j = 0; j < n; ++j) {
                double want = l.bias[j], scale = std::abs(l.bias[j]);
                for (Eigen::Index t = 0; t < k; ++t) {
                    const double p = double(roundedToBf16(x(i, t))) * double(roundedToBf16(l.weight(j, t)));
                    want += p;
                    scale += std::abs(p);
                }
                worst = std::max(worst, std::abs(y(i, j) - want) / scale);
            }
        EXPECT_LT(worst, 1e-5) << m << "x" << k << "x" << n;  // f32 sums of k products: a few ulps
        // The f32 product differs by bfloat16's rounding: far more than the order of sums.
        const MatrixF f32 = l(x);
        EXPECT_GT((f32 - y).cwiseAbs().maxCoeff(), 1e-4f);
    }
}

TEST(Bf16LayerMath, AResidentWeightGivesTheSameBitsAsOneConvertedPerCall) {
    const auto math = bf16OrSkip();
    if (!math) GTEST_SKIP() << "oneDNN has no BF16 matmul on this CPU";
    LayerWeights w;
    for (Linear* l : {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down}) l->weight = randomMatrix(64, 64, 7);
    const MatrixF x = randomMatrix(40, 64, 8);
    const MatrixF once = math->linear(x, w.up);
    {
        const auto resident = math->keepResident(w);
        EXPECT_EQ(math->linear(x, w.up), once);
        EXPECT_EQ(math->linear(randomMatrix(300, 64, 9), w.down).rows(), 300);  // another length, same weight
    }
    EXPECT_EQ(math->linear(x, w.up), once);  // released: converted per call again
}
