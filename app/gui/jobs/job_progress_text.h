#pragma once
// The status bar's line for a running job: stage, layer i/N, what it is doing and the time left
// (RemainingTime's, from the rate of finished work).
#include <QString>

#include "qs/progress.h"

namespace qs::gui {

// "quantize · layer 3/28 · GPTQ int4, g128, layer 3/28 · 42 % · ETA 1 min 20 s"
// `secondsLeft` negative: "ETA …".
QString progressText(const qs::Progress& progress, double secondsLeft);

}  // namespace qs::gui
