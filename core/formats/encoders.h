#pragma once
// The encoders (one per file), for the registry in linear_encoder.cpp.
#include "qs/formats/linear_encoder.h"

namespace qs::formats::detail {

const LinearEncoder& gptqV1Encoder();         // gptq_encoder.cpp: "gptq"
const LinearEncoder& gptqV2Encoder();         // gptq_encoder.cpp: "gptq_v2"
const LinearEncoder& awqGemmEncoder();        // awq_encoder.cpp: "awq"
const LinearEncoder& fp8BlockEncoder();       // fp8_encoder.cpp: "fp8"
const LinearEncoder& ctFp8DynamicEncoder();   // ct_fp8_encoder.cpp: "ct-fp8-dynamic"
const LinearEncoder& ctFp8StaticEncoder();    // ct_fp8_encoder.cpp: "ct-fp8"
const LinearEncoder& modelOptFp8Encoder();    // modelopt_fp8_encoder.cpp: "modelopt-fp8"
const LinearEncoder& ctNvfp4Encoder();        // ct_nvfp4_encoder.cpp: "ct-nvfp4"
const LinearEncoder& modelOptNvfp4Encoder();  // modelopt_nvfp4_encoder.cpp: "modelopt-nvfp4"
const LinearEncoder& ctMxfp4Encoder();        // ct_mxfp4_encoder.cpp: "ct-mxfp4"
const LinearEncoder& bnbNf4Encoder();         // bnb_nf4_encoder.cpp: "bnb-nf4"
const LinearEncoder& trellisEncoder();        // trellis_encoder.cpp: "quantscope-trellis"
const LinearEncoder& ctMixedEncoder();        // ct_mixed_encoder.cpp: "ct-mixed"

}  // namespace qs::formats::detail
