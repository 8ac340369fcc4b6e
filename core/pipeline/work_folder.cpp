#include "qs/pipeline/work_folder.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "qs/error.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/json_file.h"
#include "qs/io/json_value.h"
#include "qs/io/safetensors_file.h"
#include "qs/pipeline/quantized_linear_record.h"

namespace qs::pipeline {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPlanFile = "plan.json";
constexpr const char* kTeamFile =
    "thread_team.json";  // beside the plan, not in it: a changed team is not a changed plan
constexpr const char* kRecordFile = "record.json";

fs::path numbered(const fs::path& dir, const char* stem, int layer) {
    char name[32];
    std::snprintf(name, sizeof name, "%s-%04d", stem, layer);
    return dir / name;
}

// "layer-0007" -> 7 for `stem` "layer"; -1 for any other name.
int numberOf(const fs::path& entry, std::string_view stem) {
    const std::string name = entry.filename().string();
    if (name.size() != stem.size() + 5 || !name.starts_with(stem) || name[stem.size()] != '-') return -1;
    int n = 0;
    for (char c : name.substr(stem.size() + 1)) {
        if (c < '0' || c > '9') return -1;
        n = n * 10 + (c - '0');
    }
    return n;
}

std::string shortened(const nlohmann::json& j) {
    std::string text = j.dump();
    return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

// The first key whose value differs, as "key: was A, now B"; empty when equal.
std::string firstDifference(const nlohmann::json& was, const nlohmann::json& now) {
    for (const auto& [key, value] : now.items())
        if (!was.contains(key) || was.at(key) != value)
            return "'" + key + "' was " + (was.contains(key) ? shortened(was.at(key)) : "absent") + ", now " +
                   shortened(value);
    for (const auto& [key, value] : was.items())
        if (!now.contains(key)) return "'" + key + "' was " + shortened(value) + ", now absent";
    return {};
}

void writeJsonAtomically(const fs::path& path, const nlohmann::json& j) {
    const fs::path temp = path.string() + ".part";
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        out << j.dump(1) << '\n';
        if (!out.flush()) throw Error(temp.string() + ": cannot write");
    }
    fs::rename(temp, path);
}

void writeTensors(io::CheckpointWriter& writer, const std::string& prefix, const std::vector<MatrixF>& matrices) {
    for (std::size_t i = 0; i < matrices.size(); ++i) {
        const MatrixF& m = matrices[i];
        writer.addTensor(prefix + "." + std::to_string(i), io::DType::F32, {m.rows(), m.cols()},
                         std::as_bytes(std::span(m.data(), std::size_t(m.size()))));
    }
}

std::vector<MatrixF> readTensors(const io::SafetensorsFile& file, const std::string& prefix, std::size_t count) {
    std::vector<MatrixF> out(count);
    for (std::size_t i = 0; i < count; ++i) {
        const io::TensorView view = file.tensor(prefix + "." + std::to_string(i));
        if (view.dtype() != io::DType::F32 || view.shape().size() != 2)
            throw Error(file.path().string() + ": tensor '" + view.name() + "' is not a rank-2 F32 matrix");
        out[i].resize(view.shape()[0], view.shape()[1]);
        std::memcpy(out[i].data(), view.bytes().data(), view.bytes().size());
    }
    return out;
}

nlohmann::json countsOf(const HiddenSet& hidden) {
    nlohmann::json counts = nlohmann::json::object();
    for (const auto& [name, matrices] : hidden) counts[name] = matrices.size();
    return counts;
}

// A folder of tensors and a record.json, renamed into place when complete.
io::CheckpointWriter folderWriter(const fs::path& path) {
    io::CheckpointWriterOptions options;
    options.maxShardBytes = UINT64_MAX;  // one file, whatever its size
    options.overwrite = true;            // a stale folder of a layer being redone
    return io::CheckpointWriter(path, options);
}

// The newest layer whose hidden states and every record up to it are on disk; -1 for none.
int newestCompleteLayer(const fs::path& dir) {
    int newest = -1;
    for (const auto& entry : fs::directory_iterator(dir))
        if (const int n = numberOf(entry.path(), "hidden"); n > newest && fs::exists(entry.path() / kRecordFile)) {
            bool layersComplete = true;
            for (int l = 0; l <= n && layersComplete; ++l)
                layersComplete = fs::exists(numbered(dir, "layer", l) / kRecordFile);
            if (layersComplete) newest = n;
        }
    return newest;
}

// A finished layer's record.json and tensors, for reading linears back.
struct StoredRecord {
    nlohmann::json linears;  // their headers by key
    nlohmann::json hidden;   // the kept hidden states' sequence counts by name
    io::SafetensorsFile file;
};

StoredRecord openRecord(const fs::path& dir, int layer) {
    const fs::path folder = numbered(dir, "layer", layer);
    if (!fs::exists(folder / kRecordFile))
        throw Error(folder.string() +
                    ": the finished layer is not there (was the work folder removed while its result was in use?)");
    nlohmann::json record = io::readJsonFile(folder / kRecordFile);
    return {std::move(record.at("linears")), std::move(record.at("hidden")),
            io::SafetensorsFile::open(folder / "model.safetensors")};
}

}  // namespace

