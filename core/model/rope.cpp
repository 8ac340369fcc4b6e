#include "qs/model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "qs/error.h"

namespace qs::model {
namespace {

// transformers' _compute_llama3_parameters: long wavelengths are slowed down by `factor`, short ones
// kept, and the band in between interpolated smoothly.
double llama3Scaled(double invFreq, const RopeScaling& s) {
    const double oldContext = s.originalMaxPositionEmbeddings;
    const double lowFreqWavelen = oldContext / s.lowFreqFactor;
    const double highFreqWavelen = oldContext / s.highFreqFactor;
    const double wavelen = 2.0 * std::numbers::pi / invFreq;
    if (wavelen < highFreqWavelen) return invFreq;
    if (wavelen > lowFreqWavelen) return invFreq / s.factor;
    const double smooth = (oldContext / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
    return (1.0 - smooth) * invFreq / s.factor + smooth * invFreq;
}

// transformers' find_correction_dim: the dimension whose wavelength turns `rotations` times over the
// original context.
double yarnCorrectionDim(double rotations, int headDim, double theta, int originalContext) {
    return headDim * std::log(originalContext / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(theta));
}

// transformers' _compute_yarn_parameters: dimensions below `low` keep their frequency (extrapolation),
// those above `high` are divided by the factor (interpolation), a linear ramp between. With truncate
// the range is rounded out to whole dimensions (what llama.cpp always does); without, it is not.
std::vector<double> yarnFrequencies(int headDim, double theta, const RopeScaling& s) {
    double low = yarnCorrectionDim(s.betaFast, headDim, theta, s.originalMaxPositionEmbeddings);
    double high = yarnCorrectionDim(s.betaSlow, headDim, theta, s.originalMaxPositionEmbeddings);
    if (s.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(headDim - 1));
    if (low == high) high += 0.001;   // transformers' guard against a zero-width ramp
    std::vector<double> invFreq(static_cast<std::size_t>(headDim / 2));
    for (int i = 0; i < headDim / 2; ++i) {
        const double extrapolated = 1.0 / std::pow(theta, 2.0 * i / headDim);
        const double interpolated = extrapolated / s.factor;
        const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
        const double keep = 1.0 - ramp;   // inv_freq_extrapolation_factor
        invFreq[static_cast<std::size_t>(i)] = interpolated * (1.0 - keep) + extrapolated * keep;
    }
    return invFreq;
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(const ModelConfig& config)
    : RotaryEmbedding(config.headDim, config.ropeTheta, config.ropeScaling) {}

RotaryEmbedding::RotaryEmbedding(int headDim, double theta, const RopeScaling& scaling) : headDim_(headDim) {
    if (scaling.type == RopeScalingType::Yarn) {
        invFreq_ = yarnFrequencies(headDim, theta, scaling);
        attentionScaling_ = scaling.attentionFactor;
        return;
    }
    const int half = headDim_ / 2;
    invFreq_.resize(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) {
        double f = 1.0 / std::pow(theta, 2.0 * i / headDim_);
        switch (scaling.type) {
            case RopeScalingType::None: break;
            case RopeScalingType::Linear: f /= scaling.factor; break;
            case RopeScalingType::Llama3: f = llama3Scaled(f, scaling); break;
            case RopeScalingType::Yarn: break;   // yarnFrequencies
        }
        invFreq_[static_cast<std::size_t>(i)] = f;
    }
}

void RotaryEmbedding::apply(MatrixF& x, int numHeads, int firstPosition) const {
    const int half = headDim_ / 2;
    if (x.cols() != static_cast<Eigen::Index>(numHeads) * headDim_)
        throw Error("rotary embedding: expected " + std::to_string(numHeads * headDim_) + " columns, got " +
                    std::to_string(x.cols()));
    const Eigen::Index rows = x.rows();
#pragma omp parallel for schedule(static) if (rows * numHeads * headDim_ > 65536)
    for (Eigen::Index t = 0; t < rows; ++t) {
        // The angles are computed in double: at positions of 10^5 an f32 product loses the phase.
        const double pos = static_cast<double>(firstPosition + t);
        std::vector<float> cosv(static_cast<std::size_t>(half)), sinv(static_cast<std::size_t>(half));
        for (int i = 0; i < half; ++i) {
            const double angle = pos * invFreq_[static_cast<std::size_t>(i)];
            cosv[static_cast<std::size_t>(i)] = static_cast<float>(std::cos(angle) * attentionScaling_);
            sinv[static_cast<std::size_t>(i)] = static_cast<float>(std::sin(angle) * attentionScaling_);
        }
        float* row = x.row(t).data();
        for (int h = 0; h < numHeads; ++h) {
            float* head = row + static_cast<std::ptrdiff_t>(h) * headDim_;
            for (int i = 0; i < half; ++i) {
                const float a = head[i], b = head[i + half];
                const float c = cosv[static_cast<std::size_t>(i)], s = sinv[static_cast<std::size_t>(i)];
                head[i] = a * c - b * s;
                head[i + half] = b * c + a * s;
            }
        }
    }
}

}  // namespace qs::model
