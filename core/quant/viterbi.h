#pragma once
// The Viterbi search of the bitshift trellis, as a reusable workspace: one per thread, sized for
// the longest sequence, reused for every group so the hot loop allocates nothing.
//
// State s (L bits) at step t can only follow the 2^K states p whose low L - K bits are s's high
// bits: p = (s >> K) + j 2^(L-K). All 2^K successors s = (h << K) | b of one "class" h = s >> K
// share those predecessors, so a step is (1) for each class the minimum over the 2^K rows of the
// cost viewed as [2^K][2^(L-K)] — contiguous, vectorised — and (2) cost[s] = min[h] + (x - v[s])^2.
// Backpointers are the K-bit row index j per class per step: 2^(L-K) bytes a step.
//
// With at least 16 classes (L - K >= 4) both parts run fused, 16 classes at a time, on 16-lane
// vectors: the minimum of the 2^K predecessor rows, then each class's minimum spread over its 2^K
// consecutive successors by a register shuffle and added to their (x - v)^2, written to a second cost
// buffer. One pass over the costs per step instead of three, and no scalar inner loop of 2^K.
#include <cstdint>
#include <vector>

namespace qs::quant::detail {

class ViterbiEncoder {
public:
    // `table` (2^L codebook values) must outlive the encoder; 1 <= K <= 4, K < L <= 16.
    ViterbiEncoder(const std::vector<float>& table, int L, int K, int maxLength);

    // Writes the least-error state of each step of x[0, T) to states[0, T); returns that path's
    // squared error as accumulated in f32 (the reference viterbi_encode's arithmetic).
    float encode(const float* x, int T, std::uint32_t* states);

private:
    template <int K>
    float run(const float* x, int T, std::uint32_t* states);
    template <int K>
    void stepScalar(float xt, std::uint8_t* back);
    template <int K>
    void stepVector(float xt, std::uint8_t* back);

    const std::vector<float>* table_;
    int L_;
    int K_;
    int maxLength_;
    std::vector<float> cost_;  // the costs of the states after the last step
    std::vector<float> next_;  // the vector step's output, swapped with cost_
    std::vector<float> best_;
    std::vector<std::uint8_t> back_;
};

}  // namespace qs::quant::detail
