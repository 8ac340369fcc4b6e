#pragma once
// The outlier-channels tab: max|w| of every input channel (or, toggled, every output row) of the
// selected tensor, the top k marked on the plot and listed in a table; selecting a table row marks
// that channel on the plot. "After --rotate" sets beside it the same linear as --rotate quantizes it (its
// norm folded in, rotated: model::rotatedLinearWeight), to show what the rotation does to its outliers.
#include <optional>

#include "qs/analysis/channel_stats.h"

#include "jobs/job_runner.h"
#include "pages/inspector_page.h"
#include "plots/plot_export.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;
class QTableView;
class QCPItemStraightLine;
class QCPTextElement;

namespace qs::gui {

class ChannelTableModel;
class PlotView;

class ChannelsPage : public InspectorPage {
    Q_OBJECT

public:
    explicit ChannelsPage(QWidget* parent = nullptr);

    QString title() const override { return tr("Outliers"); }
    QString toolTip() const override { return tr("Outlier channels: the input channels whose weights stand out"); }
    QString key() const override { return QStringLiteral("channels"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;
    void setTensor(const QString& name) override;
    bool isBusy() const override;

    void setAxis(analysis::ChannelAxis axis);
    analysis::ChannelAxis axis() const;
    void setTopK(int k);
    void setShowRotated(bool on);  // "After --rotate"

    // The rotated linear's statistics when "After --rotate" is on and the model folds the rotation; else empty,
    // and rotationNote() says why when it was asked for.
    const std::optional<analysis::ChannelStats>& rotatedStats() const { return rotatedStats_; }
    const QString& rotationNote() const { return rotationNote_; }
    QString captionText() const;

    const std::optional<analysis::ChannelStats>& stats() const { return stats_; }
    const QString& shownTensor() const { return shownTensor_; }
    const QString& decodedAs() const { return decodedAs_; }  // the scheme a quantized linear's codes were decoded from
    ChannelTableModel* table() const { return table_; }
    QTableView* tableView() const { return tableView_; }
    PlotView* plot() const { return plot_; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void refresh();
    void clearPlot(const QString& message);
    void draw();
    void fitTableWidth();  // the table as wide as its columns: it never scrolls sideways
    void resetView();
    void markChannel(const QModelIndex& row);
    const std::vector<float>& values() const;
    QString toolTipAt(double x) const;
    CsvTable csv() const;

    CheckpointPtr checkpoint_;
    QString tensor_;
    QString shownTensor_;
    QString decodedAs_;
    bool stale_ = false;
    std::optional<analysis::ChannelStats> stats_;
    std::optional<analysis::ChannelStats> rotatedStats_;
    QString rotationNote_;
    JobRunner runner_;

    QComboBox* axis_;
    QSpinBox* topK_;
    QCheckBox* rotated_;
    PlotView* plot_;
    QCPItemStraightLine* marker_ = nullptr;
    ChannelTableModel* table_;
    QTableView* tableView_;
    QLabel* caption_;
};

}  // namespace qs::gui
