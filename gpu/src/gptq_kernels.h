#pragma once
// The GPTQ kernels (device pointers; the factorizations and the lazy update are cuSOLVER / cuBLAS).
#include <cstdint>

namespace qs::gpu::kernels {

// a = J (H + λI) J (J reverses the order), n x n; symmetric, so the layout does not matter.
void reverseWithDamping(const float* h, std::int64_t n, float lambda, float* a);
// u (row-major, upper) = J L⁻¹ J from l = L⁻¹ column-major lower; the strict lower part of u is 0.
void upperFromReversedInverse(const float* l, std::int64_t n, float* u);

// One block [i1, i2) of the GPTQ column loop over every row (one thread per row), as
// gptq.cpp blockChunk does it for a chunk of rows.
struct GptqBlockArgs {
    float* w;             // [rows, cols] row-major, visiting order, corrected in place
    const float* u;       // [cols, cols] row-major upper Cholesky factor of H⁻¹
    float* err;           // [blockSize][rows]: err of column i1 + k at k * rows + r
    std::uint8_t* codes;  // [cols][rows] visiting order
    float* scales;        // [rows, groups] row-major
    float* zeros;
    const float* staticScales;  // [rows, groups] when static groups, else null
    const float* staticZeros;
    const int* perm;  // visiting position -> original column
    double* loss;     // [rows] Σ err² per row, accumulated over the blocks
    std::int64_t rows;
    std::int64_t cols;
    std::int64_t i1;
    std::int64_t i2;
    int groupCols;
    int groups;
    int bits;
    bool sym;
    bool autoGptqRule;  // GridRule::AutoGptq, else AutoAwq
    float maxq;
};
inline constexpr int kGptqMaxBlock = 256;  // the block's row segment lives in each thread's registers/local memory
void gptqBlock(const GptqBlockArgs& args);

}  // namespace qs::gpu::kernels
