#pragma once
// The integer grids of rtn.h / rtn.cpp as device functions, line for line (gridParams for the AutoAwq
// and AutoGptq rules, quantizeCode, dequantizeCode), shared by the GPTQ column loop and AWQ's α search.
#include "format_codes.cuh"

namespace qs::gpu::grid {

struct Grid {
    float scale;
    float zero;
};

__device__ __forceinline__ float stdClamp(float v, float lo, float hi) { return v < lo ? lo : (hi < v ? hi : v); }

// rtn.cpp gridParams.
__device__ __forceinline__ Grid gridParams(float minValue, float maxValue, int bits, bool sym, bool autoGptq) {
    using codes::stdMax;
    using codes::stdMin;
    const float maxq = static_cast<float>((1 << bits) - 1);
    Grid p{1.0f, 0.0f};
    if (!autoGptq) {
        if (sym) {
            const float absMax = stdMax(stdMax(fabsf(minValue), fabsf(maxValue)), 1e-5f);
            p.scale = absMax / static_cast<float>((1 << (bits - 1)) - 1);
            p.zero = static_cast<float>(1 << (bits - 1));
        } else {
            p.scale = stdMax(maxValue - minValue, 1e-5f) / maxq;
            p.zero = stdClamp(-rintf(minValue / p.scale), 0.0f, maxq);
        }
        return p;
    }
    float xmin = stdMin(minValue, 0.0f), xmax = stdMax(maxValue, 0.0f);
    if (sym) {
        xmax = stdMax(fabsf(xmin), xmax);
        if (xmin < 0) xmin = -xmax;
    }
    if (xmin == 0.0f && xmax == 0.0f) {
        xmin = -1.0f;
        xmax = 1.0f;
    }
    p.scale = (xmax - xmin) / maxq;
    p.zero = sym ? (maxq + 1.0f) / 2.0f : rintf(-xmin / p.scale);
    return p;
}

__device__ __forceinline__ float quantizeCode(float w, Grid p, float maxq) {
    return fminf(fmaxf(rintf(w / p.scale) + p.zero, 0.0f), maxq);
}
__device__ __forceinline__ float dequantizeCode(float code, Grid p) { return (code - p.zero) * p.scale; }

}  // namespace qs::gpu::grid
