#pragma once
// The "Activation scales" tab: what a checkpoint tells its serving engine to quantize besides the
// weights — static input scales (FP8 W8A8, NVFP4 W4A4) and the FP8 KV cache's k/v scales — plotted per
// layer, with a caption naming the largest. Reading them is a few scalars: done on the GUI thread.
#include "pages/inspector_page.h"

class QLabel;

namespace qs::gui {

class ServingScalesPlot;

class ServingScalesPage : public InspectorPage {
    Q_OBJECT

public:
    explicit ServingScalesPage(QWidget* parent = nullptr);

    QString title() const override { return tr("Activations"); }
    QString toolTip() const override { return tr("Activation and KV-cache scales stored for the serving engine"); }
    QString key() const override { return QStringLiteral("scales"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;
    void setTensor(const QString&) override {}
    bool isBusy() const override { return false; }

    ServingScalesPlot* plot() const { return plot_; }
    QString captionText() const;

private:
    ServingScalesPlot* plot_;
    QLabel* caption_;
    QString problem_;  // why the scales could not be read (a bad scale names its tensor)
};

}  // namespace qs::gui
