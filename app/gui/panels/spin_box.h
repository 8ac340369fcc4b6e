#pragma once
// The integer spin boxes of the settings panels: a range, a start value, and no signal per typed
// digit (valueChanged only when the edit is finished), since each change starts work.
class QSpinBox;
class QWidget;

namespace qs::gui {

QSpinBox* makeSpinBox(int low, int high, int value, QWidget* parent);

}  // namespace qs::gui
