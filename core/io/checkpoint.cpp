// Checkpoint: finds the shards of a checkpoint (one file, a folder, or a sharded folder with its
// index), cross-checks the index against the shard headers, and reads config.json. Only headers are
// read, so opening costs the same for 1 MB and 100 GB.
#include "qs/io/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <set>
#include <span>

#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/io/ggml_type.h"
#include "qs/io/json_file.h"
#include "qs/io/json_value.h"
#include "qs/io/shape_text.h"
#include "qs/message_text.h"

#include "fused_experts.h"
#include "gguf_checkpoint.h"
#include "llama4_tensors.h"
#include "shared_memory.h"

namespace qs::io {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// weight_map of the index: tensor name -> shard file name.
std::map<std::string, std::string> readWeightMap(const fs::path& indexPath) {
    const json index = readJsonFile(indexPath);
    const auto fail = [&](const std::string& what) -> void { throw Error(indexPath.string() + ": " + what); };
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
        fail("needs a \"weight_map\" object mapping tensor names to shard files");
    std::map<std::string, std::string> out;
    for (const auto& [tensor, file] : index["weight_map"].items()) {
        if (!file.is_string()) fail("weight_map entry of tensor '" + tensor + "' must be a file name");
        const auto& name = file.get_ref<const std::string&>();
        if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
            fail("weight_map maps tensor '" + tensor + "' to '" + name +
                 "', which is not a file in the checkpoint's folder");
        out.emplace(tensor, name);
    }
    // An index of nothing beside shards that hold tensors is not a checkpoint of nothing.
    if (out.empty()) fail("weight_map is empty: it maps no tensor to any shard");
    return out;
}

// A folder without an index: model.safetensors, else its only .safetensors file.
fs::path singleFileOf(const fs::path& dir) {
    if (fs::exists(dir / kSingleName)) return dir / kSingleName;
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".safetensors" && e.is_regular_file()) found.push_back(e.path());
    if (found.size() == 1) return found.front();
    if (found.empty()) {
        if (const auto gguf = detail::singleGgufIn(dir)) return *gguf;
        throw Error(dir.string() + ": no .safetensors or .gguf file (expected model.safetensors, a .gguf file or " +
                    std::string(kIndexName) + ")");
    }
    throw Error(dir.string() + ": holds " + std::to_string(found.size()) + " .safetensors files but no " + kIndexName +
                " saying how they form one checkpoint");
}

// The first of `keys` present in config.json (or its text_config), range-checked: 0 when none is.
int intField(const json& config, std::initializer_list<const char*> keys, const fs::path& configPath) {
    for (const json* c : {&config, config.contains("text_config") ? &config["text_config"] : nullptr}) {
        if (c == nullptr || !c->is_object()) continue;
        const std::string where = configPath.string() + (c == &config ? "" : ": text_config");
        for (const char* k : keys)
            if (const auto v = jsonIntegerField(*c, k, where, {0, std::numeric_limits<std::int32_t>::max()}))
                return static_cast<int>(*v);
    }
    return 0;
}

std::string stringField(const json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// Config strings shown to the user: one line, a sane length, valid UTF-8.
std::string displayText(const std::string& s) { return sanitizeMessage(s, 200); }

}  // namespace

struct Checkpoint::Impl {
    fs::path root;
    std::vector<SafetensorsFile> shards;
    std::optional<GgufFile> gguf;
    std::vector<TensorInfo> ggufTensors;  // the GGUF's tensors under Hugging Face names
    // Tensors whose values are read back computed (norms stored as 1 + w, Qwen3.5's linear attention): their bytes
    // live in `computed`, at their TensorInfo's offsets there.
    std::optional<detail::SharedMemory> computed;
    std::set<const TensorInfo*> computedTensors;
    json config = json::object();
    json quantConfig = json::object();
    std::string quantFormat = "dense";
    std::vector<CheckpointTensor> tensors;
    std::deque<TensorInfo> expertTwins;  // fused experts (transformers 5) as per-expert tensors
    std::map<std::string, std::size_t, std::less<>> byName;
    bool hasTokenizer = false;
    bool hasGenerationConfig = false;

