#pragma once
// Shared by the GPU parity tests: the two backends, and inputs that exercise the edge cases.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "qs/matrix.h"
#include "qs/pipeline/backend.h"

namespace qs::gpu::test {

// The CUDA backend, or nullptr when there is no device (the test then skips with the reason).
std::shared_ptr<pipeline::Backend> cudaBackendOrNull(std::string& whyNot);

// A fixture whose SetUp skips without a device; cuda() and cpu() are the two backends.
class GpuParity : public ::testing::Test {
protected:
    void SetUp() override;
    const pipeline::Backend& cuda() const { return *cuda_; }
    const pipeline::Backend& cpu() const { return *cpu_; }

private:
    std::shared_ptr<pipeline::Backend> cuda_;
    std::shared_ptr<pipeline::Backend> cpu_;
};

// Gaussian weights with a few outliers, zero blocks, exact ties of the FP4 / FP8 grids and tiny values.
MatrixF awkwardWeights(std::int64_t rows, std::int64_t cols, std::uint32_t seed);
MatrixF gaussian(std::int64_t rows, std::int64_t cols, std::uint32_t seed, float sigma = 1.0f);

// Equal bit patterns (NaN-safe, and -0 differs from +0).
bool sameBits(const MatrixF& a, const MatrixF& b);

}  // namespace qs::gpu::test
