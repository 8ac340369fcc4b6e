#pragma once
// --work-dir / --resume of quantize and compare: the run's state after each layer kept in a folder
// (pipeline::WorkFolder), so that a run killed at any moment continues from its last complete layer;
// --max-memory: the memory the run may use, the hidden states that do not fit streaming from that folder.
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "qs/pipeline/job.h"

namespace qs::cli {

struct WorkDirOptions {
    std::string workDir;          // a new run keeps its state here
    std::string resume;           // an interrupted run's folder, continued
    std::uint64_t maxMemory = 0;  // --max-memory in bytes, read as the command line is (JobPlan::maxMemory)

    bool any() const { return !workDir.empty() || !resume.empty(); }
    const std::string& folder() const { return resume.empty() ? workDir : resume; }
};

void addWorkDirOptions(CLI::App& cmd, WorkDirOptions& options);
// Sets the plan's work folder and memory limit; throws qs::Error when both options name different
// folders. (A --max-memory that is not a size is refused while the command line is read, before any work.)
void applyWorkDirOptions(const WorkDirOptions& options, pipeline::JobPlan& plan);
// The run's result is delivered (exported or printed): its work folder goes.
void discardWorkDir(const WorkDirOptions& options);

}  // namespace qs::cli
