// One decoder layer at a time, as the job runs it:
//  - the forward pass's grow-only buffers (cuda_layer_math.cpp): an input, two outputs, a weight's
//    scratch, the keys and values of one sequence; a resident layer is left out (it is only kept
//    when half the free memory holds it);
//  - the Hessian sinks of the layer's four distinct inputs (cuda_hessian.cpp), all accumulating at
//    the end of the calibration pass;
//  - then, module by module in the job's order, the GPTQ or AWQ workspace next to the sinks whose
//    modules are not yet done (an input's sink is released when its last module takes its H).
#include "device_plan.h"

#include <algorithm>
#include <initializer_list>

#include "qs/quant/gptq.h"
#include "qs/quant/rtn.h"

#include "cuda_awq.h"
#include "cuda_gptq.h"

namespace qs::gpu {
namespace {

struct Shape {
    std::int64_t hidden, intermediate, q, kv, seq;
};

std::int64_t forwardBytes(const Shape& s) {
    const std::int64_t widest = std::max({s.hidden, s.intermediate, s.q});
    return s.seq * widest * 4 * 3 + s.intermediate * s.hidden * 4 + 2 * s.seq * s.kv * 4;
}

// f64 sums and the f32 gram of one chunk, the per-channel |x| sums, two chunk buffers.
std::int64_t sinkBytes(std::int64_t features, std::int64_t seq) {
    const std::int64_t chunk = std::min<std::int64_t>(seq, 2048);
    return features * features * 12 + features * 16 + 2 * chunk * features * 4;
}

std::int64_t gptqBytes(std::int64_t rows, std::int64_t cols, int groupSize) {
    return gptqDeviceBytes(rows, cols, quant::GptqOptions{}.blockSize, quant::groupCount(groupSize, cols));
}

// The largest of the quantization phases, each with the sinks still alive then.
std::int64_t quantizeBytes(const Shape& s, const pipeline::DeviceWorkload& w) {
    const std::int64_t qkv = sinkBytes(s.hidden, s.seq), o = sinkBytes(s.q, s.seq);
    const std::int64_t gateUp = sinkBytes(s.hidden, s.seq), down = sinkBytes(s.intermediate, s.seq);
    std::int64_t peak = w.statistics ? qkv + o + gateUp + down : 0;
    if (w.gptq) {
        const int g = w.groupSize;
        peak = std::max({peak, qkv + o + gateUp + down + gptqBytes(s.q, s.hidden, g),
                         o + gateUp + down + gptqBytes(s.kv, s.hidden, g), gateUp + down + gptqBytes(s.hidden, s.q, g),
                         gateUp + down + gptqBytes(s.intermediate, s.hidden, g),
                         down + gptqBytes(s.intermediate, s.hidden, g), gptqBytes(s.hidden, s.intermediate, g)});
    }
    if (w.awq) {
        peak = std::max({peak, qkv + o + gateUp + down + awqMinimumDeviceBytes(s.q + 2 * s.kv, s.hidden),
                         o + gateUp + down + awqMinimumDeviceBytes(s.hidden, s.q),
                         gateUp + down + awqMinimumDeviceBytes(2 * s.intermediate, s.hidden),
                         down + awqMinimumDeviceBytes(s.hidden, s.intermediate)});
    }
    // Any encoder: the largest weight in f32 and its one-byte codes.
    return std::max(peak, s.intermediate * s.hidden * 5);
}

}  // namespace

std::int64_t cudaPeakDeviceBytes(const pipeline::DeviceWorkload& w) {
    const model::ModelConfig& c = w.config;
    const Shape s{c.hiddenSize, c.intermediateSize, c.qDim(), c.kvDim(), std::max<std::int64_t>(w.sequenceLength, 1)};
    return forwardBytes(s) + quantizeBytes(s, w);
}

}  // namespace qs::gpu
