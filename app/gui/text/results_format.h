#pragma once
// How the results views name a method and its numbers, so the plots, the table and the CSVs agree.
#include <QString>

#include "qs/formats/format_info.h"
#include "qs/pipeline/job_result.h"

namespace qs::gui {

QString methodLabel(const pipeline::MethodResult& m);  // "GPTQ int4, g128, act-order", or a mix's "mixed 4.31 bpw"
QString shortLabel(const pipeline::MethodResult& m);   // "gptq4-act": the name it was asked by
QString bitsLabel(const pipeline::MethodResult& m);    // "4.16 bpw"
QString bitsText(const pipeline::MethodResult& m);     // "4.16", "–" when not counted (an evaluated checkpoint)
// An evaluated checkpoint's row (MethodResult::evaluatedCheckpoint): its format and file type
// ("gguf Q4_K_M"), else its bits when every quantized linear has the same ("gptq 4-bit"), else "mixed".
QString evaluatedCheckpointLabel(const formats::FormatInfo& format);
bool hasKl(const pipeline::MethodResult& m);  // ran, and was evaluated
QString klText(double value);                 // "0.00191", "–" for NaN

}  // namespace qs::gui
