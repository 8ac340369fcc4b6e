#pragma once
// Private to qs_pipeline: the Job's layer loop, one decoder layer of every stream at a time. The
// original model's calibration stream gives the layer's statistics (and the KV cache's scales), each
// method quantizes the layer from them (or from its own calibration stream, true-sequential), and
// every stream's hidden states then move past the layer: the original's through its own weights, a
// method's through its quantized ones.
#include "job_run.h"

namespace qs::pipeline {

// Layer `layer` of every stream, after layers 0 .. layer-1: calibrated, quantized by each method that
// has not failed (a method that fails records its error and stops), and run.
void calibrateAndQuantizeLayer(JobRun& run, int layer);

}  // namespace qs::pipeline
