#pragma once
// JSON forms of a job's results: the per-module log lines (GPTQModel's columns), the KL report with
// llama.cpp's statistics, and the whole comparison (what `compare --json` writes and what
// quantscope_report.json embeds).
#include <nlohmann/json.hpp>

#include "qs/analysis/kl_metrics.h"
#include "qs/pipeline/job_result.h"

namespace qs::pipeline {

nlohmann::json toJson(const ModuleLog& log);
// The inverse of toJson(ModuleLog) (null reads as NaN; a work folder's logs come back exactly).
ModuleLog moduleLogFromJson(const nlohmann::json& j);
nlohmann::json toJson(const analysis::KlReport& report);
nlohmann::json toJson(const MethodResult& result);
nlohmann::json toJson(const JobResult& result);

}  // namespace qs::pipeline
