#include "gpu_test_support.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "qs/gpu/cuda_backend.h"

namespace qs::gpu::test {

std::shared_ptr<pipeline::Backend> cudaBackendOrNull(std::string& whyNot) { return makeCudaBackend(whyNot); }

void GpuParity::SetUp() {
    std::string whyNot;
    cuda_ = cudaBackendOrNull(whyNot);
    if (!cuda_) GTEST_SKIP() << whyNot;
    cpu_ = pipeline::makeCpuBackend();
}

MatrixF gaussian(std::int64_t rows, std::int64_t cols, std::uint32_t seed, float sigma) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    MatrixF m(rows, cols);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

MatrixF awkwardWeights(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
    MatrixF w = gaussian(rows, cols, seed, 0.02f);
    std::mt19937 rng(seed + 1);
    std::uniform_int_distribution<std::int64_t> pick(0, w.size() - 1);
    for (int i = 0; i < 40; ++i) w.data()[pick(rng)] *= 300.0f;  // outliers
    if (cols >= 64) w.block(0, 0, 1, 64).setZero();              // an all-zero block
    const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -0.25f, -2.5f, 6.0f, -0.0f, 1e-30f, 448.0f};
    for (std::int64_t r = 1; r < rows; r += 3)  // values on the grids' midpoints
        for (std::int64_t c = 0; c < std::min<std::int64_t>(cols, 13); ++c) w(r, c) = ties[c];
    return w;
}

bool sameBits(const MatrixF& a, const MatrixF& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(float)) == 0;
}

}  // namespace qs::gpu::test
