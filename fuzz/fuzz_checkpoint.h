#pragma once
// What the targets that end in a whole checkpoint share (fuzz_checkpoint_folder for safetensors
// folders, fuzz_gguf for GGUF files): a scratch folder to write the input to, and the walk every
// command takes over an opened checkpoint — summary, model config, detect, the config-vs-tensors
// check, decode of every linear by its codec, the activation / KV-cache scales. Every outcome must be a result or a qs::Error whose
// message is one sanitised line.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "qs/formats/config_check.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"
#include "qs/formats/serving_quantization.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"

#include "fuzz_support.h"

namespace qs::fuzz {

// A fresh folder (in /dev/shm when there is one), removed when the process exits.
inline std::filesystem::path scratchFolder(const std::string& prefix) {
    namespace fs = std::filesystem;
    static fs::path made;
    const fs::path base = fs::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm")
                                                                                          : fs::temp_directory_path();
    std::string pattern = (base / (prefix + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    made = pattern;
    std::atexit([] {
        std::error_code ec;
        fs::remove_all(made, ec);
    });
    return made;
}

inline void decodeEveryLinear(const io::Checkpoint& ck, const formats::FormatInfo& info) {
    const formats::LinearReader reader(ck, info, {.allowNonFinite = true});
    for (const auto& ref : reader.linears()) {
        try {
            const auto d = reader.decode(ref);
            check(d.weight.rows() > 0 && d.weight.cols() > 0);
            check(d.bias.empty() || static_cast<std::int64_t>(d.bias.size()) == d.weight.rows());
            const auto serving =
                formats::readServingQuantization(ck, info, ref.prefix, d.parts.method == quant::Method::Nvfp4);
            check(!serving.input.active() || serving.input.format == quant::ActivationFormat::Fp8Token ||
                  serving.input.scale > 0.0f);
            check(serving.cacheScale >= 0.0f);
        } catch (const Error& e) {
            checkRefusal(e);
        }
    }
}

inline void exerciseCheckpoint(const io::Checkpoint& ck) {
    (void)ck.summary();
    try {
        (void)model::ModelConfig::fromCheckpoint(ck);
    } catch (const Error& e) {
        checkRefusal(e);
    }
    const auto info = formats::detect(ck);
    for (const auto& layer : info.layers) {
        if (!layer.problem.empty()) check(sanitizeMessage(layer.problem) == layer.problem);
        (void)layer.summary();
    }
    for (const auto& line : formats::configDisagreements(ck, info)) check(!line.empty());
    try {
        for (const auto& scale : formats::readServingScales(ck))
            check(std::isfinite(scale.value) && scale.value > 0.0f);
    } catch (const Error& e) {
        checkRefusal(e);
    }
    decodeEveryLinear(ck, info);
}

}  // namespace qs::fuzz
