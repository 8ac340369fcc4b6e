#include "qs/pipeline/activation_calibration.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <vector>

#include "qs/error.h"
#include "qs/quant/fp8.h"

namespace qs::pipeline {

std::string ActivationCalibration::label() const {
    if (percentile >= 100.0) return "max";
    std::ostringstream out;
    out << "p" << percentile;
    return out.str();
}

ActivationCalibration parseActivationCalibration(std::string_view text) {
    if (text == "max") return {};
    const auto bad = [&] {
        return Error("activation calibration '" + std::string(text) +
                     "': use max or a percentile such as p99.9 (0 < p <= 100)");
    };
    if (text.size() < 2 || text.front() != 'p') throw bad();
    double p = 0;
    const auto [end, ec] = std::from_chars(text.data() + 1, text.data() + text.size(), p);
    if (ec != std::errc() || end != text.data() + text.size() || !(p > 0.0 && p <= 100.0)) throw bad();
    return {p};
}

float calibratedAmax(std::span<const float> tokenMaxAbs, double percentile) {
    if (!(percentile > 0.0 && percentile <= 100.0))
        throw Error("calibration percentile must be in (0, 100], got " + std::to_string(percentile));
    if (tokenMaxAbs.empty()) return 0.0f;
    if (!std::ranges::all_of(tokenMaxAbs, [](float v) { return std::isfinite(v); }))
        throw Error("the calibration inputs hold NaN or Inf: no activation scale can be calibrated");
    std::vector<float> sorted(tokenMaxAbs.begin(), tokenMaxAbs.end());
    const auto n = static_cast<double>(sorted.size());
    // The relative slack keeps p * n / 100 that is whole in decimal whole in binary (99.9 % of 1000 is 999).
    const auto rank =
        static_cast<std::size_t>(std::clamp(std::ceil(percentile / 100.0 * n * (1.0 - 1e-12)), 1.0, n)) - 1;
    std::ranges::nth_element(sorted, sorted.begin() + static_cast<std::ptrdiff_t>(rank));
    return sorted[rank];
}

quant::ActivationQuant calibratedInput(quant::ActivationFormat format, const InputStatistics& input,
                                       const ActivationCalibration& calibration) {
    quant::ActivationQuant q{format, 0.0f};
    if (quant::needsCalibratedScale(format))
        q.scale = quant::activationScaleFor(format, calibratedAmax(input.tokenMaxAbs, calibration.percentile));
    return q;
}

float calibratedCacheScale(std::span<const float> tokenMaxAbs, const ActivationCalibration& calibration) {
    return quant::fp8ScaleFor(calibratedAmax(tokenMaxAbs, calibration.percentile));
}

}  // namespace qs::pipeline
