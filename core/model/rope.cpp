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
    if (wavelen > lowFreqWavelen || s.highFreqFactor == s.lowFreqFactor) return invFreq / s.factor;
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
    if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
    std::vector<double> invFreq(static_cast<std::size_t>(headDim / 2));
    for (int i = 0; i < headDim / 2; ++i) {
        const double extrapolated = 1.0 / std::pow(theta, 2.0 * i / headDim);
        const double interpolated = extrapolated / s.factor;
        const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
        const double keep = 1.0 - ramp;  // inv_freq_extrapolation_factor
        invFreq[static_cast<std::size_t>(i)] = interpolated * (1.0 - keep) + extrapolated * keep;
    }
    return invFreq;
}

}  // namespace

double yarnMscale(double scale, double mscale) { return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

// DeepSeek's latent attention rotates heads of qk_rope_head_dim only (its queries' and key's rope parts).
RotaryEmbedding::RotaryEmbedding(const ModelConfig& config)
    : RotaryEmbedding(config.mla.active() ? config.mla.qkRopeHeadDim : config.headDim, config.ropeTheta,
                      config.ropeScaling, config.mla.active() ? 0 : config.rotaryDim) {}

RotaryEmbedding::RotaryEmbedding(int headDim, double theta, const RopeScaling& scaling, int rotaryDim)
    : headDim_(headDim), rotaryDim_(rotaryDim > 0 ? rotaryDim : headDim) {
    if (rotaryDim_ % 2 != 0 || rotaryDim_ > headDim_)
        throw Error("rotary embedding: " + std::to_string(rotaryDim_) + " rotary dimensions do not fit a head of " +
                    std::to_string(headDim_));
    const int half = rotaryDim_ / 2;
    const bool longRope = scaling.type == RopeScalingType::LongRope;
    if (longRope && (scaling.shortFactor.size() != std::size_t(half) || scaling.longFactor.size() != std::size_t(half)))
        throw Error("rotary embedding: longrope needs " + std::to_string(half) + " short and long factors");
    if (scaling.type == RopeScalingType::Yarn) {
        invFreq_ = yarnFrequencies(rotaryDim_, theta, scaling);
        attentionFactor_ = scaling.attentionFactor;
        return;
    }
    invFreq_.resize(static_cast<std::size_t>(half));
    if (longRope) longInvFreq_.resize(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) {
        const auto at = static_cast<std::size_t>(i);
        // 1 / theta^(2i / dim) over the rotary part: transformers' arange(0, dim, 2) / dim.
        double f = 1.0 / std::pow(theta, 2.0 * i / rotaryDim_);
        switch (scaling.type) {
            case RopeScalingType::None: break;
            case RopeScalingType::Linear: f /= scaling.factor; break;
            case RopeScalingType::Llama3: f = llama3Scaled(f, scaling); break;
            case RopeScalingType::LongRope:
                longInvFreq_[at] = f / scaling.longFactor[at];
                f /= scaling.shortFactor[at];
                break;
            case RopeScalingType::Yarn: break;  // yarnFrequencies
        }
        invFreq_[at] = f;
    }
    if (longRope) {
        longFrom_ = scaling.originalMaxPositionEmbeddings;
        attentionFactor_ = scaling.attentionFactor;
    }
}

const std::vector<double>& RotaryEmbedding::inverseFrequencies(int positionsEnd) const {
    return !longInvFreq_.empty() && positionsEnd > longFrom_ ? longInvFreq_ : invFreq_;
}

void RotaryEmbedding::apply(MatrixF& x, int numHeads, int firstPosition) const {
    const int half = rotaryDim_ / 2;
    if (x.cols() != static_cast<Eigen::Index>(numHeads) * headDim_)
        throw Error("rotary embedding: expected " + std::to_string(numHeads * headDim_) + " columns, got " +
                    std::to_string(x.cols()));
    const Eigen::Index rows = x.rows();
    const std::vector<double>& invFreq = inverseFrequencies(firstPosition + static_cast<int>(rows));
    const double scale = attentionFactor_;
#pragma omp parallel for schedule(static) if (rows * numHeads * headDim_ > 65536)
    for (Eigen::Index t = 0; t < rows; ++t) {
        // The angles are computed in double: at positions of 10^5 an f32 product loses the phase.
        const double pos = static_cast<double>(firstPosition + t);
        std::vector<float> cosv(static_cast<std::size_t>(half)), sinv(static_cast<std::size_t>(half));
        for (int i = 0; i < half; ++i) {
            const double angle = pos * invFreq[static_cast<std::size_t>(i)];
            cosv[static_cast<std::size_t>(i)] = static_cast<float>(std::cos(angle) * scale);
            sinv[static_cast<std::size_t>(i)] = static_cast<float>(std::sin(angle) * scale);
        }
        float* row = x.row(t).data();
        for (int h = 0; h < numHeads; ++h) {
            float* head = row + static_cast<std::ptrdiff_t>(h) * headDim_;  // elements rotaryDim_.. pass through
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
