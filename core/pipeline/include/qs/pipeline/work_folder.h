#pragma once
// WorkFolder: a Job's state on disk after each finished decoder layer (`--work-dir`), so that a run
// killed at any moment (SIGKILL, power loss, out of memory) continues from its last complete layer
// (`--resume`) and ends with the same result, bit for bit.
//
// Layout: plan.json (what the run is: checkpoint headers, methods, token hashes, seed ...); one folder
// per finished layer, layer-0003/ (the linears each method quantized, module logs, per-layer facts);
// and the hidden states after the newest finished layer, hidden-0003/: one SequenceFile per stream
// (evaluation.f32, s0.calibration.f32 ...) and a record.json of their shapes. Each folder is written
// beside its final name and renamed into place (io::CheckpointWriter; .tmp-hidden-0003 for the hidden
// states, where a stream too large for memory is written while the layer runs), so a folder that
// exists is complete; the older hidden-states folder is removed only after the newer one is in place.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/matrix.h"
#include "qs/pipeline/sequence_file.h"
#include "qs/quant/quantized_linear.h"

namespace qs::pipeline {

using HiddenSet = std::map<std::string, std::vector<MatrixF>>;  // named streams, one [T, hidden] matrix per sequence
using HiddenShapes = std::map<std::string, SequenceShape>;      // named streams' shapes, their sequences in files

struct LayerRecord {
    nlohmann::json facts = nlohmann::json::object();        // the Job's own per-layer facts (logs, errors, scales)
    std::map<std::string, quant::QuantizedLinear> linears;  // keyed as the Job names them ("0:self_attn.q_proj")
    HiddenSet hidden;                                       // states the Job keeps per layer (per-layer KL inputs)
};

class WorkFolder {
public:
    // A new run's folder: created (with its parents) when absent. Refuses a folder that holds an
    // interrupted run (pass resume) or anything else (a folder of the user's own is never written into).
    static WorkFolder start(const std::filesystem::path& dir, const nlohmann::json& plan);
    // An interrupted run's folder. Refuses a folder without a run, or one whose plan differs from
    // `plan`, naming the first difference.
    static WorkFolder resume(const std::filesystem::path& dir, const nlohmann::json& plan);

    const std::filesystem::path& path() const { return dir_; }
    // Layers 0 .. completeLayers()-1 have their records and the hidden states after the last of them.
    int completeLayers() const { return complete_; }

    // Where the hidden states after layer `layer` are written before saveLayer puts them in place,
    // one file per stream named hiddenFileName(stream); created when absent.
    std::filesystem::path hiddenStaging(int layer) const;
    static std::string hiddenFileName(const std::string& stream) { return stream + ".f32"; }
    // Layer `layer` is finished: its record, and the hidden states after it, whose files are in
    // hiddenStaging(layer) already (`hiddenAfter` names them and their shapes).
    void saveLayer(int layer, const LayerRecord& record, const HiddenShapes& hiddenAfter);
    // The same with hidden states in memory, written here.
    void saveLayer(int layer, const LayerRecord& record, const HiddenSet& hiddenAfter);
    LayerRecord loadLayer(int layer) const;
    // The linears of layer `layer` whose key starts with `keyPrefix` ("0:"), keyed by the rest of the key
    // ("self_attn.q_proj"): one method's layer, without reading the other methods' or the hidden states.
    static std::map<std::string, quant::QuantizedLinear> loadLinears(const std::filesystem::path& dir, int layer,
                                                                     std::string_view keyPrefix);
    // The states named `name` that layer `layer`'s record keeps (LayerRecord::hidden), without its linears.
    static std::vector<MatrixF> loadKeptHidden(const std::filesystem::path& dir, int layer, const std::string& name);
    // The hidden states after layer completeLayers()-1: their folder, their shapes, or read into memory.
    std::filesystem::path hiddenFolder() const;
    HiddenShapes hiddenShapes() const;
    HiddenSet loadHidden() const;
    // The size of the OpenMP team the run started on, recorded when it starts and used again when it
    // resumes: OpenBLAS's threaded SGEMM rounds differently for other team sizes with some of its
    // kernels (Haswell's: 1 and 2 threads differ), and a resumed run must write the bytes of an
    // uninterrupted one, whatever the free cores are now. Empty for a folder without the record.
    void recordThreadTeam(int threads) const;
    std::optional<int> threadTeam() const;
    // The run is finished and its result delivered: the folder goes.
    void remove();
    // The same for a folder named by path, when it holds a run (a folder without plan.json is left alone).
    static void discard(const std::filesystem::path& dir);
    // When `dir` holds an interrupted run: how many of its layers are complete (0 when none is); else
    // nothing. Reads only.
    static std::optional<int> interruptedLayers(const std::filesystem::path& dir);

private:
    explicit WorkFolder(std::filesystem::path dir) : dir_(std::move(dir)) {}
    std::filesystem::path dir_;
    int complete_ = 0;
};

// Linears of a work folder's finished layers read back one at a time (a stream's model rerunning a
// layer for the per-layer KL), with each layer's record opened once for all of them: a MoE layer holds
// hundreds of linears per method, and opening the record (its JSON and the safetensors header) for
// each one cost more than the layer's whole work. The last layer asked for stays open; one cache may
// serve every stream's linears, from any thread.
class StoredLinearCache {
public:
    explicit StoredLinearCache(std::filesystem::path dir);
    ~StoredLinearCache();
    StoredLinearCache(const StoredLinearCache&) = delete;
    StoredLinearCache& operator=(const StoredLinearCache&) = delete;

    // The linear stored under `key` ("0:self_attn.q_proj") in layer `layer`'s record.
    quant::QuantizedLinear load(int layer, const std::string& key);

    struct OpenLayer;

private:
    std::filesystem::path dir_;
    std::mutex mutex_;
    int layer_ = -1;
    std::shared_ptr<const OpenLayer> open_;
};

}  // namespace qs::pipeline
