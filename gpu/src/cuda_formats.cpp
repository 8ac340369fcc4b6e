#include "cuda_formats.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>
#include <vector>

#include "qs/error.h"
#include "qs/gpu/device_buffer.h"
#include "qs/gpu/device_info.h"
#include "qs/gpu/format_kernels.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nvfp4.h"

namespace qs::gpu {
namespace {

// The parts of `header` sized for the codes and scales the device writes.
quant::QuantizedLinear allocated(quant::QuantizedLinear header) {
    header.allocateParts();
    return header;
}

// The input's device copy and the code buffer: what every encoder needs.
struct EncodeBuffers {
    DeviceBuffer<float> w;
    DeviceBuffer<std::uint8_t> codes;
    DeviceBuffer<float> scales;

    EncodeBuffers(const MatrixF& m, std::int64_t scaleCount, const char* what) {
        requireDeviceMemory(m.size() * 5 + scaleCount * 8, what);
        w = DeviceBuffer<float>(m.data(), m.size());
        codes = DeviceBuffer<std::uint8_t>(m.size());
        scales = DeviceBuffer<float>(std::max<std::int64_t>(scaleCount, 1));
    }
    void downloadInto(quant::QuantizedLinear& q) const {
        codes.download(q.codes.data(), static_cast<std::int64_t>(q.codes.size()));
        scales.download(q.scales.data(), q.scales.size());
    }
};

std::int32_t orderedKey(float f) {
    const auto i = std::bit_cast<std::int32_t>(f);
    return i >= 0 ? i : std::numeric_limits<std::int32_t>::min() - i;
}
float fromOrderedKey(std::int32_t k) {
    return std::bit_cast<float>(k >= 0 ? k : std::numeric_limits<std::int32_t>::min() - k);
}

std::array<float, 15> findNf4Thresholds() {
    const auto& t = quant::nf4Table();
    std::array<float, 15> thresholds{};
    for (int j = 0; j < 15; ++j) {
        std::int32_t lo = orderedKey(t[static_cast<std::size_t>(j)]);      // nearest is level j or below
        std::int32_t hi = orderedKey(t[static_cast<std::size_t>(j) + 1]);  // nearest is above level j
        while (hi - lo > 1) {
            const std::int32_t mid = lo + (hi - lo) / 2;
            (quant::nearestNf4(fromOrderedKey(mid)) > j ? hi : lo) = mid;
        }
        thresholds[static_cast<std::size_t>(j)] = fromOrderedKey(hi);
    }
    return thresholds;
}

// bitsandbytes' double quantization depends only on the blocks' absmax values in flat order. The
// CPU encoder computes it from a matrix whose 32-value blocks each hold one absmax and zeros, so
// the stored statistics are the CPU's own, bit for bit, at the cost of a pass over half the input.
void doubleQuantizeOnHost(const std::vector<float>& absmax, const quant::Nf4Options& o, quant::QuantizedLinear& q) {
    MatrixF carrier = MatrixF::Zero(static_cast<std::int64_t>(absmax.size()), 32);
    for (std::size_t b = 0; b < absmax.size(); ++b) carrier(static_cast<std::int64_t>(b), 0) = absmax[b];
    quant::Nf4Options carrierOptions = o;
    carrierOptions.blockSize = 32;
    quant::QuantizedLinear stats = quant::quantizeNf4(carrier, carrierOptions);
    std::copy(stats.scales.data(), stats.scales.data() + stats.scales.size(), q.scales.data());
    q.scaleCodes = std::move(stats.scaleCodes);
    q.scaleScales = std::move(stats.scaleScales);
    q.scaleOffset = stats.scaleOffset;
}

}  // namespace

const std::array<float, 15>& nf4Thresholds() {
    static const std::array<float, 15> thresholds = findNf4Thresholds();
    return thresholds;
}

quant::QuantizedLinear cudaFp8(const MatrixF& w, quant::Fp8Scaling scaling, int block) {
    const std::int64_t rows = w.rows(), cols = w.cols();
    quant::QuantizedLinear q = allocated(quant::fp8Layout(rows, cols, scaling, block));
    const std::int64_t br = q.blockRows, bc = q.blockCols;
    if (w.size() == 0) return q;
    EncodeBuffers buffers(w, q.scales.size(), "FP8 encoding");
    DeviceBuffer<std::uint32_t> amax(q.scales.size());
    kernels::fp8Encode(buffers.w.data(), rows, cols, br, bc, amax.data(), buffers.scales.data(), buffers.codes.data());
    buffers.downloadInto(q);
    return q;
}

quant::QuantizedLinear cudaMxfp4(const MatrixF& w) {
    quant::QuantizedLinear q =
        allocated(quant::QuantizedLinear::fp4(quant::Method::Mxfp4, w.rows(), w.cols(), quant::kMxfp4BlockSize));
    if (w.size() == 0) return q;
    EncodeBuffers buffers(w, q.scales.size(), "MXFP4 encoding");
    kernels::mxfp4Encode(buffers.w.data(), w.rows(), w.cols(), buffers.scales.data(), buffers.codes.data());
    buffers.downloadInto(q);
    return q;
}

quant::QuantizedLinear cudaNvfp4(const MatrixF& w) {
    quant::QuantizedLinear q =
        allocated(quant::QuantizedLinear::fp4(quant::Method::Nvfp4, w.rows(), w.cols(), quant::kNvfp4BlockSize));
    if (w.size() == 0) return quant::quantizeNvfp4(w);  // the CPU's tensor scale of an empty matrix
    EncodeBuffers buffers(w, q.scales.size(), "NVFP4 encoding");
    DeviceBuffer<std::uint32_t> amax(1);
    DeviceBuffer<float> tensorScale(1);
    kernels::nvfp4Encode(buffers.w.data(), w.rows(), w.cols(), amax.data(), tensorScale.data(), buffers.scales.data(),
                         buffers.codes.data());
    buffers.downloadInto(q);
    tensorScale.download(&q.globalScale, 1);
    return q;
}

quant::QuantizedLinear cudaNf4(const MatrixF& w, const quant::Nf4Options& o) {
    // The CPU's checks (block size, shape) and error messages: an empty-row probe costs nothing.
    quant::quantizeNf4(MatrixF(0, w.cols()), o);
    quant::QuantizedLinear q = allocated(quant::QuantizedLinear::nf4(w.rows(), w.cols(), o.blockSize));
    if (w.size() == 0) return quant::quantizeNf4(w, o);
    EncodeBuffers buffers(w, q.scales.size(), "NF4 encoding");
    kernels::nf4Encode(buffers.w.data(), w.size(), o.blockSize, nf4Thresholds(), buffers.scales.data(),
                       buffers.codes.data());
    buffers.downloadInto(q);
    if (o.doubleQuant) {
        const std::vector<float> absmax(q.scales.data(), q.scales.data() + q.scales.size());
        doubleQuantizeOnHost(absmax, o, q);
    }
    return q;
}

MatrixF cudaDecode(const quant::QuantizedLinear& q) {
    // The same dispatch as the CPU backend's decode: the formats' own decoders where they apply.
    const bool plainGroups = q.gIdx.empty() && q.rows * q.cols > 0 && q.blockRows > 0 && q.blockCols > 0 &&
                             q.codes.size() == static_cast<std::size_t>(q.rows * q.cols);
    const bool fp8 = plainGroups && q.codeKind == quant::CodeKind::E4M3;
    const bool e2m1 = plainGroups && q.blockRows == 1 && q.codeKind == quant::CodeKind::E2M1;
    const bool nf4 = plainGroups && q.blockRows == 1 && q.codeKind == quant::CodeKind::Nf4 && q.cols % q.blockCols == 0;
    if (!fp8 && !e2m1 && !nf4) return q.dequantize();
    requireDeviceMemory(q.rows * q.cols * 5 + q.scales.size() * 4, "decoding");
    const DeviceBuffer<std::uint8_t> codes(q.codes.data(), static_cast<std::int64_t>(q.codes.size()));
    const DeviceBuffer<float> scales(q.scales.data(), q.scales.size());
    DeviceBuffer<float> out(q.rows * q.cols);
    if (fp8)
        kernels::fp8Decode(codes.data(), scales.data(), q.rows, q.cols, q.blockRows, q.blockCols, out.data());
    else if (e2m1)
        kernels::e2m1Decode(codes.data(), scales.data(), q.globalScale, q.rows, q.cols, q.blockCols, out.data());
    else
        kernels::nf4Decode(codes.data(), scales.data(), q.rows * q.cols, q.blockCols, quant::nf4Table(), out.data());
    MatrixF w(q.rows, q.cols);
    out.download(w.data(), w.size());
    return w;
}

}  // namespace qs::gpu
