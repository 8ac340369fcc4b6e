// The format encoders and decoders. Each kernel mirrors its core/quant loop; the amax of a block is
// the maximum of the sign-cleared bit patterns (detail::absMax), reduced with atomicMax so that the
// result does not depend on the order of the threads.
#include "qs/gpu/format_kernels.h"

#include "cuda_check.h"
#include "format_codes.cuh"
#include "launch.h"

namespace qs::gpu::kernels {
namespace {

struct Thresholds {
    float v[15];
};
struct Nf4Levels {
    float v[16];
};

__device__ std::uint32_t warpMax(std::uint32_t v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = max(v, __shfl_down_sync(0xFFFFFFFFu, v, offset));
    return v;
}

// Tile t = blockIdx.x of a grid of tiles (tileRows x tileCols elements each, edge tiles smaller);
// blockIdx.y splits a tall tile's rows among several blocks. Row and column loops, so that no
// element pays for a 64-bit division.
__global__ void tileAbsMaxKernel(const float* w, std::int64_t rows, std::int64_t cols, std::int64_t tileRows,
                                 std::int64_t tileCols, std::int64_t tilesPerRow, std::uint32_t* amaxBits) {
    const std::int64_t t = blockIdx.x;
    const std::int64_t r0 = (t / tilesPerRow) * tileRows, c0 = (t % tilesPerRow) * tileCols;
    const std::int64_t nr = min(tileRows, rows - r0), nc = min(tileCols, cols - c0);
    std::uint32_t m = 0;
    for (std::int64_t r = blockIdx.y; r < nr; r += gridDim.y) {
        const float* row = w + (r0 + r) * cols + c0;
        for (std::int64_t c = threadIdx.x; c < nc; c += blockDim.x) m = max(m, codes::absBits(row[c]));
    }
    m = warpMax(m);
    if ((threadIdx.x & 31) == 0) atomicMax(amaxBits + t, m);
}

void tileAbsMax(const float* w, std::int64_t rows, std::int64_t cols, std::int64_t tileRows, std::int64_t tileCols,
                std::uint32_t* amaxBits) {
    const std::int64_t tilesPerRow = (cols + tileCols - 1) / tileCols;
    const std::int64_t tiles = ((rows + tileRows - 1) / tileRows) * tilesPerRow;
    QS_CUDA(cudaMemset(amaxBits, 0, static_cast<std::size_t>(tiles) * sizeof(std::uint32_t)));
    const std::int64_t perTile = std::min(tileRows, rows) * std::min(tileCols, cols);
    const std::int64_t splitRows = std::clamp<std::int64_t>(perTile / (kThreads * 8), 1, 1024);
    const unsigned splits = static_cast<unsigned>(std::min(splitRows, std::min(tileRows, rows)));
    tileAbsMaxKernel<<<dim3(static_cast<unsigned>(tiles), splits), kThreads>>>(w, rows, cols, tileRows, tileCols,
                                                                               tilesPerRow, amaxBits);
    QS_CUDA_LAUNCHED("tileAbsMaxKernel");
}

// fp8ScaleFor: max(amax, 1e-12) / 448, a division as the CPU does it.
__global__ void fp8ScaleKernel(const std::uint32_t* amaxBits, std::int64_t tiles, float* scales) {
    for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < tiles;
         t += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        scales[t] = codes::stdMax(__uint_as_float(amaxBits[t]), 1e-12f) / codes::kE4m3Max;
}

// Element (r, c) with c from the thread and r strided over blockIdx.y: the tile column is one
// division per thread, the tile row one per row.
__global__ void fp8EncodeKernel(const float* w, std::int64_t rows, std::int64_t cols, std::int64_t blockRows,
                                std::int64_t blockCols, std::int64_t tilesPerRow, const float* scales,
                                std::uint8_t* out) {
    const std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
    if (c >= cols) return;
    const std::int64_t tileCol = c / blockCols;
    for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const float scale = scales[(r / blockRows) * tilesPerRow + tileCol];
        out[r * cols + c] = codes::encodeE4m3(w[r * cols + c] / scale);  // x / scale, not x * (1 / scale), as the CPU
    }
}

__global__ void fp8DecodeKernel(const std::uint8_t* in, const float* scales, std::int64_t rows, std::int64_t cols,
                                std::int64_t blockRows, std::int64_t blockCols, std::int64_t tilesPerRow, float* out) {
    const std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
    if (c >= cols) return;
    const std::int64_t tileCol = c / blockCols;
    for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y)
        out[r * cols + c] = codes::decodeE4m3(in[r * cols + c]) * scales[(r / blockRows) * tilesPerRow + tileCol];
}

