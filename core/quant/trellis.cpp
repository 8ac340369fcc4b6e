#include "qs/quant/trellis.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/quant/hadamard.h"
#include "qs/quant/trellis_group.h"

#include "viterbi.h"

namespace qs::quant {
namespace {

// Progress and cancellation from inside the OpenMP loop: exceptions cannot cross it, so a
// cancelled run skips its remaining groups and throws after the loop.
class GroupTicker {
public:
    GroupTicker(const TrellisOptions& o, std::int64_t total) : options_(o), total_(total) {}
    bool stopped() const { return options_.cancel && options_.cancel->cancelled(); }
    void tick() {
        const std::int64_t done = ++done_;
        if (!options_.progress || (done % 64 != 0 && done != total_)) return;
#pragma omp critical(qs_trellis_progress)
        options_.progress({"quantize", static_cast<int>(done), static_cast<int>(total_),
                           static_cast<double>(done) / static_cast<double>(total_), "trellis groups"});
    }

private:
    const TrellisOptions& options_;
    std::int64_t total_;
    std::atomic<std::int64_t> done_{0};
};

QuantizedLinear emptyTrellis(const MatrixF& w, const TrellisOptions& o) {
    QuantizedLinear q = QuantizedLinear::trellisCodes(w.rows(), w.cols(), o.L, o.K, o.groupSize, o.seed);
    q.allocateParts();  // scales and start states [rows, cols / groupSize]
    return q;
}

}  // namespace

void checkTrellisOptions(const MatrixF& w, const TrellisOptions& o) {
    if (o.L < 1 || o.L > kTrellisMaxL || o.K < 1 || o.K > kTrellisMaxK || o.K >= o.L)
        throw Error("quantizeTrellis: need 1 <= K <= 4 and K < L <= 16, got L = " + std::to_string(o.L) +
                    ", K = " + std::to_string(o.K));
    if (o.groupSize < 2 || (o.groupSize & (o.groupSize - 1)) != 0)
        throw Error("quantizeTrellis: the group size must be a power of two >= 2, got " + std::to_string(o.groupSize));
    if (w.cols() % o.groupSize != 0)
        throw Error("quantizeTrellis: " + std::to_string(w.cols()) +
                    " input features are not a multiple of the group size " + std::to_string(o.groupSize));
}

float trellisGroupScale(const float* x, int n) {
    double squares = 0.0;
    for (int i = 0; i < n; ++i) squares += static_cast<double>(x[i]) * x[i];
    const float rms = std::max(static_cast<float>(std::sqrt(squares / n)), 1e-12f);
    return io::f16ToF32(io::f32ToF16(rms));
}

double trellisBitsPerWeight(int L, int K, int groupSize) {
    return (static_cast<double>(L) + static_cast<double>(K) * (groupSize - 1) + 16.0) / groupSize;
}

QuantizedLinear quantizeTrellis(const MatrixF& w, const TrellisOptions& options) {
    checkTrellisOptions(w, options);
    QuantizedLinear q = emptyTrellis(w, options);
    const int n = options.groupSize;
    const std::int64_t perRow = w.cols() / n, groups = w.rows() * perRow;
    const RandomHadamard rotation(static_cast<std::size_t>(n), options.seed);
    const std::vector<float> table = TrellisCodebook(options.L).table();
    const std::uint32_t mask = (1u << options.K) - 1u;
    GroupTicker ticker(options, groups);

#pragma omp parallel
    {
        detail::ViterbiEncoder encoder(table, options.L, options.K, n);
        std::vector<float> x(static_cast<std::size_t>(n));
        std::vector<std::uint32_t> states(static_cast<std::size_t>(n));
#pragma omp for schedule(dynamic, 4)
        for (std::int64_t g = 0; g < groups; ++g) {
            if (ticker.stopped()) continue;
            const std::int64_t r = g / perRow, c0 = (g % perRow) * n;
            std::copy_n(w.data() + r * w.cols() + c0, n, x.data());
            rotation.rotate(x.data());
            const float scale = trellisGroupScale(x.data(), n);
            for (float& v : x) v /= scale;
            encoder.encode(x.data(), n, states.data());
            q.scales(r, g % perRow) = scale;
            q.trellis.starts[static_cast<std::size_t>(g)] = states[0];
            std::uint8_t* codes = q.codes.data() + r * w.cols() + c0;
            for (int t = 0; t < n; ++t)
                codes[t] = static_cast<std::uint8_t>(states[static_cast<std::size_t>(t)] & mask);
            ticker.tick();
        }
    }
    if (ticker.stopped()) throw Cancelled();
    return q;
}

MatrixF trellisDecode(const QuantizedLinear& q) {
    const TrellisParts& t = q.trellis;
    const int n = t.groupSize;
    if (q.codeKind != CodeKind::Trellis || n < 2 || q.cols % n != 0 || t.L < 1 || t.L > kTrellisMaxL || t.K < 1 ||
        t.K > kTrellisMaxK || q.codes.size() != static_cast<std::size_t>(q.rows * q.cols) ||
        t.starts.size() != static_cast<std::size_t>(q.rows * (q.cols / n)) || q.scales.rows() != q.rows ||
        q.scales.cols() != q.cols / n)
        throw Error("trellisDecode: inconsistent trellis parts");
    const TrellisCodebook codebook(t.L);
    const RandomHadamard rotation(static_cast<std::size_t>(n), t.rotationSeed);
    const std::uint32_t stateMask = (1u << t.L) - 1u, symbolMask = (1u << t.K) - 1u;
    const std::int64_t perRow = q.cols / n, groups = q.rows * perRow;
    MatrixF w(q.rows, q.cols);
#pragma omp parallel for schedule(static)
    for (std::int64_t g = 0; g < groups; ++g) {
        const std::int64_t r = g / perRow, c0 = (g % perRow) * n;
        const std::uint8_t* codes = q.codes.data() + r * q.cols + c0;
        float* out = w.data() + r * q.cols + c0;
        const float scale = q.scales(r, g % perRow);
        std::uint32_t state = t.starts[static_cast<std::size_t>(g)] & stateMask;
        out[0] = codebook.value(state) * scale;
        for (int i = 1; i < n; ++i) {
            state = ((state << t.K) | (codes[i] & symbolMask)) & stateMask;
            out[i] = codebook.value(state) * scale;
        }
        rotation.unrotate(out);
    }
    return w;
}

}  // namespace qs::quant
