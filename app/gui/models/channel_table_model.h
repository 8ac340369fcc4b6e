#pragma once
// The top-k table of the channels tab: rank, channel, max|w| and how far above the median it is.
#include <vector>

#include <QAbstractTableModel>

#include "qs/analysis/channel_stats.h"

namespace qs::gui {

class ChannelTableModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { RankColumn, ChannelColumn, MaxAbsColumn, RatioColumn, ColumnCount };
    static constexpr int ChannelRole = Qt::UserRole + 1;

    using QAbstractTableModel::QAbstractTableModel;

    void setRanks(std::vector<analysis::ChannelRank> ranks, const QString& channelHeader);
    const std::vector<analysis::ChannelRank>& ranks() const { return ranks_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<analysis::ChannelRank> ranks_;
    QString channelHeader_;
};

}  // namespace qs::gui
