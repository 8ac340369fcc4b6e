#pragma once
// The encoders (one per file), for the registry in linear_encoder.cpp.
#include "qs/formats/linear_encoder.h"

namespace qs::formats::detail {

const LinearEncoder& gptqV1Encoder();          // gptq_encoder.cpp: "gptq"
const LinearEncoder& gptqV2Encoder();          // gptq_encoder.cpp: "gptq_v2"
const LinearEncoder& awqGemmEncoder();         // awq_encoder.cpp: "awq"
const LinearEncoder& fp8BlockEncoder();        // fp8_encoder.cpp: "fp8"
const LinearEncoder& ctFp8DynamicEncoder();    // ct_fp8_encoder.cpp: "ct-fp8-dynamic"

}  // namespace qs::formats::detail
