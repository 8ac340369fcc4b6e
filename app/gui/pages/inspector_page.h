#pragma once
// InspectorPage: one tab of the centre area (one page class per tab, as in hotspot). A page is
// given the open checkpoint and the selected tensor, computes what it draws on its own JobRunner,
// and only while it is visible: hidden pages remember that they are stale and catch up when shown.
#include <memory>

#include <QString>
#include <QWidget>

#include "qs/io/checkpoint.h"

namespace qs::gui {

using CheckpointPtr = std::shared_ptr<const io::Checkpoint>;

class InspectorPage : public QWidget {
    Q_OBJECT

public:
    using QWidget::QWidget;

    virtual QString title() const = 0;                   // short: eight tabs share a laptop's tab bar
    virtual QString toolTip() const { return title(); }  // what the short title stands for
    virtual QString key() const = 0;                     // the --tab name: "histogram", "channels", "overview", ...
    virtual void setCheckpoint(CheckpointPtr checkpoint) = 0;
    virtual void setTensor(const QString& name) = 0;
    // True while the page's shown content is not yet computed (the screenshot waits for this).
    virtual bool isBusy() const = 0;

signals:
    void busyChanged(bool busy);
    void errorOccurred(const QString& title, const QString& message);
};

}  // namespace qs::gui
