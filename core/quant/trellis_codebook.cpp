#include <cmath>
#include <string>

#include "qs/error.h"
#include "qs/quant/trellis.h"

namespace qs::quant {

double TrellisCodebook::rawValue(std::uint32_t state) {
    // uint32 arithmetic wraps mod 2^32, which is the hash's definition.
    const std::uint32_t h = state * 34038481u + 76625530u;
    const unsigned total = (h & 0xFFu) + ((h >> 8) & 0xFFu) + ((h >> 16) & 0xFFu) + (h >> 24);
    return (static_cast<double>(total) - 510.0) / 147.8;
}

TrellisCodebook::TrellisCodebook(int L) : L_(L) {
    if (L < 1 || L > kTrellisMaxL)
        throw Error("TrellisCodebook: L must be in 1.." + std::to_string(kTrellisMaxL) + ", got " + std::to_string(L));
    // Two numbers per L, not a table: the decoder stays table-free. Long double sums keep them at
    // the reference codebook's double precision whatever the summation order.
    const std::uint32_t states = 1u << L;
    long double sum = 0.0L;
    for (std::uint32_t s = 0; s < states; ++s) sum += rawValue(s);
    const double mean = static_cast<double>(sum / states);
    long double squares = 0.0L;
    for (std::uint32_t s = 0; s < states; ++s) {
        const long double d = rawValue(s) - mean;
        squares += d * d;
    }
    mean_ = mean;
    // torch.std is the unbiased estimate (n - 1). A 1-state codebook has none: leave it at 1.
    std_ = states > 1 ? std::sqrt(static_cast<double>(squares / (states - 1))) : 1.0;
    if (!(std_ > 0.0)) std_ = 1.0;
}

float TrellisCodebook::value(std::uint32_t state) const { return static_cast<float>((rawValue(state) - mean_) / std_); }

std::vector<float> TrellisCodebook::table() const {
    std::vector<float> t(std::size_t{1} << L_);
    for (std::uint32_t s = 0; s < t.size(); ++s) t[s] = value(s);
    return t;
}

std::vector<float> trellisReplay(const TrellisCodebook& codebook, int K, std::uint32_t start,
                                 std::span<const std::uint8_t> symbols) {
    const std::uint32_t mask = (1u << codebook.L()) - 1u;
    std::vector<float> values;
    values.reserve(symbols.size() + 1);
    std::uint32_t state = start & mask;
    values.push_back(codebook.value(state));
    for (std::uint8_t b : symbols) {
        state = ((state << K) | b) & mask;
        values.push_back(codebook.value(state));
    }
    return values;
}

}  // namespace qs::quant
