// TensorInfo::numel and the f32 views of a TensorView.
#include "qs/io/tensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "qs/error.h"

namespace qs::io {

namespace {

std::string describe(const TensorView& t) {
    std::string s = "tensor '" + t.name() + "' (" + std::string(dtypeName(t.dtype())) + " [";
    for (std::size_t i = 0; i < t.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
    return s + "])";
}

// The view's bytes must match its shape; a view built by hand (not by the parser) may not.
void checkBytes(const TensorView& t) {
    const std::uint64_t need = static_cast<std::uint64_t>(t.numel()) * dtypeSize(t.dtype());
    if (t.bytes().size() != need)
        throw Error(describe(t) + ": view holds " + std::to_string(t.bytes().size()) + " bytes but needs " +
                    std::to_string(need));
}

}  // namespace

std::int64_t TensorInfo::numel() const {
    std::int64_t n = 1;
    for (const auto d : shape) n *= d;  // the parser has checked that this cannot overflow
    return n;
}

std::vector<float> TensorView::toF32() const {
    checkBytes(*this);
    std::vector<float> out(static_cast<std::size_t>(numel()));
    convertToF32(dtype(), bytes_.data(), out.size(), out.data());
    return out;
}

MatrixF TensorView::toMatrix() const {
    checkBytes(*this);
    const auto& s = shape();
    if (s.size() != 1 && s.size() != 2)
        throw Error(describe(*this) + ": a matrix needs rank 1 or 2, this has rank " + std::to_string(s.size()));
    const Eigen::Index rows = s.size() == 2 ? s[0] : 1;
    const Eigen::Index cols = s.size() == 2 ? s[1] : s[0];
    MatrixF m(rows, cols);
    convertToF32(dtype(), bytes_.data(), static_cast<std::size_t>(numel()), m.data());
    return m;
}

void TensorView::releasePages() const {
    static const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(bytes_.data());
    const std::uintptr_t first = (begin + page - 1) / page * page, last = (begin + bytes_.size()) / page * page;
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);   // advice only: failure changes nothing
}

}  // namespace qs::io