std::optional<int> WorkFolder::interruptedLayers(const fs::path& dir) {
    if (!fs::exists(dir / kPlanFile)) return std::nullopt;
    return newestCompleteLayer(dir) + 1;
}

WorkFolder WorkFolder::start(const fs::path& dir, const nlohmann::json& plan) {
    if (fs::exists(dir / kPlanFile))
        throw Error(dir.string() + " holds an interrupted run: continue it with --resume " + dir.string() +
                    ", or remove the folder");
    if (fs::exists(dir) && (!fs::is_directory(dir) || !fs::is_empty(dir)))
        throw Error(
            dir.string() +
            " exists and is not an empty folder: a work folder must be new (QuantScope deletes it when the run ends)");
    fs::create_directories(dir);
    writeJsonAtomically(dir / kPlanFile, plan);
    return WorkFolder(dir);
}

WorkFolder WorkFolder::resume(const fs::path& dir, const nlohmann::json& plan) {
    if (!fs::exists(dir / kPlanFile))
        throw Error(dir.string() + " holds no interrupted run (it has no " + kPlanFile + ")");
    const nlohmann::json was = io::readJsonFile(dir / kPlanFile);
    if (const std::string difference = firstDifference(was, plan); !difference.empty())
        throw Error(dir.string() + " is the work folder of another plan (" + difference +
                    "): resume with the same checkpoint and settings, or start a new work folder");
    WorkFolder folder(dir);
    const int newest = newestCompleteLayer(dir);  // everything after it is redone
    folder.complete_ = newest + 1;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        const bool stale = name.starts_with(".tmp-") || name.starts_with(".old-") ||
                           numberOf(entry.path(), "layer") > newest ||
                           (numberOf(entry.path(), "hidden") >= 0 && numberOf(entry.path(), "hidden") != newest);
        if (stale) fs::remove_all(entry.path());
    }
    return folder;
}

void WorkFolder::recordThreadTeam(int threads) const { writeJsonAtomically(dir_ / kTeamFile, {{"threads", threads}}); }

std::optional<int> WorkFolder::threadTeam() const {
    if (!fs::exists(dir_ / kTeamFile)) return std::nullopt;
    const fs::path file = dir_ / kTeamFile;
    // A hand-edited file ("threads": "two", 2.5, 0) is a qs::Error that names it, not a JSON exception.
    const auto threads = io::jsonIntegerField(io::readJsonFile(file), "threads", file.string(), {1, 1 << 16});
    if (!threads) throw Error(file.string() + ": 'threads' is missing");
    return static_cast<int>(*threads);
}

fs::path WorkFolder::hiddenStaging(int layer) const {
    const fs::path staging = dir_ / (".tmp-" + numbered(dir_, "hidden", layer).filename().string());
    fs::create_directories(staging);
    return staging;
}

void WorkFolder::saveLayer(int layer, const LayerRecord& record, const HiddenShapes& hiddenAfter) {
    {
        io::CheckpointWriter writer = folderWriter(numbered(dir_, "layer", layer));
        nlohmann::json headers = nlohmann::json::object();
        const TensorSink sink = [&writer](const std::string& name, io::DType dtype,
                                          const std::vector<std::int64_t>& shape, std::span<const std::byte> bytes) {
            writer.addTensor(name, dtype, shape, bytes);
        };
        for (const auto& [key, q] : record.linears) headers[key] = writeQuantizedLinear(q, key, sink);
        for (const auto& [name, matrices] : record.hidden) writeTensors(writer, "hidden." + name, matrices);
        writer.addJsonFile(kRecordFile,
                           {{"facts", record.facts}, {"linears", headers}, {"hidden", countsOf(record.hidden)}});
        writer.finish();
    }
    const fs::path staging = hiddenStaging(layer), folder = numbered(dir_, "hidden", layer);
    nlohmann::json shapes = nlohmann::json::object();
    for (const auto& [name, shape] : hiddenAfter) {
        if (!fs::exists(staging / hiddenFileName(name)))
            throw Error(staging.string() + ": the hidden states '" + name + "' were not written");
        shapes[name] = {{"rows", shape.rows}, {"cols", shape.cols}};
    }
    writeJsonAtomically(staging / kRecordFile, {{"hidden", std::move(shapes)}});
    fs::remove_all(folder);  // a stale folder of a layer being redone
    fs::rename(staging, folder);
    if (layer > 0) fs::remove_all(numbered(dir_, "hidden", layer - 1));
    complete_ = layer + 1;
}

