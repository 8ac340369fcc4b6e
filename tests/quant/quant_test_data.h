#pragma once
// Shared by the float-format tests: the seed reference vectors, Gaussian samples, and
// java.util.Random, so the lesson's Java examples can be replayed on the very same numbers.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/safetensors_file.h"
#include "qs/matrix.h"

namespace qs::quant::testing {

inline std::string seedReferencePath() { return std::string(QS_TEST_DATA_DIR) + "/quant/seed_reference.safetensors"; }

inline const io::SafetensorsFile& seedReference() {
    static const io::SafetensorsFile file = io::SafetensorsFile::open(seedReferencePath());
    return file;
}

inline double seedFigure(const std::string& key) {
    std::ifstream in(std::string(QS_TEST_DATA_DIR) + "/quant/seed_reference.json");
    return nlohmann::json::parse(in).at(key).get<double>();
}

inline std::vector<std::uint8_t> seedBytes(const std::string& name) {
    const auto bytes = seedReference().tensor(name).bytes();
    std::vector<std::uint8_t> out(bytes.size());
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
}

inline MatrixF gaussianMatrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed, float sigma = 1.0f) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    MatrixF m(rows, cols);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

inline double rmse(const MatrixF& a, const MatrixF& b) {
    double s = 0.0;
    for (std::int64_t i = 0; i < a.size(); ++i) {
        const double d = static_cast<double>(a.data()[i]) - b.data()[i];
        s += d * d;
    }
    return std::sqrt(s / static_cast<double>(a.size()));
}

// java.util.Random (48-bit LCG, polar-method nextGaussian), as specified in its Javadoc.
class JavaRandom {
public:
    explicit JavaRandom(std::int64_t seed) : seed_((static_cast<std::uint64_t>(seed) ^ 0x5DEECE66DULL) & kMask) {}
    double nextDouble() {
        return static_cast<double>((static_cast<std::int64_t>(next(26)) << 27) + next(27)) * 0x1.0p-53;
    }
    double nextGaussian() {
        if (haveNext_) {
            haveNext_ = false;
            return next_;
        }
        double v1, v2, s;
        do {
            v1 = 2 * nextDouble() - 1;
            v2 = 2 * nextDouble() - 1;
            s = v1 * v1 + v2 * v2;
        } while (s >= 1 || s == 0);
        const double multiplier = std::sqrt(-2 * std::log(s) / s);
        next_ = v2 * multiplier;
        haveNext_ = true;
        return v1 * multiplier;
    }

private:
    static constexpr std::uint64_t kMask = (1ULL << 48) - 1;
    std::int32_t next(int bits) {
        seed_ = (seed_ * 0x5DEECE66DULL + 0xBULL) & kMask;
        return static_cast<std::int32_t>(static_cast<std::int64_t>(seed_ >> (48 - bits)));
    }
    std::uint64_t seed_;
    bool haveNext_ = false;
    double next_ = 0.0;
};

}  // namespace qs::quant::testing
