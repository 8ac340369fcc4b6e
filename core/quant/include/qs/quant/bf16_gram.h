#pragma once
// XᵀX's tiles with the inputs rounded to bfloat16 (round to nearest even, as the BF16 GEMMs round the
// linears' inputs) and each product accumulated in f32: oneDNN's BF16 matmul (brgemm on AVX512-BF16
// and AMX, about 4x the f32 SGEMM rate there: bench/README.md). What the Hessians of --matmul bf16
// multiply; HessianAccumulator sums the tiles in f64 as it sums the f32 ones.
//
// A chunk x [T, features] is rounded once: each tile of columns kept twice, as the left operand Xᵢᵀ
// [tile, T] and in the layout oneDNN's matmul wants its right operand in, so that every tile product
// is one brgemm call without copies. Its rows are padded with zeros to a multiple of 128, so that the
// routed token counts of a MoE's experts share a few cached shapes.
#include <cstdint>
#include <memory>

#include "qs/matrix.h"

namespace qs::quant {

// Whether oneDNN multiplies BF16 here with a real kernel (not its reference loops, far slower than f32).
bool bf16GramAvailable();

class Bf16Gram {
public:
    // Rounds the chunk, tile by tile of `tile` columns, on the OpenMP threads. Throws qs::Error where
    // oneDNN cannot multiply BF16 at all.
    Bf16Gram(const Eigen::Ref<const MatrixF>& x, std::int64_t tile);
    ~Bf16Gram();
    Bf16Gram(const Bf16Gram&) = delete;
    Bf16Gram& operator=(const Bf16Gram&) = delete;

    // X_iᵀ X_j of column tiles i and j into `out` [width of i, width of j]. Single-threaded: called
    // from inside an OpenMP loop, each tile's sums do not depend on which thread computes them.
    void product(std::int64_t i, std::int64_t j, MatrixF& out) const;

private:
    struct Tiles;
    std::unique_ptr<Tiles> tiles_;
};

}  // namespace qs::quant
