#pragma once
// LinearReader: the one entry point that decodes any linear layer of a checkpoint, quantized or
// dense, to f32 [out, in] and to its parts. Callers treat every linear alike.
#include <string_view>
#include <vector>

#include "qs/formats/format_info.h"
#include "qs/formats/linear_codec.h"
#include "qs/io/checkpoint.h"

namespace qs::formats {

// The codecs that read `format`, most specific first; the dense codec is always last.
std::vector<const LinearCodec*> codecsFor(Format format);

struct DecodeOptions {
    // decode() refuses a linear whose weights are not all finite (qs/finite_weights.h) unless set.
    bool allowNonFinite = false;
};

class LinearReader {
public:
    // Detects the format; the checkpoint must outlive the reader.
    explicit LinearReader(const io::Checkpoint& checkpoint, DecodeOptions options = {});
    // With a format detected before (formats::detect); its `layers` need not be filled.
    LinearReader(const io::Checkpoint& checkpoint, FormatInfo info, DecodeOptions options = {});
    // The reader keeps a reference: a temporary checkpoint would leave it dangling.
    explicit LinearReader(io::Checkpoint&& checkpoint, DecodeOptions options = {}) = delete;
    LinearReader(io::Checkpoint&& checkpoint, FormatInfo info, DecodeOptions options = {}) = delete;

    const io::Checkpoint& checkpoint() const { return *checkpoint_; }
    const FormatInfo& format() const { return info_; }
    const std::vector<LinearRef>& linears() const { return refs_; }  // quantized and dense, by name

    // Throws qs::Error when `ref` is not a linear of the checkpoint, its tensors are malformed, or
    // (unless DecodeOptions::allowNonFinite) some of its weights decode to NaN or Inf.
    DecodedLinear decode(const LinearRef& ref) const;
    DecodedLinear decode(std::string_view prefix, int expert = -1) const {
        return decode(LinearRef{std::string(prefix), expert});
    }
    MatrixF decodeF32(std::string_view prefix, int expert = -1) const { return decode(prefix, expert).weight; }

    // The codec that stores `ref`; throws qs::Error when `ref` is not a linear of the checkpoint.
    const LinearCodec& codecOf(const LinearRef& ref) const;

private:
    const io::Checkpoint* checkpoint_;
    FormatInfo info_;
    DecodeOptions options_;
    std::vector<LinearRef> refs_;
    std::vector<const LinearCodec*> owners_;  // parallel to refs_
};

}  // namespace qs::formats
