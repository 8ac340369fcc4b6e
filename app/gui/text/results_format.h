#pragma once
// How the results views name a method and its numbers, so the plots, the table and the CSVs agree.
#include <QString>

#include "qs/pipeline/job_result.h"

namespace qs::gui {

QString methodLabel(const pipeline::MethodResult& m);  // "GPTQ int4, g128, act-order", or a mix's "mixed 4.31 bpw"
QString shortLabel(const pipeline::MethodResult& m);   // "gptq4-act": the name it was asked by
QString bitsLabel(const pipeline::MethodResult& m);    // "4.16 bpw"
bool hasKl(const pipeline::MethodResult& m);           // ran, and was evaluated
QString klText(double value);                          // "0.00191", "–" for NaN

}  // namespace qs::gui