void WorkFolder::saveLayer(int layer, const LayerRecord& record, const HiddenSet& hiddenAfter) {
    const fs::path staging = hiddenStaging(layer);
    HiddenShapes shapes;
    for (const auto& [name, matrices] : hiddenAfter) {
        SequenceFile::save(staging / hiddenFileName(name), matrices);
        shapes.emplace(name, shapeOf(matrices));
    }
    saveLayer(layer, record, shapes);
}

LayerRecord WorkFolder::loadLayer(int layer) const {
    const fs::path folder = numbered(dir_, "layer", layer);
    const nlohmann::json j = io::readJsonFile(folder / kRecordFile);
    const io::SafetensorsFile file = io::SafetensorsFile::open(folder / "model.safetensors");
    LayerRecord record;
    record.facts = j.at("facts");
    for (const auto& [key, header] : j.at("linears").items())
        record.linears.emplace(key, readQuantizedLinear(header, file, key));
    for (const auto& [name, count] : j.at("hidden").items())
        record.hidden.emplace(name, readTensors(file, "hidden." + name, count.get<std::size_t>()));
    return record;
}

std::map<std::string, quant::QuantizedLinear> WorkFolder::loadLinears(const fs::path& dir, int layer,
                                                                      std::string_view keyPrefix) {
    const StoredRecord record = openRecord(dir, layer);
    std::map<std::string, quant::QuantizedLinear> linears;
    for (const auto& [key, header] : record.linears.items())
        if (key.starts_with(keyPrefix))
            linears.emplace(key.substr(keyPrefix.size()), readQuantizedLinear(header, record.file, key));
    return linears;
}

std::vector<MatrixF> WorkFolder::loadKeptHidden(const fs::path& dir, int layer, const std::string& name) {
    const StoredRecord record = openRecord(dir, layer);
    const auto count = record.hidden.find(name);
    if (count == record.hidden.end())
        throw Error(numbered(dir, "layer", layer).string() + ": no kept hidden states '" + name + "'");
    return readTensors(record.file, "hidden." + name, count->get<std::size_t>());
}

struct StoredLinearCache::OpenLayer {
    StoredRecord record;
};

StoredLinearCache::StoredLinearCache(fs::path dir) : dir_(std::move(dir)) {}
StoredLinearCache::~StoredLinearCache() = default;

quant::QuantizedLinear StoredLinearCache::load(int layer, const std::string& key) {
    std::shared_ptr<const OpenLayer> open;
    {
        const std::lock_guard lock(mutex_);
        if (layer_ != layer || !open_) {
            open_.reset();  // the previous layer's mapping goes before the next one's comes
            open_ = std::make_shared<const OpenLayer>(OpenLayer{openRecord(dir_, layer)});
            layer_ = layer;
        }
        open = open_;
    }
    // Read outside the lock: the mapping is read-only.
    const auto header = open->record.linears.find(key);
    if (header == open->record.linears.end())
        throw Error(numbered(dir_, "layer", layer).string() + ": no stored linear '" + key + "'");
    return readQuantizedLinear(*header, open->record.file, key);
}

fs::path WorkFolder::hiddenFolder() const { return numbered(dir_, "hidden", complete_ - 1); }

HiddenShapes WorkFolder::hiddenShapes() const {
    HiddenShapes shapes;
    if (complete_ == 0) return shapes;
    const nlohmann::json j = io::readJsonFile(hiddenFolder() / kRecordFile);
    for (const auto& [name, shape] : j.at("hidden").items())
        shapes.emplace(name, SequenceShape{shape.at("rows").get<std::vector<std::int64_t>>(),
                                           shape.at("cols").get<std::int64_t>()});
    return shapes;
}

HiddenSet WorkFolder::loadHidden() const {
    HiddenSet hidden;
    for (const auto& [name, shape] : hiddenShapes())
        hidden.emplace(name, SequenceFile::load(hiddenFolder() / hiddenFileName(name), shape));
    return hidden;
}

void WorkFolder::discard(const fs::path& dir) {
    if (!dir.empty() && fs::exists(dir / kPlanFile)) fs::remove_all(dir);
}

void WorkFolder::remove() {
    fs::remove_all(dir_);
    complete_ = 0;
}

}  // namespace qs::pipeline
