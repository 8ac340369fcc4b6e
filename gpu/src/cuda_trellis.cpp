#include "cuda_trellis.h"

#include <algorithm>
#include <string>
#include <vector>

#include "qs/error.h"
#include "qs/gpu/device_buffer.h"
#include "qs/gpu/device_info.h"
#include "qs/quant/hadamard.h"
#include "qs/quant/trellis_group.h"

#include "trellis_kernels.h"

namespace qs::gpu {
namespace {

constexpr std::int64_t kMaxWorkspaceBytes = std::int64_t{2} << 30;  // groups in flight share at most 2 GiB

// Every group rotated and divided by its scale, row-major [groups, n]; scales [groups].
void normaliseGroups(const MatrixF& w, const quant::TrellisOptions& o, std::vector<float>& xs,
                     std::vector<float>& scales) {
    const int n = o.groupSize;
    const std::int64_t perRow = w.cols() / n, groups = w.rows() * perRow;
    const quant::RandomHadamard rotation(static_cast<std::size_t>(n), o.seed);
    xs.resize(static_cast<std::size_t>(groups * n));
    scales.resize(static_cast<std::size_t>(groups));
#pragma omp parallel for schedule(static)
    for (std::int64_t g = 0; g < groups; ++g) {
        const std::int64_t r = g / perRow, c0 = (g % perRow) * n;
        float* x = xs.data() + g * n;
        std::copy_n(w.data() + r * w.cols() + c0, n, x);
        rotation.rotate(x);
        const float scale = quant::trellisGroupScale(x, n);
        for (int i = 0; i < n; ++i) x[i] /= scale;
        scales[static_cast<std::size_t>(g)] = scale;
    }
}

}  // namespace

quant::QuantizedLinear cudaTrellis(const MatrixF& w, const quant::TrellisOptions& o) {
    quant::checkTrellisOptions(w, o);
    const int n = o.groupSize;
    const std::int64_t perRow = w.cols() / n, groups = w.rows() * perRow;
    quant::QuantizedLinear q = quant::QuantizedLinear::trellisCodes(w.rows(), w.cols(), o.L, o.K, n, o.seed);
    q.allocateParts();  // scales and start states [rows, perRow]
    if (groups == 0) return q;

    std::vector<float> xs, scales;
    normaliseGroups(w, o, xs, scales);
    std::copy(scales.begin(), scales.end(), q.scales.data());

    const std::int64_t perGroup = kernels::viterbiBytesPerGroup(o.L, o.K, n);
    const std::int64_t batch = std::clamp<std::int64_t>(kMaxWorkspaceBytes / perGroup, 1, groups);
    requireDeviceMemory(
        batch * (perGroup + n * 8) + (std::int64_t{4} << o.L),
        "the trellis search (L = " + std::to_string(o.L) + ", " + std::to_string(batch) + " groups at a time)");
    const std::vector<float> table = quant::TrellisCodebook(o.L).table();
    const DeviceBuffer<float> deviceTable(table.data(), static_cast<std::int64_t>(table.size()));
    DeviceBuffer<float> deviceXs(batch * n);
    DeviceBuffer<std::uint32_t> deviceStates(batch * n);
    RawDeviceBuffer workspace(static_cast<std::size_t>(batch * perGroup));
    std::vector<std::uint32_t> states(static_cast<std::size_t>(batch * n));
    const std::uint32_t mask = (1u << o.K) - 1u;
    for (std::int64_t g0 = 0; g0 < groups; g0 += batch) {
        if (o.cancel && o.cancel->cancelled()) throw Cancelled();
        const std::int64_t count = std::min(batch, groups - g0);
        deviceXs.upload(xs.data() + g0 * n, count * n);
        kernels::viterbiGroups(deviceXs.data(), count, n, deviceTable.data(), o.L, o.K, workspace.data(),
                               deviceStates.data());
        deviceStates.download(states.data(), count * n);
        for (std::int64_t k = 0; k < count; ++k) {
            const std::int64_t g = g0 + k, r = g / perRow, c0 = (g % perRow) * n;
            const std::uint32_t* s = states.data() + k * n;
            q.trellis.starts[static_cast<std::size_t>(g)] = s[0];
            std::uint8_t* codes = q.codes.data() + r * w.cols() + c0;
            for (int t = 0; t < n; ++t) codes[t] = static_cast<std::uint8_t>(s[t] & mask);
        }
        if (o.progress)
            o.progress({"quantize", static_cast<int>(g0 + count), static_cast<int>(groups),
                        static_cast<double>(g0 + count) / static_cast<double>(groups), "trellis groups"});
    }
    return q;
}

}  // namespace qs::gpu
