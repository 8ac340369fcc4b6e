#pragma once
// MixedMethods: a method per linear (what a bits-per-weight budget allocated), quantized by a Job as
// one more stream beside the uniform methods. A linear without a method stays dense.
//
// vLLM fuses q/k/v into qkv_proj and gate/up into gate_up_proj and refuses a checkpoint whose fused
// shards differ in scheme, so the allocation chooses per fused group (kFusedGroups), and a rule that
// covers part of a group is refused.
#include <array>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "qs/architectures/module_names.h"
#include "qs/pipeline/method_spec.h"

namespace qs::pipeline {

// The linears of a decoder layer that one serving kernel runs together (they read the same input).
inline const std::array<std::vector<std::string_view>, 4> kFusedGroups = {{
    {architectures::modules::kQProj, architectures::modules::kKProj, architectures::modules::kVProj},
    {architectures::modules::kOProj},
    {architectures::modules::kGateProj, architectures::modules::kUpProj},
    {architectures::modules::kDownProj},
}};

// "model.layers.3.self_attn.q_proj": the name exports, rules and reports use; a VLM's text tower passes
// its prefix (ModelConfig::arch.tensorPrefix, "model.language_model.").
std::string moduleName(int layer, std::string_view module, std::string_view tensorPrefix = "model.");

// Why `method` cannot take part in a per-linear mix, "" when it can: one that chooses for a whole layer
// (AWQ, a GGUF file type's mix) or quantizes activations or the KV cache, which a per-linear mix does
// not calibrate. Single ggml types (parseMixMethod) mix per linear.
std::string mixRefusal(const MethodSpec& method);
// Why a mix written as `format` ("gguf", or a safetensors layout) cannot hold `method`, "" when it can:
// a GGUF file takes ggml types per linear, and only a GGUF file holds a ggml type.
std::string mixFormatRefusal(const MethodSpec& method, const std::string& format);

struct MixedMethods {
    std::string name;                                                    // "mixed 3.50 bpw"
    std::vector<std::map<std::string, MethodSpec, std::less<>>> layers;  // per decoder layer: module -> method

    const MethodSpec* methodOf(int layer, std::string_view module) const;  // null: dense
    bool needsCalibration() const;
    bool sequential() const;  // some linear is quantized by GPTQ: the stream calibrates on itself
    // What MethodResult::method holds: the method most linears use, named `name`.
    MethodSpec summary() const;
    // Throws qs::Error naming the module for a method that cannot be mixed (mixRefusal).
    void check() const;
};

}  // namespace qs::pipeline
