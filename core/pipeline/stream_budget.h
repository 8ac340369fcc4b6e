#pragma once
// Which of a Job's travelling hidden-state streams stay in memory and which spill to the work folder
// (JobPlan::maxMemory): the estimate and the Job's run (JobRun) decide it with the same list and rule.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "qs/pipeline/job.h"

namespace qs::pipeline {

struct TravellingStream {
    std::string name;         // as the work folder names it: "calibration", "s0.evaluation", ...
    std::uint64_t bytes = 0;  // every sequence's f32 hidden states
};

// The streams a Job of `plan` carries from layer to layer, in the Job's order: the original model's
// calibration stream (when a method quantizes from its statistics or the KV cache is quantized), its
// evaluation stream, the KV-cache-only evaluation stream, then each method's own calibration stream
// (true-sequential) and its evaluation stream.
std::vector<TravellingStream> travellingStreams(const JobPlan& plan, int hiddenSize);

// The names of the streams that spill: in order, each stays in memory when it fits in what is left
// of `budget` (a later, smaller stream may still fit where an earlier one did not).
std::set<std::string> spilledStreams(const std::vector<TravellingStream>& streams, std::uint64_t budget);

std::uint64_t totalBytes(const std::vector<TravellingStream>& streams);

}  // namespace qs::pipeline