    void addShardTensors();
    void openGguf(const fs::path& path);
    void computeGgufTensors(const detail::GgufCheckpoint& view);
    void checkAgainstIndex(const std::map<std::string, std::string>& weightMap, const fs::path& indexPath) const;
    void readConfig();
    void splitFusedExperts();
    void transposeFusedExperts(const architectures::Family& family);
    void aliasDenseMlp(std::string_view block);
    void indexByName();
};

void Checkpoint::Impl::addShardTensors() {
    std::map<std::string, std::size_t> shardOf;
    for (std::size_t s = 0; s < shards.size(); ++s) {
        for (const auto& info : shards[s].tensors()) {
            const auto [it, inserted] = shardOf.emplace(info.name, s);
            if (!inserted)
                throw Error(root.string() + ": tensor '" + info.name + "' is in two shards, " +
                            shards[it->second].path().filename().string() + " and " +
                            shards[s].path().filename().string());
            tensors.push_back(CheckpointTensor{&info, s, parseTensorName(info.name)});
        }
    }
    indexByName();
}

void Checkpoint::Impl::indexByName() {
    std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.info->name < b.info->name; });
    byName.clear();
    for (std::size_t i = 0; i < tensors.size(); ++i)
        if (!byName.emplace(tensors[i].info->name, i).second)
            throw Error(root.string() + ": tensor '" + tensors[i].info->name +
                        "' is both stored on its own and part of a fused experts tensor (experts.gate_up_proj / "
                        "experts.down_proj)");
}

namespace {

// The MoE family whose experts transformers 5 may store fused (not gpt-oss's own stacked layout), by the
// config's model_type (a VLM's text family); nullptr otherwise.
const architectures::Family* fusedExpertsFamilyOf(const json& config) {
    const auto type = config.find("model_type");
    if (type == config.end() || !type->is_string()) return nullptr;
    const architectures::Family* family = architectures::familyOf(type->get<std::string>());
    if (family == nullptr) return nullptr;
    const architectures::Family& text = architectures::textFamilyOf(*family);
    return text.moe && !text.moe->stacked ? &text : nullptr;
}

}  // namespace

void Checkpoint::Impl::splitFusedExperts() {
    const architectures::Family* family = fusedExpertsFamilyOf(config);
    if (family == nullptr) return;
    if (!family->denseMlpBlock.empty()) aliasDenseMlp(family->denseMlpBlock);
    if (family->moe->fusedTransposed) return transposeFusedExperts(*family);
    const architectures::ExpertNames& n = family->moe->names;
    const detail::ExpertModuleNames names{n.gate, n.up, n.down};
    std::vector<CheckpointTensor> out;
    bool fused = false;
    for (const CheckpointTensor& t : tensors) {
        const DType d = t.info->dtype;
        if (!detail::isFusedExpertTensor(t.info->name) || (d != DType::F32 && d != DType::F16 && d != DType::BF16)) {
            out.push_back(t);
            continue;
        }
        fused = true;
        for (TensorInfo& twin : detail::splitFusedExperts(*t.info, names, shards.at(t.shard).path().string())) {
            expertTwins.push_back(std::move(twin));
            out.push_back(CheckpointTensor{&expertTwins.back(), t.shard, parseTensorName(expertTwins.back().name)});
        }
    }
    if (!fused) return;
    tensors = std::move(out);
    indexByName();
}

// Llama 4's dense MLP (feed_forward.gate_proj, ...) under the names every other family's has (mlp.*).
void Checkpoint::Impl::aliasDenseMlp(std::string_view block) {
    bool renamed = false;
    for (CheckpointTensor& t : tensors) {
        auto alias = detail::denseMlpAlias(t.info->name, block);
        if (!alias) continue;
        TensorInfo twin = *t.info;
        twin.name = std::move(*alias);
        expertTwins.push_back(std::move(twin));
        t = CheckpointTensor{&expertTwins.back(), t.shard, parseTensorName(expertTwins.back().name)};
        renamed = true;
    }
    if (renamed) indexByName();
}

