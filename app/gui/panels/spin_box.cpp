#include "panels/spin_box.h"

#include <QSpinBox>

namespace qs::gui {

QSpinBox* makeSpinBox(int low, int high, int value, QWidget* parent) {
    auto* box = new QSpinBox(parent);
    box->setRange(low, high);
    box->setValue(value);
    box->setKeyboardTracking(false);
    return box;
}

}  // namespace qs::gui
