#pragma once
// Shared by the float-format tests: the reference vectors (docs/reference-algorithms.md) and Gaussian samples.
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

}  // namespace qs::quant::testing
