#pragma once
// TensorInfo (what a safetensors header or a GGUF tensor info says of one tensor) and TensorView
// (its bytes, zero-copy).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qs/io/dtype.h"
#include "qs/io/ggml_type.h"
#include "qs/matrix.h"

namespace qs::io {

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0;  // data_offsets, relative to the start of the byte buffer
    std::uint64_t end = 0;
    // A GGUF tensor's element type, as ggml numbers it. `dtype` then names the same numbers where
    // safetensors has them (F32, F16, BF16, F64, I8..I64) and is U8 for the block types (Q8_0,
    // Q4_K, ...), whose bytes only ggmlDecodeRow reads. Unset for safetensors tensors.
    std::optional<GgmlType> ggmlType;
    // llama.cpp's converter stores the q/k projections of the llama architecture with the rows of
    // each of this many heads interleaved for its rotary kernel (convert_hf_to_gguf.py's permute):
    // stored row h*d + 2j + a holds row h*d + a*d/2 + j of the Hugging Face weight (d = rows/heads).
    // Reading the tensor undoes it; 0 = the rows are stored in order.
    int ropeInterleavedHeads = 0;

    std::int64_t numel() const;  // 1 for a rank-0 scalar
    std::uint64_t byteSize() const { return end - begin; }
    std::uint64_t storedSize() const;  // the bytes numel() elements of this type occupy
    std::string typeName() const;      // "BF16" (safetensors), ggml's "q4_K" / "f16" (GGUF)
    bool decodesToF32() const;         // a floating-point dtype, or a ggml type ggmlDecodeRow reads
};

// A view on a tensor's bytes inside a memory-mapped file. Valid while its SafetensorsFile (or the
// Checkpoint holding it) lives.
class TensorView {
public:
    TensorView(const TensorInfo& info, std::span<const std::byte> bytes) : info_(&info), bytes_(bytes) {}

    const TensorInfo& info() const { return *info_; }
    const std::string& name() const { return info_->name; }
    DType dtype() const { return info_->dtype; }
    const std::vector<std::int64_t>& shape() const { return info_->shape; }
    std::int64_t numel() const { return info_->numel(); }
    std::span<const std::byte> bytes() const { return bytes_; }

    std::vector<float> toF32() const;  // every element, converted exactly
    // Elements [first, first + count) in row-major order of shape() to f32: converted for safetensors
    // dtypes, decoded through ggmlDecodeRow (and the row order undone) for GGUF tensors. Throws
    // qs::Error when the range runs past the tensor or the type does not decode.
    void decode(std::size_t first, std::size_t count, float* out) const;
    // A rank-2 tensor (or rank-1 as one row) as a row-major f32 matrix; throws qs::Error otherwise.
    MatrixF toMatrix() const;
    // Tells the kernel that the mapped pages wholly inside this tensor are not needed for now
    // (madvise MADV_DONTNEED): they leave the process's resident set (RssFile) and come back from
    // the page cache if the tensor is read again. For callers that have converted the tensor and
    // keep the copy, e.g. a decoder layer's linears; a view on memory that is not a read-only
    // mapping must not be released (the Checkpoint's views always are mapped).
    void releasePages() const;

private:
    const TensorInfo* info_;
    std::span<const std::byte> bytes_;
};

}  // namespace qs::io
