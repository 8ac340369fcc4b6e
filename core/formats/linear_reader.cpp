// The registry of codecs per format and the reader that routes each linear to its codec.
#include "qs/formats/linear_reader.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "qs/error.h"
#include "qs/finite_weights.h"
#include "qs/formats/detect.h"

#include "codecs.h"
#include "quant_config.h"

namespace qs::formats {

namespace {

// "layers.2" before "layers.10": digit runs compare as numbers, so listings follow the model.
bool naturalLess(std::string_view a, std::string_view b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
            std::size_t ie = i, je = j;
            while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
            while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
            const auto da = a.substr(i, ie - i), db = b.substr(j, je - j);
            const auto ta = da.substr(std::min(da.find_first_not_of('0'), da.size()));
            const auto tb = db.substr(std::min(db.find_first_not_of('0'), db.size()));
            if (ta.size() != tb.size()) return ta.size() < tb.size();
            if (ta != tb) return ta < tb;
            i = ie, j = je;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i, ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

}  // namespace

std::vector<const LinearCodec*> codecsFor(Format format) {
    using namespace detail;
    switch (format) {
        case Format::Gptq: return {&gptqCodec(), &denseCodec()};
        case Format::Awq: return {&awqCodec(), &denseCodec()};
        case Format::Fp8: return {&fp8Codec(), &denseCodec()};
        case Format::CompressedTensors: return {&compressedTensorsCodec(), &denseCodec()};
        case Format::ModelOpt: return {&modelOptCodec(), &denseCodec()};
        case Format::Mxfp4: return {&gptOssMxfp4Codec(), &denseCodec()};
        case Format::Bitsandbytes: return {&bnb4BitCodec(), &bnbInt8Codec(), &denseCodec()};
        case Format::QuantscopeTrellis: return {&trellisCodec(), &denseCodec()};
        case Format::Exl3: return {&exl3Codec(), &denseCodec()};
        case Format::Gguf: return {&ggufCodec(), &denseCodec()};
        case Format::Dense:
        case Format::Unknown: return {&denseCodec()};
    }
    return {&denseCodec()};
}

LinearReader::LinearReader(const io::Checkpoint& checkpoint, DecodeOptions options)
    : LinearReader(checkpoint, detect(checkpoint), options) {}

LinearReader::LinearReader(const io::Checkpoint& checkpoint, FormatInfo info, DecodeOptions options)
    : checkpoint_(&checkpoint), info_(std::move(info)), options_(options) {
    // A codec that cannot read the format's quantized layers would claim nothing sensible.
    const auto codecs = info_.decodable ? codecsFor(info_.format) : codecsFor(Format::Dense);
    std::vector<std::pair<LinearRef, const LinearCodec*>> found;
    std::set<std::pair<std::string, int>> claimed;  // the first codec to list a linear owns it
    for (const auto* codec : codecs)
        for (auto& ref : codec->linears(checkpoint))
            if (claimed.emplace(ref.prefix, ref.expert).second) found.emplace_back(std::move(ref), codec);
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
        return a.first.prefix == b.first.prefix ? a.first.expert < b.first.expert
                                                : naturalLess(a.first.prefix, b.first.prefix);
    });
    for (auto& [ref, codec] : found) {
        refs_.push_back(std::move(ref));
        owners_.push_back(codec);
    }
}

const LinearCodec& LinearReader::codecOf(const LinearRef& ref) const {
    const auto it = std::find(refs_.begin(), refs_.end(), ref);
    if (it != refs_.end()) return *owners_[static_cast<std::size_t>(it - refs_.begin())];
    std::string why = checkpoint_->root().string() + ": no linear layer '" + ref.label() + "'";
    if (!info_.decodable) why += " that can be decoded: " + info_.whyNot;
    throw Error(why);
}

DecodedLinear LinearReader::decode(const LinearRef& ref) const {
    const LinearCodec& codec = codecOf(ref);
    DecodedLinear decoded;
    try {
        decoded = codec.decode(*checkpoint_, info_.config, ref);
    } catch (const detail::ConfigError& e) {
        detail::rethrowWithSource(e, info_.configSource);
    }
    // Named by its file when the checkpoint is one GGUF file, by its folder otherwise.
    const std::string where =
        (checkpoint_->gguf() != nullptr ? checkpoint_->configSource() : checkpoint_->root()).string();
    // A linear without inputs or outputs (a [0, n] tensor, which GGUF and safetensors both allow) is no layer.
    if (decoded.weight.rows() == 0 || decoded.weight.cols() == 0)
        throw Error(where + ": " + ref.label() + ": the weight is empty ([" + std::to_string(decoded.weight.rows()) +
                    ", " + std::to_string(decoded.weight.cols()) + "])");
    requireFiniteWeights(decoded.weight, where, ref.label(), options_.allowNonFinite);
    return decoded;
}

}  // namespace qs::formats
