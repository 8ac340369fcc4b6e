// The registry of encoders: every layout QuantScope writes, by the name users pass to --format.
#include "qs/formats/linear_encoder.h"

#include "qs/error.h"

#include "encoders.h"

namespace qs::formats {

std::string LinearEncoder::refusal(const quant::QuantizedLinear& q) const {
    if (!storesInput(q.input.format))
        return "its inputs are quantized (" + std::string(quant::activationFormatName(q.input.format)) + "), which " +
               std::string(name()) + " cannot state: the consumer would run it weight-only, not as measured";
    if (q.cacheScale > 0.0f && !storesKvCacheScales())
        return "it carries an FP8 KV-cache scale, which " + std::string(name()) + " cannot store";
    return layoutRefusal(q);
}

std::vector<const LinearEncoder*> allEncoders() {
    return {
        &detail::gptqV1Encoder(),      &detail::gptqV2Encoder(),       &detail::awqGemmEncoder(),
        &detail::fp8BlockEncoder(),    &detail::ctFp8DynamicEncoder(), &detail::ctFp8StaticEncoder(),
        &detail::modelOptFp8Encoder(), &detail::ctNvfp4Encoder(),      &detail::modelOptNvfp4Encoder(),
        &detail::ctMxfp4Encoder(),     &detail::bnbNf4Encoder(),       &detail::trellisEncoder(),
        &detail::ctMixedEncoder(),
    };
}

const LinearEncoder& encoderNamed(std::string_view name) {
    std::string known;
    for (const LinearEncoder* e : allEncoders()) {
        if (e->name() == name) return *e;
        known += (known.empty() ? "" : ", ") + std::string(e->name());
    }
    throw Error("unknown export format '" + std::string(name) + "' (known: " + known + ")");
}

namespace {

// "fp8" holds 128x128 blocks and per-tensor scales (static inputs with the latter); per-channel FP8 is
// not expressible in it (docs/formats/fp8.md: vLLM's fp8 method has none), compressed-tensors holds it,
// with static inputs (ct-fp8) or per-token ones (ct-fp8-dynamic).
const LinearEncoder& fp8EncoderFor(const quant::QuantizedLinear& q) {
    const bool perChannel = q.blockRows == 1 && q.rows > 1;
    if (!perChannel) return detail::fp8BlockEncoder();
    return q.input.format == quant::ActivationFormat::Fp8Tensor ? detail::ctFp8StaticEncoder()
                                                                : detail::ctFp8DynamicEncoder();
}

}  // namespace

const LinearEncoder& defaultEncoderFor(const quant::QuantizedLinear& q) {
    switch (q.method) {
        case quant::Method::Rtn:
        case quant::Method::Gptq: return q.symmetric ? detail::gptqV1Encoder() : detail::gptqV2Encoder();
        case quant::Method::Awq: return detail::awqGemmEncoder();
        case quant::Method::Fp8: return fp8EncoderFor(q);
        case quant::Method::Nvfp4: return detail::ctNvfp4Encoder();
        case quant::Method::Mxfp4: return detail::ctMxfp4Encoder();
        case quant::Method::Nf4: return detail::bnbNf4Encoder();
        case quant::Method::Trellis: return detail::trellisEncoder();
        case quant::Method::Ggml: break;  // a GGUF file (pipeline::writeGguf), not a safetensors layout
    }
    throw Error("no writer for method " + std::string(quant::methodName(q.method)));
}

}  // namespace qs::formats
