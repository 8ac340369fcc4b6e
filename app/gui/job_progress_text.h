#pragma once
// The status bar's line for a running job: stage, layer i/N, what it is doing and the time left,
// extrapolated from the elapsed time and the overall fraction.
#include <QString>

#include "qs/progress.h"

namespace qs::gui {

// Seconds left at `fraction` done after `elapsedSeconds`; negative while there is too little to tell.
double remainingSeconds(double fraction, double elapsedSeconds);

// "quantize · layer 3/28 · GPTQ int4, g128, layer 3/28 · 42 % · ETA 1 min 20 s"
QString progressText(const qs::Progress& progress, double elapsedSeconds);

}  // namespace qs::gui
