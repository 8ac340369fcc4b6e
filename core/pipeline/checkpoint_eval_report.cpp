#include "qs/pipeline/checkpoint_eval_report.h"

#include "qs/pipeline/job_report.h"

namespace qs::pipeline {

nlohmann::json checkpointEvalJson(const std::string& original, const std::string& quantized,
                                  const CheckpointEvalResult& result) {
    return {{"original", original},
            {"quantized", quantized},
            {"original_format", result.originalFormat},
            {"quantized_format", result.quantizedFormat},
            {"evaluation_tokens", result.evaluationTokens},
            {"time_s", result.seconds},
            {"kl", toJson(result.kl)}};
}

}  // namespace qs::pipeline
