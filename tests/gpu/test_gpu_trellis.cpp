// The Viterbi trellis search on the device against the CPU: identical states (codes and start
// states), for L in shared memory (<= 12) and in the global workspace (13 .. 16).
#include <gtest/gtest.h>

#include "qs/error.h"
#include "qs/quant/trellis.h"

#include "gpu_test_support.h"

namespace qs::gpu::test {
namespace {

class GpuTrellis : public GpuParity {
protected:
    void expectSame(const MatrixF& w, const quant::TrellisOptions& o) {
        const auto gpu = cuda().trellis(w, o);
        const auto cpu = this->cpu().trellis(w, o);
        EXPECT_EQ(gpu.trellis.starts, cpu.trellis.starts);
        EXPECT_EQ(gpu.codes, cpu.codes);
        EXPECT_TRUE(sameBits(gpu.scales, cpu.scales));
        EXPECT_EQ(gpu.trellis.L, cpu.trellis.L);
        EXPECT_EQ(gpu.trellis.K, cpu.trellis.K);
        EXPECT_TRUE(sameBits(gpu.dequantize(), cpu.dequantize()));
    }
};

TEST_F(GpuTrellis, SharedMemoryStatesMatchTheCpu) {
    const MatrixF w = gaussian(6, 512, 51, 0.02f);
    for (int L : {6, 8, 12}) {
        for (int K : {1, 2, 4}) {
            SCOPED_TRACE("L = " + std::to_string(L) + ", K = " + std::to_string(K));
            quant::TrellisOptions o;
            o.L = L;
            o.K = K;
            o.seed = 7;
            expectSame(w, o);
        }
    }
}

TEST_F(GpuTrellis, GlobalMemoryStatesMatchTheCpu) {
    const MatrixF w = gaussian(2, 128, 52, 0.02f);
    for (int L : {13, 16}) {
        SCOPED_TRACE("L = " + std::to_string(L));
        quant::TrellisOptions o;
        o.L = L;
        o.K = 2;
        o.groupSize = 64;
        expectSame(w, o);
    }
}

TEST_F(GpuTrellis, ConstantGroupsTieLikeTheCpu) {
    // Constant groups make many paths cost the same: the lowest state and predecessor must win.
    MatrixF w = MatrixF::Constant(2, 256, 0.01f);
    w.row(1).setZero();
    quant::TrellisOptions o;
    o.L = 8;
    o.K = 2;
    expectSame(w, o);
}

TEST_F(GpuTrellis, RejectsWhatTheCpuRejects) {
    quant::TrellisOptions o;
    o.L = 17;
    EXPECT_THROW(cuda().trellis(MatrixF::Ones(2, 256), o), Error);
    o.L = 8;
    o.groupSize = 100;
    EXPECT_THROW(cuda().trellis(MatrixF::Ones(2, 200), o), Error);
}

}  // namespace
}  // namespace qs::gpu::test
