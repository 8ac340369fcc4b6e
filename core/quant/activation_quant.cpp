#include "qs/quant/activation_quant.h"

#include <algorithm>

#include "qs/error.h"
#include "qs/quant/fp8.h"
#include "qs/quant/nvfp4.h"

#include "fp_codes.h"

namespace qs::quant {
namespace {

// Row by row: e4m3(x / scale) * scale, the scale of row r from `scaleOf(r)`.
template <typename ScaleOf>
void fakeQuantizeRowsFp8(MatrixF& x, ScaleOf scaleOf) {
    const auto& e4m3 = detail::e4m3Table();
    const std::int64_t cols = x.cols();
#pragma omp parallel for schedule(static) if (x.size() > (1 << 16))
    for (std::int64_t r = 0; r < x.rows(); ++r) {
        float* row = x.data() + r * cols;
        const float scale = scaleOf(row);
#pragma omp simd
        for (std::int64_t c = 0; c < cols; ++c) row[c] = e4m3[detail::encodeE4m3(row[c] / scale)] * scale;
    }
}

}  // namespace

std::string_view activationFormatName(ActivationFormat format) {
    switch (format) {
        case ActivationFormat::None: return "none";
        case ActivationFormat::Fp8Tensor: return "fp8-static";
        case ActivationFormat::Fp8Token: return "fp8-token";
        case ActivationFormat::Nvfp4: return "nvfp4";
    }
    return "none";
}

bool needsCalibratedScale(ActivationFormat format) {
    return format == ActivationFormat::Fp8Tensor || format == ActivationFormat::Nvfp4;
}

float activationScaleFor(ActivationFormat format, float amax) {
    switch (format) {
        case ActivationFormat::Fp8Tensor: return fp8ScaleFor(amax);
        // The engines store the divisor 448·6 / amax (compressed-tensors' input_global_scale) and use its
        // reciprocal: the scale is that reciprocal, so the stored divisor gives back exactly this scale (not
        // every f32 has an f32 whose reciprocal it is: amax / 2688 lost a ulp in the export on some CPUs).
        case ActivationFormat::Nvfp4: return 1.0f / (detail::kE4m3Max * detail::kE2m1Max / std::max(amax, 1e-12f));
        default: return 0.0f;
    }
}

ActivationQuant fusedInput(std::span<const ActivationQuant> inputs) {
    ActivationQuant fused;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (i > 0 && inputs[i].format != fused.format)
            throw Error("linears that read one input quantize it differently (" +
                        std::string(activationFormatName(fused.format)) + " vs " +
                        std::string(activationFormatName(inputs[i].format)) + "); an engine fuses them into one GEMM");
        fused.format = inputs[i].format;
        fused.scale = std::max(fused.scale, inputs[i].scale);
    }
    return fused;
}

void fakeQuantizeFp8(MatrixF& x, float scale) {
    if (!(scale > 0.0f)) throw Error("FP8 fake quantization needs a positive scale");
    fakeQuantizeRowsFp8(x, [scale](const float*) { return scale; });
}

void fakeQuantize(MatrixF& x, const ActivationQuant& quant) {
    switch (quant.format) {
        case ActivationFormat::None: return;
        case ActivationFormat::Fp8Tensor: fakeQuantizeFp8(x, quant.scale); return;
        case ActivationFormat::Fp8Token: {
            const std::int64_t cols = x.cols();
            fakeQuantizeRowsFp8(x, [cols](const float* row) { return fp8ScaleFor(detail::absMax(row, cols)); });
            return;
        }
        case ActivationFormat::Nvfp4:
            if (!(quant.scale > 0.0f)) throw Error("NVFP4 activation quantization needs a positive global scale");
            x = dequantizeNvfp4(quantizeNvfp4(x, quant.scale));
            return;
    }
}

}  // namespace qs::quant