// mxfp4.cpp sharedExponent and powerOfTwo.
__device__ int sharedExponent(float amax) {
    const float floored = codes::stdMax(amax, 0x1p-126f);
    const int exponent = static_cast<int>((__float_as_uint(floored) >> 23) & 0xFFu) - 127;
    return min(max(exponent - 2, -127), 127);
}
__device__ float powerOfTwo(int k) {
    return k >= -126 ? __uint_as_float(static_cast<std::uint32_t>(k + 127) << 23) : 0x1p-127f;
}

// One thread per 32-value block of a row.
__global__ void mxfp4EncodeKernel(const float* w, std::int64_t rows, std::int64_t cols, float* scales,
                                  std::uint8_t* out) {
    constexpr std::int64_t kBlock = 32;
    const std::int64_t perRow = (cols + kBlock - 1) / kBlock, blocks = rows * perRow;
    for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; b < blocks;
         b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t r = b / perRow, c0 = (b % perRow) * kBlock, c1 = min(cols, c0 + kBlock);
        const float* row = w + r * cols;
        std::uint32_t m = 0;
        for (std::int64_t c = c0; c < c1; ++c) m = max(m, codes::absBits(row[c]));
        const int e = sharedExponent(__uint_as_float(m));
        scales[b] = powerOfTwo(e);
        const float inverse = powerOfTwo(-e);
        for (std::int64_t c = c0; c < c1; ++c) out[r * cols + c] = codes::encodeE2m1(row[c] * inverse);
    }
}

__global__ void nvfp4TensorScaleKernel(const std::uint32_t* amaxBits, float* tensorScale) {
    *tensorScale = codes::stdMax(__uint_as_float(*amaxBits), 1e-12f) / (codes::kE4m3Max * codes::kE2m1Max);
}

// One thread per 16-value block: the E4M3 block scale (nvfp4.cpp blockScale), then the codes.
__global__ void nvfp4EncodeKernel(const float* w, std::int64_t rows, std::int64_t cols, const float* tensorScaleIn,
                                  float* scales, std::uint8_t* out) {
    constexpr std::int64_t kBlock = 16;
    const float tensorScale = *tensorScaleIn;
    const std::int64_t perRow = (cols + kBlock - 1) / kBlock, blocks = rows * perRow;
    for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; b < blocks;
         b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t r = b / perRow, c0 = (b % perRow) * kBlock, c1 = min(cols, c0 + kBlock);
        const float* row = w + r * cols;
        std::uint32_t m = 0;
        for (std::int64_t c = c0; c < c1; ++c) m = max(m, codes::absBits(row[c]));
        const float ideal = codes::stdMin(__uint_as_float(m) / 6.0f / tensorScale, codes::kE4m3Max);
        const float stored = codes::decodeE4m3(codes::encodeE4m3(ideal));
        scales[b] = stored;
        const float scale = stored * tensorScale;
        for (std::int64_t c = c0; c < c1; ++c)
            out[r * cols + c] = scale > 0.0f ? codes::encodeE2m1(row[c] / scale) : std::uint8_t{0};
    }
}

__global__ void e2m1DecodeKernel(const std::uint8_t* in, const float* scales, float globalScale, std::int64_t rows,
                                 std::int64_t cols, std::int64_t blockCols, float* out) {
    const std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
    if (c >= cols) return;
    const std::int64_t perRow = (cols + blockCols - 1) / blockCols, block = c / blockCols;
    for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const float scale = scales[r * perRow + block] * globalScale;  // the product first, as the CPU
        out[r * cols + c] = codes::decodeE2m1(in[r * cols + c]) * scale;
    }
}

// One thread per NF4 block: absmax, then index = number of thresholds at or below x / absmax.
__global__ void nf4EncodeKernel(const float* w, std::int64_t count, std::int64_t blockSize, Thresholds th,
                                float* absmax, std::uint8_t* out) {
    const std::int64_t blocks = count / blockSize;
    for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; b < blocks;
         b += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const float* x = w + b * blockSize;
        std::uint8_t* codesOut = out + b * blockSize;
        std::uint32_t m = 0;
        for (std::int64_t i = 0; i < blockSize; ++i) m = max(m, codes::absBits(x[i]));
        const float amax = __uint_as_float(m);
        absmax[b] = amax;
        const float inverse = 1.0f / amax;
        for (std::int64_t i = 0; i < blockSize; ++i) {
            std::uint32_t index = 7;  // the table's 0, for an all-zero block
            if (amax > 0.0f) {
                const float v = x[i] * inverse;
                index = 0;
                for (int j = 0; j < 15; ++j) index += v >= th.v[j] ? 1u : 0u;
            }
            codesOut[i] = static_cast<std::uint8_t>(index);
        }
    }
}

