#pragma once
// The codecs (one per file) and what they share.
#include <functional>
#include <string_view>
#include <vector>

#include "qs/formats/linear_codec.h"

namespace qs::formats::detail {

const LinearCodec& denseCodec();              // dense_codec.cpp
const LinearCodec& gptqCodec();               // gptq_codec.cpp
const LinearCodec& awqCodec();                // awq_codec.cpp
const LinearCodec& fp8Codec();                // fp8_codec.cpp
const LinearCodec& compressedTensorsCodec();  // compressed_tensors_codec.cpp
const LinearCodec& modelOptCodec();           // modelopt_codec.cpp
const LinearCodec& gptOssMxfp4Codec();        // gpt_oss_mxfp4_codec.cpp
const LinearCodec& bnb4BitCodec();            // bnb_4bit_codec.cpp
const LinearCodec& bnbInt8Codec();            // bnb_int8_codec.cpp
const LinearCodec& trellisCodec();            // trellis_codec.cpp (QuantScope's own trellis layout)
const LinearCodec& exl3Codec();               // exl3_codec.cpp (exllamav3, read-only)
const LinearCodec& ggufCodec();               // gguf_codec.cpp (llama.cpp's GGUF, every ggml type)

// EXL3 detection without a quantization_config: a rank-3 "<p>.trellis" beside "<p>.suh" or "<p>.su".
bool looksLikeExl3(const io::Checkpoint& checkpoint);
// Adds quantization_config.json's tensor_storage to an EXL3 config (or takes that file as the
// config when config.json has none).
void addExl3TensorStorage(const io::Checkpoint& checkpoint, nlohmann::json& config);

// Prefixes of the tensors named "<prefix><suffix>" that `accept` (when given) takes, in name order.
std::vector<LinearRef> refsWithSuffix(const io::Checkpoint& checkpoint, std::string_view suffix,
                                      const std::function<bool(const io::CheckpointTensor&)>& accept = {});
// "<prefix>.bias" as f32 [rows] when present, else empty.
std::vector<float> readBias(const io::Checkpoint& checkpoint, const LinearRef& ref, std::int64_t rows);
// Refuses refs with an expert index for codecs whose tensors are not stacked.
void requireUnstacked(const io::Checkpoint& checkpoint, const LinearRef& ref, std::string_view codec);

}  // namespace qs::formats::detail