// Llama 4's fused experts ([E, H, 2I] and [E, I, H], x @ W) as per-expert tensors, transposed into memory.
void Checkpoint::Impl::transposeFusedExperts(const architectures::Family& family) {
    const architectures::ExpertNames& n = family.moe->names;
    const detail::ExpertModuleNames names{n.gate, n.up, n.down};
    std::uint64_t total = 0;
    for (const CheckpointTensor& t : tensors) total += detail::transposedTwinBytes(*t.info);
    if (total == 0) return;
    computed.emplace(static_cast<std::size_t>(total));
    const std::span<std::byte> out = computed->writable();
    std::uint64_t at = 0;
    std::vector<CheckpointTensor> kept;
    for (const CheckpointTensor& t : tensors) {
        if (detail::transposedTwinBytes(*t.info) == 0) {
            kept.push_back(t);
            continue;
        }
        const SafetensorsFile& shard = shards.at(t.shard);
        const TensorView stored = shard.view(*t.info);
        for (TensorInfo& twin :
             detail::transposedExpertTwins(*t.info, stored.bytes(), names, out, at, shard.path().string())) {
            at = twin.end;
            expertTwins.push_back(std::move(twin));
            computedTensors.insert(&expertTwins.back());
            kept.push_back(CheckpointTensor{&expertTwins.back(), t.shard, parseTensorName(expertTwins.back().name)});
        }
        stored.releasePages();
    }
    computed->seal();
    tensors = std::move(kept);
    indexByName();
}

void Checkpoint::Impl::openGguf(const fs::path& path) {
    gguf = GgufFile::open(path);
    detail::GgufCheckpoint view = detail::describeGgufCheckpoint(*gguf);
    ggufTensors = std::move(view.tensors);
    computeGgufTensors(view);
    for (const auto& info : ggufTensors) tensors.push_back(CheckpointTensor{&info, 0, parseTensorName(info.name)});
    std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.info->name < b.info->name; });
    for (std::size_t i = 0; i < tensors.size(); ++i)
        if (!byName.emplace(tensors[i].info->name, i).second)
            throw Error(path.string() + ": two tensors are both named '" + tensors[i].info->name +
                        "' once llama.cpp's names are mapped");
    config = std::move(view.config);
    quantConfig = std::move(view.quantConfig);
    if (quantConfig.contains("quant_method")) quantFormat = quantConfig["quant_method"].get<std::string>();
    hasTokenizer = gguf->metadata().contains("tokenizer.ggml.tokens") || fs::exists(root / "tokenizer.json");
}

namespace {

// kv_b_proj's bytes from attn_k_b and attn_v_b (GgufCheckpoint::LatentJoin) in `kvB`'s type: element (r, j) of
// head h's key row r is attn_k_b's (h, j, r), of its value row r attn_v_b's (h, r, j). Each element is moved
// as it is stored, or decoded to F32 when kvB is F32 and they are not.
void joinLatent(const GgufFile& gguf, const detail::GgufCheckpoint::LatentJoin& join, const TensorInfo& kvB,
                std::byte* out) {
    const std::int64_t heads = join.keys.shape[0], rank = join.keys.shape[1], nope = join.keys.shape[2],
                       v = join.values.shape[1];
    const bool decode = join.keys.ggmlType != kvB.ggmlType || join.values.ggmlType != kvB.ggmlType;
    const std::size_t size = decode ? sizeof(float) : ggmlTypeTraits(*kvB.ggmlType).blockBytes;
    std::vector<float> keys, values;
    std::span<const std::byte> keyBytes, valueBytes;
    if (decode) {
        keys = gguf.view(join.keys).toF32();
        values = gguf.view(join.values).toF32();
        keyBytes = std::as_bytes(std::span<const float>(keys));
        valueBytes = std::as_bytes(std::span<const float>(values));
    } else {
        keyBytes = gguf.view(join.keys).bytes();
        valueBytes = gguf.view(join.values).bytes();
    }
    const auto put = [&](std::int64_t row, std::int64_t col, std::span<const std::byte> from, std::int64_t at) {
        std::memcpy(out + static_cast<std::size_t>(row * rank + col) * size,
                    from.data() + static_cast<std::size_t>(at) * size, size);
    };
    for (std::int64_t h = 0; h < heads; ++h) {
        const std::int64_t first = h * (nope + v);
        for (std::int64_t r = 0; r < nope; ++r)
            for (std::int64_t j = 0; j < rank; ++j) put(first + r, j, keyBytes, (h * rank + j) * nope + r);
        for (std::int64_t r = 0; r < v; ++r)
            for (std::int64_t j = 0; j < rank; ++j) put(first + nope + r, j, valueBytes, (h * v + r) * rank + j);
    }
}

}  // namespace

