// CheckpointWriter: streams tensors into shards inside a temporary sibling folder and renames the
// folder into place at finish(). Each shard's tensor bytes go to a data file as they arrive (so at
// most one tensor is ever held in memory); closing the shard writes the safetensors header, then
// appends the data file. Tensors are laid out in insertion order (not the reference writer's
// alignment order): the format does not require alignment, and insertion order lets data stream.
#include "qs/io/checkpoint_writer.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "qs/error.h"
#include "qs/io/shape_text.h"

#include "llama4_tensors.h"
#include "output_file.h"
#include "writer_guard.h"

namespace qs::io {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Real configs are a few kilobytes; a larger one is written compact (see finish()).
constexpr std::size_t kPrettyConfigBytes = 256 * 1024;

// Files that travel with a model but that the writer does not produce itself.
constexpr const char* kAuxiliaryFiles[] = {"tokenizer.json",
                                           "tokenizer_config.json",
                                           "special_tokens_map.json",
                                           "tokenizer.model",
                                           "vocab.json",
                                           "merges.txt",
                                           "vocab.txt",
                                           "added_tokens.json",
                                           "generation_config.json",
                                           "chat_template.jinja",
                                           "chat_template.json",
                                           "LICENSE",
                                           "LICENSE.txt",
                                           "LICENSE.md",
                                           "NOTICE"};

bool isInside(const fs::path& child, const fs::path& parent) {
    const auto [p, c] = std::mismatch(parent.begin(), parent.end(), child.begin(), child.end());
    return p == parent.end();
}

fs::path absoluteFolder(const fs::path& p) {
    fs::path a = fs::weakly_canonical(fs::absolute(p));
    if (a.filename().empty()) a = a.parent_path();  // "out/" names the folder "out"
    return a;
}

std::string shardFileName(std::size_t index, std::size_t count) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", index + 1, count);
    return buf;
}

struct PendingTensor {
    std::string name;
    DType dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t begin;
    std::uint64_t end;
};

struct OpenShard {
    std::unique_ptr<detail::OutputFile> data;  // null for a measuring writer
    std::uint64_t size = 0;                    // of its tensor data
    std::vector<PendingTensor> tensors;
};

// The shard's safetensors header: format "pt", padded with spaces to a multiple of 8 like the
// reference writer.
std::string headerText(const std::vector<PendingTensor>& tensors) {
    json header = json::object();
    header["__metadata__"] = {{"format", "pt"}};
    for (const auto& t : tensors)
        header[t.name] = {{"dtype", dtypeName(t.dtype)}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    return text;
}

constexpr std::uint64_t kHeaderLengthBytes = 8;

// config.json's text: indentation multiplies a deeply nested value by its depth (a 200 KB config of
// 100,000 nested arrays would become 20 GB), so only what a real config is gets pretty-printed.
std::string configText(const json& config) {
    std::string text = config.dump();
    if (text.size() <= kPrettyConfigBytes) text = config.dump(2);
    return text + "\n";
}

}  // namespace

struct CheckpointWriter::Impl {
    fs::path destination;
    CheckpointWriterOptions options;
    bool measuring = false;  // count, write nothing
    fs::path tempDir;
    std::optional<OpenShard> shard;
    std::vector<std::vector<std::string>> closedShards;  // tensor names of each closed shard
    std::set<std::string> names;
    std::uint64_t totalSize = 0;
    std::uint64_t closedShardBytes = 0;               // the closed shards' files
    std::map<std::string, std::uint64_t> otherFiles;  // every other file by name, with its size
    std::optional<json> config;
    detail::WriterGuard guard{"checkpoint writer"};

    ~Impl() { discard(); }

    [[noreturn]] void fail(const std::string& what) const {
        throw Error((measuring ? std::string("measured export") : destination.string()) + ": " + what);
    }

    void discard() noexcept {
        shard.reset();
        std::error_code ec;
        if (!tempDir.empty() && !guard.finished()) fs::remove_all(tempDir, ec);
    }

    // Runs one public operation; any exception leaves nothing behind and disables the writer.
    template <typename Body>
    auto guarded(Body&& body) {
        return guard.run(
            std::forward<Body>(body), [this](const std::string& what) { fail(what); }, [this] { discard(); });
    }

    fs::path shardPartPath(std::size_t index) const { return tempDir / ("shard-" + std::to_string(index) + ".part"); }

    std::uint64_t checkTensor(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape) const;
    void beginTensor(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape, std::uint64_t bytes);
    void closeShard();
    void writeIndex();
    void writeFile(const std::string& fileName, const std::string& text);
    void replaceDestination();
};

std::uint64_t CheckpointWriter::Impl::checkTensor(const std::string& name, DType dtype,
                                                  const std::vector<std::int64_t>& shape) const {
    if (name.empty() || name == "__metadata__") fail("'" + name + "' cannot be a tensor name");
    if (names.contains(name)) fail("tensor '" + name + "' added twice");
    std::uint64_t bytes = dtypeSize(dtype);
    for (const auto d : shape) {
        if (d < 0) fail("tensor '" + name + "': shape " + shapeText(shape) + " has a negative dimension");
        if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes))
            fail("tensor '" + name + "': shape " + shapeText(shape) + " is too large");
    }
    return bytes;
}

