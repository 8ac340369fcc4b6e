#pragma once
// The format encoders and decoders as kernels on device-resident data (all pointers are device
// pointers; matrices row-major). Each mirrors the core/quant encoder of the same format bit for bit;
// CudaBackend wraps them with the uploads and downloads, the benchmarks call them directly.
#include <array>
#include <cstdint>

namespace qs::gpu::kernels {

// FP8 E4M3 with one scale per blockRows x blockCols tile (per channel: 1 x cols; per tensor:
// rows x cols): scales [ceil(rows / blockRows), ceil(cols / blockCols)] = max(amax, 1e-12) / 448.
// `amaxBits` is scratch of one uint32 per tile.
void fp8Encode(const float* w, std::int64_t rows, std::int64_t cols, std::int64_t blockRows, std::int64_t blockCols,
               std::uint32_t* amaxBits, float* scales, std::uint8_t* codes);
void fp8Decode(const std::uint8_t* codes, const float* scales, std::int64_t rows, std::int64_t cols,
               std::int64_t blockRows, std::int64_t blockCols, float* out);

// MXFP4: scales [rows, ceil(cols / 32)] (powers of two).
void mxfp4Encode(const float* w, std::int64_t rows, std::int64_t cols, float* scales, std::uint8_t* codes);
// NVFP4: scales [rows, ceil(cols / 16)] (E4M3 values); *tensorScale (device) the per-tensor scale.
// `amaxBits` is scratch of one uint32.
void nvfp4Encode(const float* w, std::int64_t rows, std::int64_t cols, std::uint32_t* amaxBits, float* tensorScale,
                 float* scales, std::uint8_t* codes);
// E2M1 blocks of 1 x blockCols: out = e2m1(code) * (scale * globalScale).
void e2m1Decode(const std::uint8_t* codes, const float* scales, float globalScale, std::int64_t rows, std::int64_t cols,
                std::int64_t blockCols, float* out);

// NF4 codes of the flat blocks of `blockSize` values and each block's absmax [rows * cols / blockSize].
// thresholds[j]: the smallest value whose nearest level is above level j (the CPU's argmin decision).
void nf4Encode(const float* w, std::int64_t count, std::int64_t blockSize, const std::array<float, 15>& thresholds,
               float* absmax, std::uint8_t* codes);
// out = nf4Table[code] * scale of the element's block.
void nf4Decode(const std::uint8_t* codes, const float* scales, std::int64_t count, std::int64_t blockSize,
               const std::array<float, 16>& table, float* out);

}  // namespace qs::gpu::kernels