// The tensors read back computed, kept in `computed` with their TensorInfo pointing there: those stored through a
// transform of llama.cpp's converter, read back through its inverse (value heads that move as whole rows or whole
// blocks keep their bytes and type: F16, BF16, a quantized type; everything else is decoded to F32 first), and
// deepseek2's kv_b_proj joined from attn_k_b and attn_v_b.
void Checkpoint::Impl::computeGgufTensors(const detail::GgufCheckpoint& view) {
    const std::vector<detail::GgufRewrite>& rewrites = view.rewrites;
    const auto keepsBlocks = [&](const detail::GgufRewrite& r) {
        const TensorInfo& info = ggufTensors.at(r.index);
        const int block = ggmlTypeTraits(*info.ggmlType).blockElements;
        const detail::GgufValueHeads* v = r.groupValueHeads ? &*r.groupValueHeads : nullptr;
        return r.shift == 0.0f && !r.logOfNegated && v != nullptr &&
               (!v->columns || (v->run % block == 0 && v->offset % block == 0));
    };
    const auto valueChanging = [&](const detail::GgufRewrite& r) {
        return r.shift != 0.0f || r.logOfNegated || r.groupValueHeads.has_value();
    };
    std::uint64_t total = 0;
    for (const detail::GgufRewrite& r : rewrites) {
        const TensorInfo& info = ggufTensors.at(r.index);
        if (keepsBlocks(r))
            total += info.end - info.begin;
        else if (valueChanging(r))
            total += static_cast<std::uint64_t>(info.numel()) * sizeof(float);
    }
    for (const auto& join : view.latentJoins) total += ggufTensors.at(join.index).storedSize();
    if (total > 0) computed.emplace(static_cast<std::size_t>(total));
    std::uint64_t at = 0;
    for (const detail::GgufRewrite& r : rewrites) {
        TensorInfo& info = ggufTensors.at(r.index);
        const std::vector<std::int64_t> storedShape = info.shape;
        if (!r.shape.empty()) info.shape = r.shape;
        if (!valueChanging(r)) continue;
        const std::int64_t rows = storedShape.empty() ? 1 : storedShape.front();
        std::vector<std::byte> bytes;
        std::int64_t rowBytes = 0, offset = 0, run = 0;
        if (keepsBlocks(r)) {
            const std::span<const std::byte> stored = gguf->view(ggufTensors.at(r.index)).bytes();
            bytes.assign(stored.begin(), stored.end());
            const detail::GgufValueHeads& v = *r.groupValueHeads;
            const GgmlTypeTraits& traits = ggmlTypeTraits(*info.ggmlType);
            const std::int64_t cols = storedShape.size() > 1 ? storedShape.back() : 1;  // a vector: a value per row
            rowBytes = static_cast<std::int64_t>(ggmlRowBytes(*info.ggmlType, cols));
            offset = v.columns ? v.offset / traits.blockElements * traits.blockBytes : v.offset;
            run = v.columns ? v.run / traits.blockElements * traits.blockBytes : v.run;
        } else {
            std::vector<float> values = gguf->view(info).toF32();
            for (float& x : values) x += r.shift;
            if (r.logOfNegated)
                for (float& x : values) x = detail::aLogOfSsmA(x);
            bytes.resize(values.size() * sizeof(float));
            std::memcpy(bytes.data(), values.data(), bytes.size());
            const std::int64_t cols = storedShape.size() > 1 ? storedShape.back() : 1;
            rowBytes = cols * static_cast<std::int64_t>(sizeof(float));
            if (r.groupValueHeads) {
                const detail::GgufValueHeads& v = *r.groupValueHeads;
                offset = v.columns ? v.offset * static_cast<std::int64_t>(sizeof(float)) : v.offset;
                run = v.columns ? v.run * static_cast<std::int64_t>(sizeof(float)) : v.run;
            }
            info.ggmlType = GgmlType::F32;
            info.dtype = DType::F32;
            info.ropeInterleavedHeads = 0;  // undone by the decode above
        }
        if (r.groupValueHeads && !detail::groupValueHeads(bytes, rows, rowBytes, *r.groupValueHeads, offset, run))
            throw Error(gguf->path().string() + ": tensor '" + info.name + "' " + shapeText(storedShape) +
                        " does not hold the " +
                        std::to_string(r.groupValueHeads->keyHeads * r.groupValueHeads->perKey) +
                        " value heads its ssm.* metadata describes");
        std::memcpy(computed->writable().data() + at, bytes.data(), bytes.size());
        info.begin = at;
        info.end = at + bytes.size();
        at = info.end;
        computedTensors.insert(&info);
    }
    for (const auto& join : view.latentJoins) {
        TensorInfo& info = ggufTensors.at(join.index);
        const std::uint64_t size = info.storedSize();
        joinLatent(*gguf, join, info, computed->writable().data() + at);
        info.begin = at;
        info.end = at + size;
        at = info.end;
        computedTensors.insert(&info);
    }
    if (computed) computed->seal();
}