void CheckpointWriter::Impl::beginTensor(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape,
                                         std::uint64_t bytes) {
    // A tensor that does not fit starts a new shard; one larger than the limit gets a shard alone.
    if (shard && !shard->tensors.empty() && shard->size + bytes > options.maxShardBytes) closeShard();
    if (!shard) {
        shard.emplace();
        if (!measuring)
            shard->data = std::make_unique<detail::OutputFile>(
                tempDir / ("shard-" + std::to_string(closedShards.size()) + ".data"));
    }
    const std::uint64_t begin = shard->size;
    shard->size += bytes;
    shard->tensors.push_back(PendingTensor{name, dtype, shape, begin, begin + bytes});
    names.insert(name);
    totalSize += bytes;
}

// The header, then the shard's streamed data.
void CheckpointWriter::Impl::closeShard() {
    std::vector<std::string> shardNames;
    fs::path dataPath;
    const std::string text = headerText(shard ? shard->tensors : std::vector<PendingTensor>{});
    closedShardBytes += kHeaderLengthBytes + text.size() + (shard ? shard->size : 0);
    if (shard) {
        for (const auto& t : shard->tensors) shardNames.push_back(t.name);
        if (shard->data) {
            if (shard->data->size() != shard->size) fail("internal error: shard data does not match its tensors");
            shard->data->close();
            dataPath = shard->data->path();
        }
    }
    if (measuring) {
        shard.reset();
        closedShards.push_back(std::move(shardNames));
        return;
    }
    std::byte length[kHeaderLengthBytes];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<std::byte>((text.size() >> (8 * i)) & 0xFF);

    detail::OutputFile out(shardPartPath(closedShards.size()));
    out.write(length);
    out.write(std::as_bytes(std::span<const char>(text)));
    if (!dataPath.empty()) {
        out.append(dataPath);
        fs::remove(dataPath);
    }
    out.close();
    shard.reset();
    closedShards.push_back(std::move(shardNames));
}

void CheckpointWriter::Impl::writeIndex() {
    json weightMap = json::object();
    for (std::size_t s = 0; s < closedShards.size(); ++s)
        for (const auto& name : closedShards[s]) weightMap[name] = shardFileName(s, closedShards.size());
    const json index = {{"metadata", {{"total_size", totalSize}}}, {"weight_map", weightMap}};
    writeFile("model.safetensors.index.json", index.dump(2) + "\n");
}

// A file of the folder beside the shards (a later one of the same name replaces it), counted.
void CheckpointWriter::Impl::writeFile(const std::string& fileName, const std::string& text) {
    otherFiles[fileName] = text.size();
    if (measuring) return;
    const fs::path path = tempDir / fileName;
    fs::remove(path);
    detail::OutputFile out(path);
    out.write(std::as_bytes(std::span<const char>(text)));
    out.close();
}

// Moves an existing destination aside, renames the finished folder into place, then deletes the old
// copy; if the second rename fails the old copy is put back.
void CheckpointWriter::Impl::replaceDestination() {
    if (!fs::exists(destination)) {
        fs::rename(tempDir, destination);
        return;
    }
    const fs::path old = detail::makeSiblingDir(destination, ".old-");
    fs::rename(destination, old);
    try {
        fs::rename(tempDir, destination);
    } catch (...) {
        std::error_code ec;
        fs::rename(old, destination, ec);
        fs::remove_all(old, ec);
        throw;
    }
    std::error_code ec;
    fs::remove_all(old, ec);
}

CheckpointWriter::CheckpointWriter(fs::path destination, CheckpointWriterOptions options,
                                   std::optional<fs::path> source)
    : impl_(std::make_unique<Impl>()) {
    auto& w = *impl_;
    w.destination = absoluteFolder(destination);
    w.options = options;
    if (w.options.maxShardBytes == 0) w.fail("maxShardBytes must be positive");
    if (source) {
        std::error_code ec;
        fs::path src = fs::canonical(*source, ec);
        if (ec) w.fail("source checkpoint " + source->string() + " does not exist");
        if (!fs::is_directory(src)) src = src.parent_path();
        if (isInside(w.destination, src))
            w.fail("is inside (or is) the source checkpoint " + src.string() +
                   "; write the output elsewhere so that the source is never modified");
        if (isInside(src, w.destination))
            w.fail("contains the source checkpoint " + src.string() + "; replacing it would delete the source");
    }
    if (fs::exists(w.destination)) {
        if (!w.options.overwrite) w.fail("already exists (choose another destination or allow overwriting)");
        if (!fs::is_directory(w.destination)) w.fail("exists and is not a folder");
    }
    if (!fs::is_directory(w.destination.parent_path()))
        w.fail("its parent folder " + w.destination.parent_path().string() + " does not exist");
    w.tempDir = detail::makeSiblingDir(w.destination, ".tmp-");
    fs::permissions(w.tempDir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                   fs::perms::others_read | fs::perms::others_exec);
}

