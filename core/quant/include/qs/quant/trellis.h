#pragma once
// Trellis-coded quantization, QTIP-style (the bitshift trellis behind EXL3).
//
// A state is an L-bit integer; each weight consumes K new bits: s' = ((s << K) | b) & (2^L - 1).
// Every state stands for a value computed from its bits by QTIP's "1MAD" hash: one multiply-add
// mod 2^32, then the sum of the four bytes (roughly Gaussian), normalised over all 2^L states to
// zero mean and unit (unbiased) variance. A group of `groupSize` weights is coded as an L-bit start
// state and groupSize - 1 K-bit symbols, chosen by the Viterbi algorithm to minimise the squared
// error; cost (L + K (groupSize - 1) + 16) / groupSize bits per weight with an f16 group scale.
// Before coding, each group of a weight row is rotated by a seeded random Hadamard transform so that
// it looks Gaussian, and divided by its RMS.
#include <cstdint>
#include <span>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/matrix.h"
#include "qs/progress.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

inline constexpr int kTrellisMaxL = 16;
inline constexpr int kTrellisMaxK = 4;

// The normalised 1MAD codebook of an L-bit trellis. value() computes a state's value from its bits
// (what a decoder does: no table); table() holds all 2^L values for the encoder.
class TrellisCodebook {
public:
    explicit TrellisCodebook(int L);  // 1 <= L <= 16, else qs::Error

    int L() const { return L_; }
    float value(std::uint32_t state) const;
    std::vector<float> table() const;

    // (sum of the bytes of state * 34038481 + 76625530 mod 2^32 - 510) / 147.8, before normalising.
    static double rawValue(std::uint32_t state);

private:
    int L_;
    double mean_ = 0.0;
    double std_ = 1.0;
};

// The best path of one sequence: start state, the K new bits of each later step, and the codebook
// value of every state on the path.
struct TrellisPath {
    std::uint32_t start = 0;
    std::vector<std::uint8_t> symbols;  // x.size() - 1
    std::vector<float> recon;           // x.size()
    double squaredError = 0.0;
};

// Viterbi over one sequence (unit-variance data): the path of least squared error over every start
// state and every symbol sequence. Ties go to the lowest state / predecessor, as the reference's
// torch.min / argmin do, so the result is the reference viterbi_encode bit for bit (docs/reference-algorithms.md).
TrellisPath viterbiEncode(std::span<const float> x, int L, int K);

// The values of a path replayed from its start state and symbols (no table).
std::vector<float> trellisReplay(const TrellisCodebook& codebook, int K, std::uint32_t start,
                                 std::span<const std::uint8_t> symbols);

struct TrellisOptions {
    int L = 8;               // state bits, 1..16
    int K = 2;               // bits per weight, 1..4, K < L
    int groupSize = 256;     // a power of two dividing the input features
    std::uint64_t seed = 0;  // random signs of the Hadamard rotation
    const qs::CancelToken* cancel = nullptr;
    qs::ProgressCallback progress = {};
};

double trellisBitsPerWeight(int L, int K, int groupSize = 256);

// Method Trellis, CodeKind Trellis, bits = K, groupSize, blockRows 1, blockCols = groupSize;
// scales [rows, cols / groupSize] = the f16-rounded RMS of each rotated group; codes [rows * cols]
// = the low K bits of each weight's state (for the first weight of a group: of the start state,
// which trellis.starts holds whole); trellis = {L, K, groupSize, seed, starts}.
QuantizedLinear quantizeTrellis(const MatrixF& w, const TrellisOptions& options = {});

// Replays every group's states, scales the codebook values and rotates back: the effective weight.
MatrixF trellisDecode(const QuantizedLinear& q);

}  // namespace qs::quant