void Checkpoint::Impl::checkAgainstIndex(const std::map<std::string, std::string>& weightMap,
                                         const fs::path& indexPath) const {
    for (const auto& [name, file] : weightMap) {
        const auto it = byName.find(name);
        if (it == byName.end())
            throw Error(indexPath.string() + ": maps tensor '" + name + "' to " + file + ", which does not hold it");
        const std::string actual = shards[tensors[it->second].shard].path().filename().string();
        if (actual != file)
            throw Error(indexPath.string() + ": maps tensor '" + name + "' to " + file +
                        ", which does not hold it (it is in " + actual + ")");
    }
    for (const auto& t : tensors) {
        if (!weightMap.contains(t.info->name))
            throw Error(shards[t.shard].path().string() + ": tensor '" + t.info->name + "' is not listed in " +
                        kIndexName);
    }
}

void Checkpoint::Impl::readConfig() {
    if (fs::exists(root / "config.json")) {
        config = readJsonFile(root / "config.json");
        if (!config.is_object()) throw Error((root / "config.json").string() + ": must be a JSON object");
    }
    if (const auto q = config.find("quantization_config"); q != config.end() && !q->is_object() && !q->is_null())
        throw Error((root / "config.json").string() + ": quantization_config is " + q->dump() + ", expected an object");
    if (config.contains("quantization_config") && config["quantization_config"].is_object()) {
        quantConfig = config["quantization_config"];
        const std::string method = stringField(quantConfig, "quant_method");
        quantFormat = method.empty() ? "unknown" : method;
    } else if (fs::exists(root / "hf_quant_config.json")) {
        // ModelOpt exports name their algorithm (FP8, NVFP4, ...) in a side file.
        quantConfig = readJsonFile(root / "hf_quant_config.json");
        const std::string algo =
            quantConfig.is_object() ? stringField(quantConfig.value("quantization", json::object()), "quant_algo") : "";
        quantFormat = algo.empty() ? "modelopt" : algo;
    }
    hasTokenizer =
        fs::exists(root / "tokenizer.json") || fs::exists(root / "tokenizer.model") || fs::exists(root / "vocab.json");
    hasGenerationConfig = fs::exists(root / "generation_config.json");
}

Checkpoint Checkpoint::open(const fs::path& path) {
    auto impl = std::make_shared<Impl>();
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status)) throw Error(path.string() + ": no such file or folder");

    std::map<std::string, std::string> weightMap;
    fs::path indexPath;
    if (fs::is_directory(status)) {
        impl->root = path;
        indexPath = path / kIndexName;
        if (fs::exists(indexPath)) {
            weightMap = readWeightMap(indexPath);
            std::set<std::string> files;
            for (const auto& [tensor, file] : weightMap) {
                if (files.insert(file).second && !fs::is_regular_file(path / file))
                    throw Error(indexPath.string() + ": names shard " + file + " (for tensor '" + tensor +
                                "'), which does not exist");
            }
            for (const auto& file : files) impl->shards.push_back(SafetensorsFile::open(path / file));
        } else {
            const fs::path file = singleFileOf(path);
            if (isGgufFile(file))
                impl->openGguf(file);
            else
                impl->shards.push_back(SafetensorsFile::open(file));
        }
    } else {
        impl->root = path.has_parent_path() ? path.parent_path() : fs::path(".");
        if (isGgufFile(path))
            impl->openGguf(path);
        else
            impl->shards.push_back(SafetensorsFile::open(path));
    }
    if (!impl->gguf) impl->addShardTensors();
    // A header of {} is valid safetensors (and a GGUF of metadata only is a valid GGUF), but a
    // checkpoint of no tensors can only be an accident, and every command would "succeed" on it
    // (dequantize wrote an empty model).
    if (impl->tensors.empty()) {
        const fs::path file = impl->gguf                 ? impl->gguf->path()
                              : impl->shards.size() == 1 ? impl->shards.front().path()
                                                         : path;
        throw Error(file.string() + ": holds no tensors");
    }
    if (impl->gguf) return Checkpoint(std::move(impl));
    if (!weightMap.empty()) impl->checkAgainstIndex(weightMap, indexPath);
    impl->readConfig();
    impl->splitFusedExperts();
    return Checkpoint(std::move(impl));
}

