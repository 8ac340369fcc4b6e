#pragma once
// Private to qs_pipeline: a Job's run and its work folder (JobPlan::workDir, WorkFolder). After each
// layer the run's state goes there (every stream's finished linears, module logs and errors, the KV
// cache's scales, the per-layer KL's inputs, the hidden states after the layer), so that a resumed run
// (JobPlan::resume) reads it back and goes on from the next layer, bit for bit. With results on disk
// the finished layers' codes then stay only there, and are read back where they are needed. Without
// a work folder the functions that save or restore do nothing.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

#include "job_run.h"

namespace qs::pipeline {

// Where stream `name`'s first hidden states go when it spills (JobPlan::maxMemory): layer 0's
// hidden-state folder, which the first layer then rewrites in place. Empty when it stays in memory.
std::optional<std::filesystem::path> spillFile(const JobRun& run, const std::string& name);
// A spilled stream writes layer `layer`'s results into that layer's hidden-state folder, never over
// the previous layer's (what a resumed run reads).
void spillInto(JobRun& run, int layer);

// Layer `layer` finished: what a resumed run needs of it goes to the work folder.
void saveLayer(JobRun& run, int layer);
// Results on disk: layer `layer` is in the work folder now, so each stream keeps only its linears'
// headers, and its model reads the layer's weights back from the folder when it runs it again
// (per-layer KL).
void leaveCodesOnDisk(JobRun& run, int layer);
// A resumed run: the finished layers and the hidden states after them from the work folder; the
// first layer still to do (0 for a new run).
int restoreFinishedLayers(JobRun& run);

// Results on disk (needs the work folder): stream m's result names its layers in the work folder.
void storeKept(JobRun& run, std::size_t m);
// Stream m's finished layer `layer`: held, or read back from the work folder (results on disk).
CompactLayer finishedLayer(const JobRun& run, std::size_t m, int layer);
// The original evaluation hidden states at layer `layer`'s input: held, or read back from its record.
Hidden layerInput(const JobRun& run, int layer);

}  // namespace qs::pipeline
