// Viterbi over the bitshift trellis, one block per group: viterbi.cpp ViterbiEncoder::run step by
// step. At each step, every class h takes the first minimum over its 2^K predecessor rows
// (cost[j * H + h], strict <), then every state s = (h << K) | b gets best[h] + (x - v[s])².
#include "cuda_check.h"
#include "trellis_kernels.h"

namespace qs::gpu::kernels {
namespace {

constexpr int kViterbiThreads = 256;

__host__ __device__ std::int64_t backBytes(int L, int K, int T) { return (std::int64_t{1} << (L - K)) * T; }
std::int64_t costBytes(int L, int K) {
    return L > kTrellisSharedMaxL ? ((std::int64_t{1} << L) + (std::int64_t{1} << (L - K))) * 4 : 0;
}

struct ArgMin {
    float value;
    std::uint32_t index;
};

// The first minimum: a smaller value, or an equal value at a lower index (std::min_element).
__device__ ArgMin firstMin(ArgMin a, ArgMin b) {
    if (b.value < a.value || (!(a.value < b.value) && b.index < a.index)) return b;
    return a;
}

__global__ void viterbiKernel(const float* xs, int T, const float* table, int L, int K, char* workspace,
                              std::int64_t bytesPerGroup, std::uint32_t* statesOut) {
    extern __shared__ float shared[];
    __shared__ ArgMin partial[kViterbiThreads];
    const std::uint32_t S = 1u << L, H = S >> K, successors = 1u << K;
    char* own = workspace + blockIdx.x * bytesPerGroup;
    std::uint8_t* back = reinterpret_cast<std::uint8_t*>(own);
    float* cost = L > kTrellisSharedMaxL ? reinterpret_cast<float*>(own + backBytes(L, K, T)) : shared;
    float* best = cost + S;
    const float* x = xs + blockIdx.x * static_cast<std::int64_t>(T);
    std::uint32_t* states = statesOut + blockIdx.x * static_cast<std::int64_t>(T);

    const float x0 = x[0];
    for (std::uint32_t s = threadIdx.x; s < S; s += blockDim.x) {
        const float d = x0 - table[s];
        cost[s] = d * d;  // any start state
    }
    __syncthreads();
    for (int t = 1; t < T; ++t) {
        std::uint8_t* backT = back + static_cast<std::int64_t>(t) * H;
        for (std::uint32_t h = threadIdx.x; h < H; h += blockDim.x) {
            float m = cost[h];
            std::uint8_t arg = 0;
            for (std::uint32_t j = 1; j < successors; ++j) {
                const float v = cost[j * H + h];
                if (v < m) {  // strict: the first minimum wins, as in torch.min
                    m = v;
                    arg = static_cast<std::uint8_t>(j);
                }
            }
            best[h] = m;
            backT[h] = arg;
        }
        __syncthreads();
        const float xt = x[t];
        for (std::uint32_t s = threadIdx.x; s < S; s += blockDim.x) {
            const float d = xt - table[s];
            cost[s] = best[s >> K] + d * d;  // --fmad=false: the product is rounded first, as on the CPU
        }
        __syncthreads();
    }
    ArgMin mine{cost[0], 0};
    for (std::uint32_t s = threadIdx.x; s < S; s += blockDim.x) mine = firstMin(mine, ArgMin{cost[s], s});
    partial[threadIdx.x] = mine;
    __syncthreads();
    for (unsigned width = blockDim.x / 2; width > 0; width >>= 1) {
        if (threadIdx.x < width) partial[threadIdx.x] = firstMin(partial[threadIdx.x], partial[threadIdx.x + width]);
        __syncthreads();
    }
    if (threadIdx.x != 0) return;
    states[T - 1] = partial[0].index;
    for (int t = T - 1; t > 0; --t) {
        const std::uint32_t h = states[t] >> K;
        const std::uint32_t j = back[static_cast<std::int64_t>(t) * H + h];
        states[t - 1] = h + (j << (L - K));
    }
}

}  // namespace

std::int64_t viterbiBytesPerGroup(int L, int K, int T) {
    const std::int64_t bytes = backBytes(L, K, T) + costBytes(L, K);
    return (bytes + 255) / 256 * 256;  // keep each group's costs aligned
}

void viterbiGroups(const float* xs, std::int64_t groups, int T, const float* table, int L, int K, void* workspace,
                   std::uint32_t* states) {
    if (groups <= 0) return;
    const std::size_t sharedBytes =
        L > kTrellisSharedMaxL ? 0 : ((std::size_t{1} << L) + (std::size_t{1} << (L - K))) * sizeof(float);
    viterbiKernel<<<static_cast<unsigned>(groups), kViterbiThreads, sharedBytes>>>(
        xs, T, table, L, K, static_cast<char*>(workspace), viterbiBytesPerGroup(L, K, T), states);
    QS_CUDA_LAUNCHED("viterbiKernel");
}

}  // namespace qs::gpu::kernels
