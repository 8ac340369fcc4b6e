#pragma once
// java.util.Random (48-bit LCG, polar-method nextGaussian) as its documentation specifies it, so the
// tests can rebuild the lesson's Java toy setups draw for draw and compare with its printed numbers
// (docs/reference-algorithms.md).
#include <cmath>
#include <cstdint>

namespace qs::test {

class JavaRandom {
public:
    explicit JavaRandom(std::int64_t seed) : seed_((static_cast<std::uint64_t>(seed) ^ kMultiplier) & kMask) {}

    double nextDouble() {
        const std::uint64_t hi = next(26), lo = next(27);
        return static_cast<double>((hi << 27) + lo) * 0x1.0p-53;
    }

    double nextGaussian() {
        if (haveNext_) {
            haveNext_ = false;
            return nextNext_;
        }
        double v1, v2, s;
        do {
            v1 = 2 * nextDouble() - 1;
            v2 = 2 * nextDouble() - 1;
            s = v1 * v1 + v2 * v2;
        } while (s >= 1 || s == 0);
        const double multiplier = std::sqrt(-2 * std::log(s) / s);
        nextNext_ = v2 * multiplier;
        haveNext_ = true;
        return v1 * multiplier;
    }

private:
    static constexpr std::uint64_t kMultiplier = 0x5DEECE66DULL;
    static constexpr std::uint64_t kMask = (1ULL << 48) - 1;

    std::uint64_t next(int bits) {
        seed_ = (seed_ * kMultiplier + 0xBULL) & kMask;
        return seed_ >> (48 - bits);
    }

    std::uint64_t seed_;
    double nextNext_ = 0;
    bool haveNext_ = false;
};

}  // namespace qs::test