const fs::path& Checkpoint::root() const { return impl_->root; }
const std::vector<SafetensorsFile>& Checkpoint::shards() const { return impl_->shards; }
const GgufFile* Checkpoint::gguf() const { return impl_->gguf ? &*impl_->gguf : nullptr; }
const json& Checkpoint::config() const { return impl_->config; }
fs::path Checkpoint::configSource() const { return impl_->gguf ? impl_->gguf->path() : impl_->root / "config.json"; }
const json& Checkpoint::quantizationConfig() const { return impl_->quantConfig; }
const std::vector<CheckpointTensor>& Checkpoint::tensors() const { return impl_->tensors; }

const CheckpointTensor* Checkpoint::find(std::string_view name) const {
    const auto it = impl_->byName.find(name);
    return it == impl_->byName.end() ? nullptr : &impl_->tensors[it->second];
}

TensorView Checkpoint::tensor(std::string_view name) const {
    const CheckpointTensor* t = find(name);
    if (t == nullptr) throw Error(impl_->root.string() + ": no tensor named '" + std::string(name) + "'");
    return view(*t);
}

TensorView Checkpoint::view(const CheckpointTensor& t) const {
    if (impl_->computedTensors.contains(t.info))
        return TensorView(*t.info, impl_->computed->bytes().subspan(t.info->begin, t.info->byteSize()));
    return impl_->gguf ? impl_->gguf->view(*t.info) : impl_->shards.at(t.shard).view(*t.info);
}

std::string Checkpoint::denseMlpBlock() const {
    // A GGUF's tensors are named as QuantScope reads the family (its dense MLP as mlp.*) too.
    const architectures::Family* family = fusedExpertsFamilyOf(impl_->config);
    return family != nullptr ? std::string(family->denseMlpBlock) : std::string();
}

const fs::path& Checkpoint::fileOf(const CheckpointTensor& t) const {
    return impl_->gguf ? impl_->gguf->path() : impl_->shards.at(t.shard).path();
}

CheckpointSummary Checkpoint::summary() const {
    const auto& c = impl_->config;
    CheckpointSummary s;
    const fs::path configPath = configSource();
    s.modelType = displayText(stringField(c, "model_type"));
    s.architecture = c.contains("architectures") && c["architectures"].is_array() && !c["architectures"].empty() &&
                             c["architectures"][0].is_string()
                         ? displayText(c["architectures"][0].get<std::string>())
                         : s.modelType;
    s.numLayers = intField(c, {"num_hidden_layers", "n_layer", "num_layers"}, configPath);
    s.hiddenSize = intField(c, {"hidden_size", "n_embd", "d_model"}, configPath);
    int maxLayer = -1;
    for (const auto& t : impl_->tensors) {
        s.parameterCount += t.info->numel();
        s.bytesByDtype[t.info->typeName()] += t.info->byteSize();
        maxLayer = std::max(maxLayer, t.naming.layer);
    }
    if (s.numLayers == 0) s.numLayers = maxLayer + 1;
    for (const auto& shard : impl_->shards) s.sizeOnDisk += shard.fileSize();
    if (impl_->gguf) s.sizeOnDisk += impl_->gguf->fileSize();
    s.quantizationFormat = displayText(impl_->quantFormat);
    s.hasTokenizer = impl_->hasTokenizer;
    s.hasGenerationConfig = impl_->hasGenerationConfig;
    return s;
}

}  // namespace qs::io