__global__ void nf4DecodeKernel(const std::uint8_t* in, const float* scales, std::int64_t count, std::int64_t blockSize,
                                Nf4Levels table, float* out) {
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        out[i] = table.v[in[i] & 0xF] * scales[i / blockSize];
}

// Columns over blockIdx.x, rows strided over blockIdx.y (at most 65535).
dim3 rowGrid(std::int64_t rows, std::int64_t cols) {
    const auto x = static_cast<unsigned>((cols + kThreads - 1) / kThreads);
    const auto y = static_cast<unsigned>(std::clamp<std::int64_t>(rows, 1, 65535));
    return dim3(std::max(x, 1u), y);
}

}  // namespace

void fp8Encode(const float* w, std::int64_t rows, std::int64_t cols, std::int64_t blockRows, std::int64_t blockCols,
               std::uint32_t* amaxBits, float* scales, std::uint8_t* out) {
    const std::int64_t tilesPerRow = (cols + blockCols - 1) / blockCols;
    const std::int64_t tiles = ((rows + blockRows - 1) / blockRows) * tilesPerRow;
    tileAbsMax(w, rows, cols, blockRows, blockCols, amaxBits);
    fp8ScaleKernel<<<gridFor(tiles), kThreads>>>(amaxBits, tiles, scales);
    QS_CUDA_LAUNCHED("fp8ScaleKernel");
    fp8EncodeKernel<<<rowGrid(rows, cols), kThreads>>>(w, rows, cols, blockRows, blockCols, tilesPerRow, scales, out);
    QS_CUDA_LAUNCHED("fp8EncodeKernel");
}

void fp8Decode(const std::uint8_t* in, const float* scales, std::int64_t rows, std::int64_t cols,
               std::int64_t blockRows, std::int64_t blockCols, float* out) {
    const std::int64_t tilesPerRow = (cols + blockCols - 1) / blockCols;
    fp8DecodeKernel<<<rowGrid(rows, cols), kThreads>>>(in, scales, rows, cols, blockRows, blockCols, tilesPerRow, out);
    QS_CUDA_LAUNCHED("fp8DecodeKernel");
}

void mxfp4Encode(const float* w, std::int64_t rows, std::int64_t cols, float* scales, std::uint8_t* out) {
    mxfp4EncodeKernel<<<gridFor(rows * ((cols + 31) / 32)), kThreads>>>(w, rows, cols, scales, out);
    QS_CUDA_LAUNCHED("mxfp4EncodeKernel");
}

void nvfp4Encode(const float* w, std::int64_t rows, std::int64_t cols, std::uint32_t* amaxBits, float* tensorScale,
                 float* scales, std::uint8_t* out) {
    tileAbsMax(w, rows, cols, rows, cols, amaxBits);
    nvfp4TensorScaleKernel<<<1, 1>>>(amaxBits, tensorScale);
    QS_CUDA_LAUNCHED("nvfp4TensorScaleKernel");
    nvfp4EncodeKernel<<<gridFor(rows * ((cols + 15) / 16)), kThreads>>>(w, rows, cols, tensorScale, scales, out);
    QS_CUDA_LAUNCHED("nvfp4EncodeKernel");
}

void e2m1Decode(const std::uint8_t* in, const float* scales, float globalScale, std::int64_t rows, std::int64_t cols,
                std::int64_t blockCols, float* out) {
    e2m1DecodeKernel<<<rowGrid(rows, cols), kThreads>>>(in, scales, globalScale, rows, cols, blockCols, out);
    QS_CUDA_LAUNCHED("e2m1DecodeKernel");
}

void nf4Encode(const float* w, std::int64_t count, std::int64_t blockSize, const std::array<float, 15>& thresholds,
               float* absmax, std::uint8_t* out) {
    Thresholds th{};
    for (int j = 0; j < 15; ++j) th.v[j] = thresholds[static_cast<std::size_t>(j)];
    nf4EncodeKernel<<<gridFor(count / blockSize), kThreads>>>(w, count, blockSize, th, absmax, out);
    QS_CUDA_LAUNCHED("nf4EncodeKernel");
}

void nf4Decode(const std::uint8_t* in, const float* scales, std::int64_t count, std::int64_t blockSize,
               const std::array<float, 16>& table, float* out) {
    Nf4Levels levels{};
    for (int j = 0; j < 16; ++j) levels.v[j] = table[static_cast<std::size_t>(j)];
    nf4DecodeKernel<<<gridFor(count), kThreads>>>(in, scales, count, blockSize, levels, out);
    QS_CUDA_LAUNCHED("nf4DecodeKernel");
}

}  // namespace qs::gpu::kernels
