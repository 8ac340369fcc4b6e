// Compiled with -ffp-contract=off (core/quant/CMakeLists.txt): cost + d * d must round the product
// before the sum, as PyTorch does, or ties between paths resolve differently from the reference viterbi_encode.
#include "viterbi.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "qs/error.h"
#include "qs/quant/trellis.h"

namespace qs::quant::detail {

namespace {

// GCC/Clang vector extensions: plain C++ arithmetic on 16 lanes that the compiler maps to whatever
// vector unit -march allows (AVX-512, AVX2, SSE2 or scalar code), so nothing depends on the CPU.
// Vectors are passed by reference only: by value, a 64-byte vector's calling convention changes with
// -mavx512f (GCC's -Wpsabi).
constexpr int kLanes = 16;
using Floats = float __attribute__((vector_size(kLanes * sizeof(float))));
using Ints = std::int32_t __attribute__((vector_size(kLanes * sizeof(std::int32_t))));
using Bytes = std::uint8_t __attribute__((vector_size(kLanes)));

inline void load(Floats& v, const float* p) { std::memcpy(&v, p, sizeof v); }
inline void store(float* p, const Floats& v) { std::memcpy(p, &v, sizeof v); }

// out lane l = m lane (16 q + l) >> K: the class of the state that lane l of the q-th output vector of
// a 16-class block holds, i.e. each class's minimum repeated over its 2^K successors.
template <int K, int Q, std::size_t... L>
inline void spread(Floats& out, const Floats& m, std::index_sequence<L...>) {
    out = __builtin_shufflevector(m, m, static_cast<int>((Q * kLanes + static_cast<int>(L)) >> K)...);
}

// The 2^K output vectors of one 16-class block: cost[s] = min[h] + (x - v[s])^2, the product rounded
// before the sum (this file is compiled without contraction).
template <int K, int Q>
inline void successors(float* out, const float* value, const Floats& m, float xt) {
    if constexpr (Q < (1 << K)) {
        Floats spreadMin, v;
        spread<K, Q>(spreadMin, m, std::make_index_sequence<kLanes>{});
        load(v, value + Q * kLanes);
        const Floats d = xt - v;
        store(out + Q * kLanes, spreadMin + d * d);
        successors<K, Q + 1>(out, value, m, xt);
    }
}

}  // namespace

ViterbiEncoder::ViterbiEncoder(const std::vector<float>& table, int L, int K, int maxLength)
    : table_(&table), L_(L), K_(K), maxLength_(maxLength) {
    if (L < 1 || L > kTrellisMaxL || K < 1 || K > kTrellisMaxK || K >= L)
        throw Error("ViterbiEncoder: need 1 <= K <= 4 and K < L <= 16, got L = " + std::to_string(L) +
                    ", K = " + std::to_string(K));
    if (table.size() != (std::size_t{1} << L)) throw Error("ViterbiEncoder: the codebook must have 2^L entries");
    if (maxLength < 1) throw Error("ViterbiEncoder: sequences must have at least one value");
    const std::size_t states = std::size_t{1} << L, classes = states >> K;
    cost_.resize(states);
    if (classes >= static_cast<std::size_t>(kLanes))
        next_.resize(states);
    else
        best_.resize(classes);
    back_.resize(classes * static_cast<std::size_t>(maxLength));
}

float ViterbiEncoder::encode(const float* x, int T, std::uint32_t* states) {
    if (T < 1 || T > maxLength_)
        throw Error("ViterbiEncoder: sequence length " + std::to_string(T) + " outside 1.." +
                    std::to_string(maxLength_));
    switch (K_) {
        case 1: return run<1>(x, T, states);
        case 2: return run<2>(x, T, states);
        case 3: return run<3>(x, T, states);
        default: return run<4>(x, T, states);
    }
}

// The per-class loops of the header's description, for fewer than 16 classes.
template <int K>
void ViterbiEncoder::stepScalar(float xt, std::uint8_t* back) {
    constexpr std::size_t successors = std::size_t{1} << K;
    const std::size_t H = (std::size_t{1} << L_) >> K;
    float* cost = cost_.data();
    float* best = best_.data();
    const float* value = table_->data();
    std::copy(cost, cost + H, best);
    std::fill(back, back + H, std::uint8_t{0});
    for (std::size_t j = 1; j < successors; ++j) {
        const float* row = cost + j * H;
        const auto jj = static_cast<std::uint8_t>(j);
        for (std::size_t h = 0; h < H; ++h) {
            const bool less = row[h] < best[h];  // strict: the first minimum wins, as in torch.min
            best[h] = less ? row[h] : best[h];
            back[h] = less ? jj : back[h];
        }
    }
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

// The same step, 16 classes at a time (H >= 16): the same comparisons in the same order per class
// (rows j = 1 .. 2^K - 1 against the running minimum, strict), the same roundings, so the same bits.
template <int K>
void ViterbiEncoder::stepVector(float xt, std::uint8_t* back) {
    constexpr int successorCount = 1 << K;
    const std::size_t H = (std::size_t{1} << L_) >> K;
    const float* cost = cost_.data();
    float* next = next_.data();
    const float* value = table_->data();
    for (std::size_t h0 = 0; h0 < H; h0 += kLanes) {
        Floats m, row;
        load(m, cost + h0);
        Ints from = Ints{};
        for (int j = 1; j < successorCount; ++j) {
            load(row, cost + static_cast<std::size_t>(j) * H + h0);
            const Ints less = row < m;  // strict: the first minimum wins, as in torch.min
            m = less ? row : m;
            from = less ? Ints{} + j : from;
        }
        const Bytes b = __builtin_convertvector(from, Bytes);
        std::memcpy(back + h0, &b, sizeof b);
        successors<K, 0>(next + h0 * successorCount, value + h0 * successorCount, m, xt);
    }
    cost_.swap(next_);
}

template <int K>
float ViterbiEncoder::run(const float* x, int T, std::uint32_t* states) {
    const std::size_t S = std::size_t{1} << L_, H = S >> K;
    const float* value = table_->data();
    const bool vector = H >= static_cast<std::size_t>(kLanes);

    const float x0 = x[0];
    for (std::size_t s = 0; s < S; ++s) {
        const float d = x0 - value[s];
        cost_[s] = d * d;  // any start state
    }
    for (int t = 1; t < T; ++t) {
        std::uint8_t* back = back_.data() + static_cast<std::size_t>(t) * H;
        if (vector)
            stepVector<K>(x[t], back);
        else
            stepScalar<K>(x[t], back);
    }
    const float* cost = cost_.data();
    const std::size_t last = static_cast<std::size_t>(std::min_element(cost, cost + S) - cost);  // first minimum
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
