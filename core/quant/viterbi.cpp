// Compiled with -ffp-contract=off (core/quant/CMakeLists.txt): cost + d * d must round the product
// before the sum, as PyTorch does, or ties between paths resolve differently from the reference viterbi_encode.
#include "viterbi.h"

#include <algorithm>
#include <string>

#include "qs/error.h"
#include "qs/quant/trellis.h"

namespace qs::quant::detail {

ViterbiEncoder::ViterbiEncoder(const std::vector<float>& table, int L, int K, int maxLength)
    : table_(&table), L_(L), K_(K), maxLength_(maxLength) {
    if (L < 1 || L > kTrellisMaxL || K < 1 || K > kTrellisMaxK || K >= L)
        throw Error("ViterbiEncoder: need 1 <= K <= 4 and K < L <= 16, got L = " + std::to_string(L) +
                    ", K = " + std::to_string(K));
    if (table.size() != (std::size_t{1} << L)) throw Error("ViterbiEncoder: the codebook must have 2^L entries");
    if (maxLength < 1) throw Error("ViterbiEncoder: sequences must have at least one value");
    const std::size_t states = std::size_t{1} << L, classes = states >> K;
    cost_.resize(states);
    best_.resize(classes);
    back_.resize(classes * static_cast<std::size_t>(maxLength));
}

float ViterbiEncoder::encode(const float* x, int T, std::uint32_t* states) {
    if (T < 1 || T > maxLength_)
        throw Error("ViterbiEncoder: sequence length " + std::to_string(T) + " outside 1.." + std::to_string(maxLength_));
    switch (K_) {
    case 1: return run<1>(x, T, states);
    case 2: return run<2>(x, T, states);
    case 3: return run<3>(x, T, states);
    default: return run<4>(x, T, states);
    }
}

template <int K>
float ViterbiEncoder::run(const float* x, int T, std::uint32_t* states) {
    constexpr std::size_t successors = std::size_t{1} << K;
    const std::size_t S = std::size_t{1} << L_, H = S >> K;
    float* cost = cost_.data();
    float* best = best_.data();
    const float* value = table_->data();

    const float x0 = x[0];
#pragma omp simd
    for (std::size_t s = 0; s < S; ++s) {
        const float d = x0 - value[s];
        cost[s] = d * d;   // any start state
    }
    for (int t = 1; t < T; ++t) {
        std::uint8_t* back = back_.data() + static_cast<std::size_t>(t) * H;
        std::copy(cost, cost + H, best);
        std::fill(back, back + H, std::uint8_t{0});
        for (std::size_t j = 1; j < successors; ++j) {
            const float* row = cost + j * H;
            const auto jj = static_cast<std::uint8_t>(j);
#pragma omp simd
            for (std::size_t h = 0; h < H; ++h) {
                const bool less = row[h] < best[h];   // strict: the first minimum wins, as in torch.min
                best[h] = less ? row[h] : best[h];
                back[h] = less ? jj : back[h];
            }
        }
        const float xt = x[t];
        for (std::size_t h = 0; h < H; ++h) {
            const float m = best[h];
            float* c = cost + h * successors;
            const float* v = value + h * successors;
            for (std::size_t b = 0; b < successors; ++b) {
                const float d = xt - v[b];
                c[b] = m + d * d;
            }
        }
    }
    const std::size_t last = static_cast<std::size_t>(std::min_element(cost, cost + S) - cost);   // first minimum
    states[T - 1] = static_cast<std::uint32_t>(last);
    for (int t = T - 1; t > 0; --t) {
        const std::uint32_t h = states[t] >> K;
        const std::uint32_t j = back_[static_cast<std::size_t>(t) * H + h];
        states[t - 1] = h + (j << (L_ - K));
    }
    return cost[last];
}

}  // namespace qs::quant::detail

namespace qs::quant {

TrellisPath viterbiEncode(std::span<const float> x, int L, int K) {
    if (x.empty()) throw Error("viterbiEncode: empty sequence");
    const TrellisCodebook codebook(L);
    const std::vector<float> table = codebook.table();
    detail::ViterbiEncoder encoder(table, L, K, static_cast<int>(x.size()));
    std::vector<std::uint32_t> states(x.size());
    encoder.encode(x.data(), static_cast<int>(x.size()), states.data());
    TrellisPath path;
    path.start = states[0];
    const std::uint32_t mask = (1u << K) - 1u;
    for (std::size_t t = 1; t < states.size(); ++t) path.symbols.push_back(static_cast<std::uint8_t>(states[t] & mask));
    for (std::size_t t = 0; t < states.size(); ++t) {
        path.recon.push_back(table[states[t]]);
        const double d = static_cast<double>(x[t]) - table[states[t]];
        path.squaredError += d * d;
    }
    return path;
}

}  // namespace qs::quant
