// plan_estimate CHECKPOINT METHODS SAMPLES SEQ_LEN EVAL_SAMPLES [WORK_DIR [MAX_MEMORY]]
// Prints the pipeline's own prediction (pipeline::Job::estimate) for `quantscope-cli compare` with the
// same methods and token counts, so bench/peak_rss.sh can set it beside the measured peak. Token ids
// do not enter the estimate, only their counts; the group size does not either. With WORK_DIR the
// results stay on disk (quantscope-cli --work-dir; the folder is not touched here); with MAX_MEMORY
// ("2G", as --max-memory) the hidden states that do not fit spill there. The estimate counts the
// process's own resident set (the program and its libraries: about 0.2 GB with the CUDA libraries
// loaded), so this tool loads what the CLI loads and chooses the backend as the CLI does first.
#include <cstdlib>
#include <iostream>
#include <string>

#include "qs/huge_pages.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/byte_size.h"
#include "qs/pipeline/job.h"
#if defined(QS_WITH_CUDA_BACKEND)
#include "qs/gpu/cuda_backend.h"
#endif

namespace {

qs::pipeline::TokenSequences zeros(int samples, int seqLen) {
    return qs::pipeline::TokenSequences(std::size_t(samples), std::vector<qs::model::TokenId>(std::size_t(seqLen), 0));
}

}  // namespace

int main(int argc, char** argv) {
    qs::restartWithHugePages(argv);  // as the CLI does: its estimate then counts the huge pages' rounding
    if (argc < 6 || argc > 8) {
        std::cerr << "usage: plan_estimate CHECKPOINT METHODS SAMPLES SEQ_LEN EVAL_SAMPLES [WORK_DIR [MAX_MEMORY]]\n";
        return 2;
    }
#if defined(QS_WITH_CUDA_BACKEND)
    qs::gpu::registerCudaBackend();
#endif
    try {
        qs::pipeline::selectBackend(qs::pipeline::DeviceChoice::Auto);  // what the CLI has done when it estimates
        const int samples = std::stoi(argv[3]), seqLen = std::stoi(argv[4]), evalSamples = std::stoi(argv[5]);
        qs::pipeline::JobPlan plan;
        plan.checkpoint = argv[1];
        plan.methods = qs::pipeline::parseMethodList(argv[2], 128);
        plan.calibration = zeros(samples, seqLen);
        plan.evaluation = zeros(evalSamples, seqLen);
        if (argc >= 7) plan.workDir = argv[6], plan.resultsOnDisk = true;
        if (argc == 8) plan.maxMemory = qs::pipeline::parseByteSize(argv[7]);
        const qs::pipeline::ResourceEstimate e = qs::pipeline::Job(std::move(plan)).estimate();
        std::cout << e.peakBytes << '\n' << e.describe() << '\n';
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "plan_estimate: " << e.what() << '\n';
        return 2;
    }
}
