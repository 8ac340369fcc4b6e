// A GGUF file seen as a checkpoint: llama.cpp's tensor names become Hugging Face names, the shapes
// become row-major, stacked experts become one tensor per expert (slices of the stacked bytes), for
// the llama architecture the q/k row interleaving of llama.cpp's converter is noted on the tensor so
// that reading it gives the Hugging Face weight back, and the tensors the converter stores transformed are listed
// to be read back through the inverse: gemma3's and qwen35's norms (stored as 1 + w) shifted, qwen35's Gated
// DeltaNet (A_log, the conv's unit dim, the value heads tiled) undone.
#include "gguf_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qs/architectures/family.h"
#include "qs/error.h"
#include "qs/io/gguf_names.h"
#include "qs/io/json_value.h"
#include "qs/io/shape_text.h"
#include "qs/message_text.h"

#include "gguf_read_names.h"

namespace qs::io::detail {

namespace {

using nlohmann::json;

// Head counts of the synthesized config through the checked accessor: a count past int's range in
// the metadata is refused, naming the file, rather than truncated.
int configInt(const json& config, const char* key, const GgufFile& file) {
    return static_cast<int>(
        io::jsonIntegerField(config, key, file.path().string(), {0, std::numeric_limits<std::int32_t>::max()})
            .value_or(0));
}

// The heads whose rows llama.cpp interleaved in this (renamed) tensor, or 0.
int interleavedHeads(const TensorInfo& t, const json& config, const GgufFile& file) {
    const bool q = t.name.ends_with("self_attn.q_proj.weight") || t.name.ends_with("self_attn.q_proj.bias");
    const bool k = t.name.ends_with("self_attn.k_proj.weight") || t.name.ends_with("self_attn.k_proj.bias");
    if (!q && !k) return 0;
    const int heads = configInt(config, "num_attention_heads", file);
    return k ? configInt(config, "num_key_value_heads", file) : heads;
}

void checkInterleaving(const TensorInfo& t, const GgufFile& file, const std::string& ggufName) {
    const int heads = t.ropeInterleavedHeads;
    const std::int64_t rows = t.shape.empty() ? 0 : t.shape.front();
    if (t.shape.empty() || t.shape.size() > 2 || heads <= 0 || rows % (2 * static_cast<std::int64_t>(heads)) != 0)
        throw Error(file.path().string() + ": tensor '" + ggufName + "': " + std::to_string(rows) + " rows cannot be " +
                    std::to_string(heads) + " heads of rotary pairs, as the llama architecture stores q and k");
}

bool isBlockQuantized(const TensorInfo& t) { return ggmlTypeTraits(*t.ggmlType).blockElements > 1; }

bool elementWise(const TensorInfo& t) {
    return t.ggmlType == GgmlType::F32 || t.ggmlType == GgmlType::F16 || t.ggmlType == GgmlType::BF16;
}

// "blk.N.<module>.weight" -> N, when the name is that.
std::optional<std::string> layerOf(std::string_view name, std::string_view module) {
    constexpr std::string_view kBlk = "blk.";
    const std::string suffix = "." + std::string(module) + ".weight";
    if (!name.starts_with(kBlk) || !name.ends_with(suffix) || name.size() <= kBlk.size() + suffix.size())
        return std::nullopt;
    return std::string(name.substr(kBlk.size(), name.size() - kBlk.size() - suffix.size()));
}

// deepseek2's attn_k_b / attn_v_b of one layer as the kv_b_proj they were split from (GgufCheckpoint::LatentJoin):
// nullopt for any other tensor, and for both when the layer also holds attn_kv_b whole (which then reads back).
std::optional<TensorInfo> latentKvB(const TensorInfo& stored, const GgufFile& file, const GgufReadNames& names,
                                    GgufCheckpoint& out) {
    if (names.family == nullptr || names.family->extra != architectures::ConfigExtra::DeepseekV3) return std::nullopt;
    const std::string where = file.path().string() + ": tensor '" + stored.name + "'";
    if (const auto layer = layerOf(stored.name, "attn_v_b")) {
        if (file.find("blk." + *layer + ".attn_k_b.weight") == nullptr &&
            file.find("blk." + *layer + ".attn_kv_b.weight") == nullptr)
            throw Error(where + " has no attn_k_b beside it to rebuild kv_b_proj from");
        return TensorInfo{};  // read with attn_k_b
    }
    const auto layer = layerOf(stored.name, "attn_k_b");
    if (!layer) return std::nullopt;
    if (file.find("blk." + *layer + ".attn_kv_b.weight") != nullptr) return TensorInfo{};
    const TensorInfo* values = file.find("blk." + *layer + ".attn_v_b.weight");
    if (values == nullptr) throw Error(where + " has no attn_v_b beside it to rebuild kv_b_proj from");
    const auto& k = stored.shape;
    const auto& v = values->shape;
    // attn_k_b [heads, rank, nope], attn_v_b [heads, v, rank]
    if (k.size() != 3 || v.size() != 3 || k[0] != v[0] || k[1] != v[2] || k[0] <= 0 || k[1] <= 0 || k[2] <= 0 ||
        v[1] <= 0)
        throw Error(where + " " + shapeText(k) + " and attn_v_b " + shapeText(v) +
                    " are not [heads, kv_lora_rank, nope] and [heads, v, kv_lora_rank]");
    TensorInfo kvB = stored;
    kvB.name = "model.layers." + *layer + ".self_attn.kv_b_proj.weight";
    kvB.shape = {k[0] * (k[2] + v[1]), k[1]};
    if (!(elementWise(stored) && stored.ggmlType == values->ggmlType)) {
        if (!stored.decodesToF32() || !values->decodesToF32())
            throw Error(where + " (" + stored.typeName() + ") or attn_v_b (" + values->typeName() +
                        ") is of a type that does not decode");
        kvB.ggmlType = GgmlType::F32;
        kvB.dtype = DType::F32;
    }
    kvB.begin = 0;
    kvB.end = kvB.storedSize();
    out.latentJoins.push_back({out.tensors.size(), stored, *values});
    return kvB;
}

// Qwen3.5's Gated DeltaNet as llama.cpp's converter stores it (the writer: core/pipeline/gguf_export.cpp), undone
// on the renamed tensor `t`: value heads tiled back to grouped, A_log from -exp(A_log), conv1d's unit dim.
std::optional<GgufRewrite> linearAttentionRewrite(const TensorInfo& t, const json& config, const GgufFile& file) {
    constexpr std::string_view kBlock = ".linear_attn.";
    const auto at = t.name.find(kBlock);
    if (!t.name.starts_with("model.layers.") || at == std::string::npos) return std::nullopt;
    const std::string module = t.name.substr(at + kBlock.size());
    const int keyHeads = configInt(config, "linear_num_key_heads", file);
    const int valueHeads = configInt(config, "linear_num_value_heads", file);
    const std::int64_t keyDim = std::int64_t{keyHeads} * configInt(config, "linear_key_head_dim", file);
    const std::int64_t valueHeadDim = configInt(config, "linear_value_head_dim", file);
    GgufRewrite r;
    const auto heads = [&](std::int64_t run, std::int64_t offset, bool columns) {
        if (keyHeads > 0 && valueHeads > keyHeads)
            r.groupValueHeads = GgufValueHeads{keyHeads, valueHeads / keyHeads, run, offset, columns};
    };
    if (module == "in_proj_qkv.weight") {
        heads(valueHeadDim, 2 * keyDim, false);
    } else if (module == "in_proj_z.weight") {
        heads(valueHeadDim, 0, false);
    } else if (module == "out_proj.weight") {
        heads(valueHeadDim, 0, true);
    } else if (module == "in_proj_b.weight" || module == "in_proj_a.weight" || module == "dt_bias") {
        heads(1, 0, false);
    } else if (module == "A_log") {
        heads(1, 0, false);
        r.logOfNegated = true;
    } else if (module == "conv1d.weight") {
        heads(valueHeadDim, 2 * keyDim, false);
        if (t.shape.size() == 2) r.shape = {t.shape[0], 1, t.shape[1]};
    } else {
        return std::nullopt;
    }
    if (!r.groupValueHeads && !r.logOfNegated && r.shape.empty()) return std::nullopt;
    return r;
}

}  // namespace

bool groupValueHeads(std::vector<std::byte>& data, std::int64_t rows, std::int64_t rowBytes, const GgufValueHeads& v,
                     std::int64_t offset, std::int64_t run) {
    const std::int64_t heads = std::int64_t{v.keyHeads} * v.perKey;
    const std::int64_t span = v.columns ? rowBytes : rows;  // what the heads' runs must fit in
    if (v.keyHeads < 1 || v.perKey < 1 || run < 1 || offset < 0 || rows < 0 || rowBytes < 0 ||
        static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(rowBytes) != data.size() || heads > span ||
        run > span || offset > span - heads * run)
        return false;
    const std::vector<std::byte> old = data;
    const auto tiled = [&](std::int64_t grouped) {  // grouped kh * perKey + j sits at tiled j * keyHeads + kh
        return (grouped % v.perKey) * v.keyHeads + grouped / v.perKey;
    };
    if (v.columns) {
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t h = 0; h < heads; ++h)
                std::copy_n(old.begin() + r * rowBytes + offset + tiled(h) * run, run,
                            data.begin() + r * rowBytes + offset + h * run);
        return true;
    }
    for (std::int64_t h = 0; h < heads; ++h)
        std::copy_n(old.begin() + (offset + tiled(h) * run) * rowBytes, run * rowBytes,
                    data.begin() + (offset + h * run) * rowBytes);
    return true;
}

