#pragma once
// Private to qs_pipeline: the Job's KL scoring, once every layer is done. Each method's model is
// scored against the original on the evaluation text (scoreKl, kl_scoring.h); on request also with
// only one layer (per-layer KL) or one fused group of one layer (per-group KL) quantized. A failed
// method is skipped.
#include "job_run.h"

namespace qs::pipeline {

// Each method's KL, and the KV cache's alone (JobResult::kvCacheOnlyKl), from the final hidden
// states; nothing without evaluation text. The two below need evaluation text.
void scoreFinalKl(JobRun& run);
// KL with only layer l quantized: the method's layer l, then the original layers after it.
void scorePerLayerKl(JobRun& run);
// KL with only one fused group of layer l quantized (the rest of the layer and the layers after it
// original): what a mix that chooses per group changes, measured rather than shared out.
void scorePerGroupKl(JobRun& run);

}  // namespace qs::pipeline
