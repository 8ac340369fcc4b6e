#pragma once
// The Viterbi search of the bitshift trellis on the device: one thread block per group, exactly
// the CPU's detail::ViterbiEncoder (same tie rules, products rounded before sums).
#include <cstdint>

namespace qs::gpu::kernels {

// Up to this L the 2^L path costs (and the 2^(L-K) class minima) live in shared memory; above it
// (L = 13 .. 16: 32 .. 384 KiB per group) in a global workspace per group in flight.
inline constexpr int kTrellisSharedMaxL = 12;

// Bytes of global workspace one group in flight needs (backpointers, and the costs when L > 12).
std::int64_t viterbiBytesPerGroup(int L, int K, int T);

// xs [groups, T] (normalised, rotated), table [2^L] the codebook; writes states [groups, T].
// `workspace` holds viterbiBytesPerGroup(L, K, T) bytes for each of the `groups`.
void viterbiGroups(const float* xs, std::int64_t groups, int T, const float* table, int L, int K, void* workspace,
                   std::uint32_t* states);

}  // namespace qs::gpu::kernels
