// GGUF linears: every rank-2 weight of a GGUF checkpoint (Checkpoint maps llama.cpp's names to
// Hugging Face's), whatever its ggml type; decoding goes through TensorView, i.e. ggmlDecodeRow, and
// refuses with one line naming the tensor and the type when QuantScope has no decoder for it.
#include "qs/error.h"
#include "qs/io/tensor_name.h"

#include "codecs.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

bool isGgufLinearWeight(const io::CheckpointTensor& t) {
    return t.info->ggmlType && t.info->shape.size() == 2 && t.naming.role != io::TensorRole::Embedding &&
           t.naming.role != io::TensorRole::Norm;
}

class GgufCodec final : public LinearCodec {
public:
    std::string_view name() const override { return "gguf"; }

    std::vector<LinearRef> linears(const io::Checkpoint& checkpoint) const override {
        return refsWithSuffix(checkpoint, ".weight", isGgufLinearWeight);
    }

    LayerQuantInfo describe(const io::Checkpoint& checkpoint, const nlohmann::json&,
                            const LinearRef& ref) const override {
        const io::TensorView w = weight(checkpoint, ref);
        const io::GgmlTypeTraits& traits = io::ggmlTypeTraits(*w.info().ggmlType);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = "gguf";
        // Plain float types (f32, f16, bf16) are dense weights, named as the dense codec names them.
        info.scheme = traits.isFloat ? "dense" : std::string(traits.name);
        info.bits = static_cast<int>(traits.bitsPerWeight());
        info.groupSize = traits.blockElements;
        info.granularity = traits.blockElements > 1 ? "group" : "tensor";
        info.rows = w.shape()[0];
        info.cols = w.shape()[1];
        if (!traits.decodes) info.problem = "ggml type " + info.scheme + " cannot be decoded by QuantScope";
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& checkpoint, const nlohmann::json&, const LinearRef& ref) const override {
        const io::TensorView w = weight(checkpoint, ref);
        const io::GgmlTypeTraits& traits = io::ggmlTypeTraits(*w.info().ggmlType);
        if (!traits.decodes)
            failTensor(checkpoint, w.name(),
                       "ggml type " + std::string(traits.name) + " cannot be decoded by QuantScope");
        DecodedLinear d;
        d.ref = ref;
        d.quantized = traits.blockElements > 1;
        d.weight = w.toMatrix();
        d.partsExact = false;  // ggml's blocks (super-blocks, sub-scales, grids) are not QuantizedLinear's parts
        d.parts.rows = d.weight.rows();
        d.parts.cols = d.weight.cols();
        d.bias = readBias(checkpoint, ref, d.weight.rows());
        return d;
    }

private:
    static io::TensorView weight(const io::Checkpoint& checkpoint, const LinearRef& ref) {
        requireUnstacked(checkpoint, ref, "gguf");
        const io::TensorView w = requireTensor(checkpoint, ref.prefix + ".weight", "a GGUF linear");
        requireRank(checkpoint, w, 2);
        if (!w.info().ggmlType) failTensor(checkpoint, w.name(), "is not a GGUF tensor");
        return w;
    }
};

}  // namespace

const LinearCodec& ggufCodec() {
    static const GgufCodec codec;
    return codec;
}

}  // namespace qs::formats::detail