CheckpointWriter::CheckpointWriter() : impl_(std::make_unique<Impl>()) {}

CheckpointWriter CheckpointWriter::measuring(CheckpointWriterOptions options) {
    CheckpointWriter writer;
    writer.impl_->measuring = true;
    writer.impl_->options = options;
    if (options.maxShardBytes == 0) writer.impl_->fail("maxShardBytes must be positive");
    return writer;
}

CheckpointWriter::~CheckpointWriter() = default;
CheckpointWriter::CheckpointWriter(CheckpointWriter&&) noexcept = default;

void CheckpointWriter::addTensor(const std::string& given, DType dtype, const std::vector<std::int64_t>& shape,
                                 std::span<const std::byte> bytes) {
    const std::string name = detail::denseMlpStoredName(given, impl_->options.denseMlpBlock);
    impl_->guarded([&] {
        const std::uint64_t need = impl_->checkTensor(name, dtype, shape);
        if (bytes.size() != need && !impl_->measuring)
            impl_->fail("tensor '" + name + "': " + std::to_string(bytes.size()) + " bytes given but " +
                        std::string(dtypeName(dtype)) + " " + shapeText(shape) + " needs " + std::to_string(need));
        impl_->beginTensor(name, dtype, shape, need);
        if (impl_->shard->data) impl_->shard->data->write(bytes);
    });
}

void CheckpointWriter::addTensorF32(const std::string& given, DType dtype, const std::vector<std::int64_t>& shape,
                                    std::span<const float> values) {
    const std::string name = detail::denseMlpStoredName(given, impl_->options.denseMlpBlock);
    impl_->guarded([&] {
        const std::uint64_t need = impl_->checkTensor(name, dtype, shape);
        if (values.size() * dtypeSize(dtype) != need && !impl_->measuring)
            impl_->fail("tensor '" + name + "': " + std::to_string(values.size()) + " values given but shape " +
                        shapeText(shape) + " holds " + std::to_string(need / dtypeSize(dtype)));
        impl_->beginTensor(name, dtype, shape, need);
        if (!impl_->shard->data) return;
        // Converted in slices so that the writer holds only a slice of encoded bytes at a time.
        constexpr std::size_t kSlice = std::size_t{1} << 20;
        std::vector<std::byte> buffer(std::min(values.size(), kSlice) * dtypeSize(dtype));
        for (std::size_t i = 0; i < values.size(); i += kSlice) {
            const std::size_t n = std::min(kSlice, values.size() - i);
            convertFromF32(dtype, values.data() + i, n, buffer.data());
            impl_->shard->data->write(std::span<const std::byte>(buffer.data(), n * dtypeSize(dtype)));
        }
    });
}

void CheckpointWriter::setConfig(json config) {
    impl_->guarded([&] { impl_->config = std::move(config); });
}

void CheckpointWriter::addJsonFile(const std::string& fileName, const json& content) {
    impl_->guarded([&] {
        if (fileName.empty() || fileName.find('/') != std::string::npos || fileName == "." || fileName == "..")
            impl_->fail("'" + fileName + "' is not a plain file name");
        impl_->writeFile(fileName, content.dump(2) + "\n");
    });
}

void CheckpointWriter::copyAuxiliaryFiles(const fs::path& sourceDir) {
    impl_->guarded([&] {
        const fs::path dir = fs::is_directory(sourceDir) ? sourceDir : sourceDir.parent_path();
        for (const char* name : kAuxiliaryFiles) {
            if (!fs::is_regular_file(dir / name)) continue;
            impl_->otherFiles[name] = fs::file_size(dir / name);
            if (!impl_->measuring)
                fs::copy_file(dir / name, impl_->tempDir / name, fs::copy_options::overwrite_existing);
        }
    });
}

WrittenBytes CheckpointWriter::bytes() const {
    const auto& w = *impl_;
    WrittenBytes out;
    out.tensorFiles = w.closedShardBytes;
    if (w.shard) out.tensorFiles += kHeaderLengthBytes + headerText(w.shard->tensors).size() + w.shard->size;
    for (const auto& [name, size] : w.otherFiles) out.otherFiles += size;
    return out;
}

fs::path CheckpointWriter::finish() {
    return impl_->guarded([&] {
        auto& w = *impl_;
        if (w.shard || w.closedShards.empty()) w.closeShard();  // an empty checkpoint still gets its (empty) file
        const std::size_t count = w.closedShards.size();
        if (!w.measuring)
            for (std::size_t s = 0; s < count; ++s)
                fs::rename(w.shardPartPath(s),
                           w.tempDir / (count == 1 ? std::string("model.safetensors") : shardFileName(s, count)));
        if (count > 1) w.writeIndex();
        if (w.config) w.writeFile("config.json", configText(*w.config));
        if (!w.measuring) w.replaceDestination();
        w.guard.markFinished();
        return w.destination;
    });
}

}  // namespace qs::io
