// planIdentity: what a work folder must match before a run may resume from it.
#include <cstdint>
#include <cstdio>

#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_fingerprint.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/matmul_choice.h"

namespace qs::pipeline {
namespace {

// The layout of the folder's records: 2 keeps the hidden states as raw f32 sequence files
// (HiddenStream). A folder of another layout is refused for resume by name, not by a parse error.
constexpr int kWorkFolderFormat = 2;

// The name tells apart what the fields below do not (gptaq4 from gptq4: MethodSpec::gptaq), so a new
// field need not change the identity of the folders already written.
nlohmann::json methodIdentity(const MethodSpec& m) {
    return {m.name,
            int(m.kind),
            m.bits,
            m.groupSize,
            m.actOrder,
            m.sym,
            m.trellisL,
            int(m.fp8Scales),
            m.ggufFileType,
            m.ggmlType ? int(*m.ggmlType) : -1,
            int(m.activations),
            m.kvCacheFp8};
}

// FNV-1a over the token ids, with each sequence's length: equal hashes for equal texts and windows.
std::string tokensHash(const TokenSequences& sequences) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    const auto mix = [&h](std::uint64_t v) {
        for (int b = 0; b < 8; ++b) h = (h ^ ((v >> (8 * b)) & 0xFF)) * 0x100000001b3ull;
    };
    for (const auto& s : sequences) {
        mix(s.size());
        for (const auto t : s) mix(std::uint64_t(std::int64_t(t)));
    }
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
    return std::to_string(sequences.size()) + " sequences, " + text;
}

}  // namespace

nlohmann::json planIdentity(const JobPlan& plan) {
    nlohmann::json methods = nlohmann::json::array();
    for (const auto& m : plan.methods) methods.push_back(methodIdentity(m));
    nlohmann::json mixed = nlohmann::json::array();
    for (const auto& mix : plan.mixed) {
        nlohmann::json layers = nlohmann::json::array();
        for (const auto& layer : mix.layers) {
            nlohmann::json modules = nlohmann::json::object();
            for (const auto& [module, m] : layer) modules[module] = methodIdentity(m);
            layers.push_back(std::move(modules));
        }
        mixed.push_back({{"name", mix.name}, {"layers", std::move(layers)}});
    }
    nlohmann::json identity = {{"work_folder_format", kWorkFolderFormat},
                               {"checkpoint", io::fingerprintOf(io::Checkpoint::open(plan.checkpoint)).describe()},
                               {"methods", std::move(methods)},
                               {"mixed", std::move(mixed)},
                               {"calibration", tokensHash(plan.calibration)},
                               {"evaluation", tokensHash(plan.evaluation)},
                               {"per_layer_kl", plan.perLayerKl},
                               {"per_group_kl", plan.perGroupKl},
                               {"true_sequential", plan.trueSequential},
                               {"seed", plan.seed},
                               {"activation_percentile", plan.activationCalibration.percentile},
                               {"moe_calibrate_all_experts", plan.moeCalibrateAllExperts},
                               {"allow_non_finite", plan.allowNonFinite},
                               {"cuda", plan.backend ? plan.backend->isCuda() : plan.device == DeviceChoice::Cuda}};
    // BF16 calibration gives other Hessians: a folder resumes only with the same setting (f32 folders of
    // earlier releases name none, and resume as f32).
    if (selectMatmul(plan).bf16) identity["matmul"] = "bf16";
    if (plan.imatrix) identity["imatrix"] = plan.imatrix->fingerprint();  // folders without one name none
    // Rotated weights quantize to other codes; folders of runs without --rotate name none.
    if (plan.rotate) identity["rotation_seed"] = plan.rotationSeed;
    return identity;
}

}  // namespace qs::pipeline