float aLogOfSsmA(float ssmA) {
    const float nearest = static_cast<float>(std::log(-static_cast<double>(ssmA)));
    if (!std::isfinite(nearest)) return nearest;
    float down = nearest, up = nearest;
    for (int step = 0; step < 8; ++step) {
        if (-std::exp(down) == ssmA) return down;
        if (-std::exp(up) == ssmA) return up;
        down = std::nextafter(down, -std::numeric_limits<float>::infinity());
        up = std::nextafter(up, std::numeric_limits<float>::infinity());
    }
    return nearest;
}

GgufCheckpoint describeGgufCheckpoint(const GgufFile& file) {
    GgufCheckpoint out;
    out.config = hfConfigOfGguf(file);
    const GgufReadNames names = ggufReadNames(file);
    const bool permuted = ggufArchitecturePermutesQk(names.arch);
    bool quantized = false;
    for (const TensorInfo& stored : file.tensors()) {
        // GGUF strings are bytes; a Hugging Face name is JSON text (a dense export writes it into a
        // safetensors header), so a name that is not UTF-8 is refused here, not at writing.
        if (!isValidUtf8(stored.name))
            throw Error(file.path().string() + ": tensor name '" + stored.name + "' is not valid UTF-8");
        quantized = quantized || isBlockQuantized(stored);
        if (auto experts = splitStackedExperts(stored, names, file.path().string())) {
            for (TensorInfo& e : *experts) {
                out.tensors.push_back(std::move(e));
                out.sourceNames.push_back(stored.name);
            }
            continue;
        }
        if (auto kvB = latentKvB(stored, file, names, out)) {
            if (!kvB->name.empty()) {
                out.tensors.push_back(std::move(*kvB));
                out.sourceNames.push_back(stored.name);  // attn_k_b; attn_v_b, read with it, has no tensor of its own
            }
            continue;
        }
        TensorInfo t = stored;
        if (const auto hf = hfNameIn(names, stored.name)) t.name = *hf;
        if (permuted) {
            t.ropeInterleavedHeads = interleavedHeads(t, out.config, file);
            if (t.ropeInterleavedHeads != 0) checkInterleaving(t, file, stored.name);
        }
        if (names.normShift != 0.0f && isGgufNorm(stored))
            out.rewrites.push_back(
                GgufRewrite{.index = out.tensors.size(), .shift = names.normShift, .groupValueHeads = {}, .shape = {}});
        if (names.family != nullptr && names.family->extra == architectures::ConfigExtra::Qwen35)
            if (auto r = linearAttentionRewrite(t, out.config, file)) {
                r->index = out.tensors.size();
                out.rewrites.push_back(std::move(*r));
            }
        out.tensors.push_back(std::move(t));
        out.sourceNames.push_back(stored.name);
    }
    // The same for the metadata text the config took (general.architecture, rope scaling type):
    // the config is written and hashed as JSON.
    try {
        (void)out.config.dump();
    } catch (const json::exception&) {
        throw Error(file.path().string() +
                    ": metadata text the config is made of (general.architecture, ...) is not valid UTF-8");
    }
    out.quantConfig = json::object();
    if (quantized) {
        out.quantConfig["quant_method"] = "gguf";
        if (const auto fileType = file.metadata().integer("general.file_type"))
            out.quantConfig["file_type"] = *fileType;
    }
    return out;
}

std::optional<std::filesystem::path> singleGgufIn(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> found;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".gguf" && e.is_regular_file()) found.push_back(e.path());
    if (found.empty()) return std::nullopt;
    if (found.size() > 1)
        throw Error(dir.string() + ": holds " + std::to_string(found.size()) +
                    " .gguf files and no safetensors; open one of them (a split GGUF is not supported)");
    return found.front();
}

}  // namespace qs::io::detail
