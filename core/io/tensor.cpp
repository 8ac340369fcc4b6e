// TensorInfo's sizes and names, and the f32 views of a TensorView: converted element by element for
// safetensors dtypes, decoded a row at a time through ggmlDecodeRow for GGUF tensors.
#include "qs/io/tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include "qs/error.h"

namespace qs::io {

namespace {

std::string describe(const TensorView& t) {
    std::string s = "tensor '" + t.name() + "' (" + t.info().typeName() + " [";
    for (std::size_t i = 0; i < t.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
    return s + "])";
}

// The view's bytes must match its shape; a view built by hand (not by the parser) may not.
void checkBytes(const TensorView& t) {
    const std::uint64_t need = t.info().storedSize();
    if (t.bytes().size() != need)
        throw Error(describe(t) + ": view holds " + std::to_string(t.bytes().size()) + " bytes but needs " +
                    std::to_string(need));
}

// GGUF stores a tensor as rows of its innermost dimension (the last of the row-major shape). A
// vector whose elements llama.cpp interleaved (a q/k bias) is read as rows of one element each.
std::int64_t rowLength(const TensorInfo& info) {
    if (info.shape.empty() || (info.shape.size() == 1 && info.ropeInterleavedHeads > 0)) return 1;
    return info.shape.back();
}

// The stored row that holds row `row` of the tensor as Hugging Face orders it (TensorInfo::ropeInterleavedHeads).
std::int64_t storedRow(const TensorInfo& info, std::int64_t row) {
    if (info.ropeInterleavedHeads <= 0) return row;
    const std::int64_t headRows = info.shape.front() / info.ropeInterleavedHeads, half = headRows / 2;
    const std::int64_t head = row / headRows, within = row % headRows;
    return head * headRows + (within % half) * 2 + within / half;
}

// Rows [firstRow, lastRow) of a GGUF tensor decoded into `out` (whole rows), in parallel when large.
void decodeGgmlRows(const TensorView& t, std::int64_t firstRow, std::int64_t lastRow, float* out) {
    const TensorInfo& info = t.info();
    const GgmlType type = *info.ggmlType;
    const std::int64_t n = rowLength(info);
    const std::size_t rowBytes = ggmlRowBytes(type, n);
    const auto* base = reinterpret_cast<const std::uint8_t*>(t.bytes().data());
    const std::int64_t rows = lastRow - firstRow;
#pragma omp parallel for schedule(static) if (rows * n >= (std::int64_t{1} << 18))
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto stored = static_cast<std::size_t>(storedRow(info, firstRow + r));
        ggmlDecodeRow(type, base + stored * rowBytes, out + r * n, n);
    }
}

void decodeGgml(const TensorView& t, std::size_t first, std::size_t count, float* out) {
    const TensorInfo& info = t.info();
    if (!ggmlTypeTraits(*info.ggmlType).decodes)
        throw Error(describe(t) + ": ggml type " + std::string(ggmlTypeTraits(*info.ggmlType).name) +
                    " cannot be decoded by QuantScope");
    const auto n = static_cast<std::size_t>(rowLength(info));
    if (count == 0 || n == 0) return;
    if (n % static_cast<std::size_t>(ggmlTypeTraits(*info.ggmlType).blockElements) != 0)
        throw Error(describe(t) +
                    ": its elements are interleaved for llama.cpp, which a block type cannot be read back from");
    std::size_t done = 0;
    std::vector<float> row;
    while (done < count) {
        const std::size_t at = first + done, r = at / n, offset = at % n;
        if (offset == 0 && count - done >= n) {  // whole rows straight into the output
            const std::size_t whole = (count - done) / n;
            decodeGgmlRows(t, static_cast<std::int64_t>(r), static_cast<std::int64_t>(r + whole), out + done);
            done += whole * n;
            continue;
        }
        row.resize(n);  // a partial row at either end of the range
        decodeGgmlRows(t, static_cast<std::int64_t>(r), static_cast<std::int64_t>(r + 1), row.data());
        const std::size_t take = std::min(n - offset, count - done);
        std::memcpy(out + done, row.data() + offset, take * sizeof(float));
        done += take;
    }
}

}  // namespace

std::int64_t TensorInfo::numel() const {
    std::int64_t n = 1;
    for (const auto d : shape) n *= d;  // the parser has checked that this cannot overflow
    return n;
}

std::uint64_t TensorInfo::storedSize() const {
    if (!ggmlType) return static_cast<std::uint64_t>(numel()) * dtypeSize(dtype);
    const std::int64_t n = shape.empty() ? 1 : shape.back();
    const std::int64_t rows = n == 0 ? 0 : numel() / n;
    return static_cast<std::uint64_t>(rows) * ggmlRowBytes(*ggmlType, n);
}

std::string TensorInfo::typeName() const {
    return ggmlType ? std::string(ggmlTypeTraits(*ggmlType).name) : std::string(dtypeName(dtype));
}

bool TensorInfo::decodesToF32() const { return ggmlType ? ggmlTypeTraits(*ggmlType).decodes : isFloating(dtype); }

void TensorView::decode(std::size_t first, std::size_t count, float* out) const {
    checkBytes(*this);
    const auto total = static_cast<std::size_t>(numel());
    if (first > total || count > total - first)
        throw Error(describe(*this) + ": elements [" + std::to_string(first) + ", " + std::to_string(first + count) +
                    ") run past its " + std::to_string(total) + " elements");
    if (info_->ggmlType) return decodeGgml(*this, first, count, out);
    convertToF32(dtype(), bytes_.data() + first * dtypeSize(dtype()), count, out);
}

std::vector<float> TensorView::toF32() const {
    std::vector<float> out(static_cast<std::size_t>(numel()));
    decode(0, out.size(), out.data());
    return out;
}

MatrixF TensorView::toMatrix() const {
    const auto& s = shape();
    if (s.size() != 1 && s.size() != 2)
        throw Error(describe(*this) + ": a matrix needs rank 1 or 2, this has rank " + std::to_string(s.size()));
    const Eigen::Index rows = s.size() == 2 ? s[0] : 1;
    const Eigen::Index cols = s.size() == 2 ? s[1] : s[0];
    MatrixF m(rows, cols);
    decode(0, static_cast<std::size_t>(numel()), m.data());
    return m;
}

void TensorView::releasePages() const {
    static const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(bytes_.data());
    const std::uintptr_t first = (begin + page - 1) / page * page, last = (begin + bytes_.size()) / page * page;
    if (last > first)
        ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);  // advice only: failure changes nothing
}

}  // namespace qs::io
