#pragma once
// MethodSpec: one quantization setting a user asks for ("gptq4-act", "nvfp4", "trellis3", ...),
// parsed from the short names the CLI and the GUI use, with its parameters and its display label.
//
//   rtnB      round to nearest, B bits (2..8), asymmetric, groups of groupSize
//   gptqB     GPTQ, B bits (2..8), asymmetric as in the reference algorithms; -act: act-order; -sym: symmetric (the
//             grid vLLM's Marlin kernels run), e.g. gptq4-act-sym
//   gptaqB    GPTAQ (qs/quant/gptaq.h): GPTQ corrected towards the full-precision model's inputs, exported as
//             GPTQ; the same options (gptaq4-act). Needs true-sequential calibration (the quantized model's
//             inputs beside the original's); runs on the CPU
//   awqB      AWQ scale search, then asymmetric RTN (AutoAWQ's zero-point grid)
//   fp8       FP8 E4M3, 128x128 block scales; fp8-channel: one scale per output row (compressed-tensors
//             FP8_DYNAMIC); fp8-tensor: one scale for the matrix
//   fp8-w8a8  FP8 W8A8: one scale per weight tensor and a static input scale per linear, calibrated
//             (vLLM fp8 static, compressed-tensors FP8, ModelOpt FP8); fp8-w8a8-dynamic: per-channel
//             weights, inputs quantized per token at run time (compressed-tensors FP8_DYNAMIC)
//   mxfp4 / nvfp4 / nf4; nvfp4-w4a4: NVFP4 weights and inputs (a calibrated input global scale)
//   trellisK  QTIP-style trellis, K bits per weight (1..4), L = 8 unless given as trellisK-lL
//   q4_k_m, q6_k, q8_0, f16, ...  llama-quantize's file types (gguf_type_mix.h), any case: a ggml type
//             per tensor as llama.cpp's mix chooses it, importance-weighted by the calibration when given
// A mix's candidates and overrides (parseMixMethod) read ggml's own type names as one type per linear:
//   q3_K, q4_K, q5_K, q6_K, q8_0, q4_0, iq4_xs, ...  every linear in that ggml type (llama-quantize
//             --tensor-type), importance-weighted as the GGUF methods are; a mix of them is one GGUF file
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/ggml_type.h"
#include "qs/quant/activation_quant.h"

namespace qs::pipeline {

enum class MethodKind { Rtn, Gptq, Awq, Fp8, Mxfp4, Nvfp4, Nf4, Trellis, Gguf };
enum class Fp8Granularity { Block, Channel, Tensor };

struct MethodSpec {
    MethodKind kind = MethodKind::Rtn;
    std::string name;       // the short name it was parsed from, normalised ("gptq4-act")
    int bits = 4;           // code bits (trellis: K)
    int groupSize = 128;    // integer methods: -1 = one group per row
    bool actOrder = false;  // GPTQ
    bool gptaq = false;     // GPTQ with GPTAQ's correction (kind Gptq: it exports as GPTQ)
    bool sym = false;
    int trellisL = 8;
    Fp8Granularity fp8Scales = Fp8Granularity::Block;  // FP8
    int ggufFileType = -1;                             // GGUF: llama_ftype (15 = Q4_K_M); -1 with ggmlType
    std::optional<io::GgmlType> ggmlType;  // GGUF, one ggml type per linear (a mix's candidate), no file type
    quant::ActivationFormat activations = quant::ActivationFormat::None;  // W8A8 / W4A4: the inputs too
    bool kvCacheFp8 = false;  // the KV cache in FP8 E4M3 with calibrated k/v scales (--kv-cache fp8)

    std::string label() const;        // "GPTQ int4, g64, act-order" (the reference KL table's wording)
    std::string weightLabel() const;  // the same without the KV cache's part
    bool needsCalibration() const;    // GPTQ, AWQ and static input scales read the layer inputs
    bool sequential() const;          // GPTQ and AWQ: quantized from a stream of their own (true-sequential)
    bool integerGrid() const;         // RTN, GPTQ, AWQ
    bool gguf() const { return kind == MethodKind::Gguf; }
    // A GGUF method that chooses for the whole model (a file type's mix), not for one linear.
    bool ggufFileMix() const { return gguf() && !ggmlType; }
};

// Throws qs::Error naming the bad entry. `groupSize` applies to the integer methods.
MethodSpec parseMethod(std::string_view name, int groupSize = 128);
std::vector<MethodSpec> parseMethodList(std::string_view commaSeparated, int groupSize = 128);
// As parseMethod, except that ggml's quantized type names ("q4_K", "q8_0", "iq4_xs") name one ggml type
// per linear (MethodSpec::ggmlType) rather than llama-quantize's file types: --candidates and --override.
MethodSpec parseMixMethod(std::string_view name, int groupSize = 128);
std::vector<MethodSpec> parseMixMethodList(std::string_view commaSeparated, int groupSize = 128);

}  // namespace qs::pipeline
