#include "models/channel_table_model.h"

#include "text/number_format.h"

namespace qs::gui {

void ChannelTableModel::setRanks(std::vector<analysis::ChannelRank> ranks, const QString& channelHeader) {
    beginResetModel();
    ranks_ = std::move(ranks);
    channelHeader_ = channelHeader;
    endResetModel();
}

int ChannelTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(ranks_.size());
}

int ChannelTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ChannelTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= static_cast<int>(ranks_.size())) return {};
    const analysis::ChannelRank& r = ranks_[static_cast<std::size_t>(index.row())];
    if (role == ChannelRole) return qlonglong(r.channel);
    if (role == Qt::TextAlignmentRole) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
        case RankColumn: return index.row() + 1;
        case ChannelColumn: return qlonglong(r.channel);
        case MaxAbsColumn: return valueText(r.maxAbs);
        case RatioColumn:
            return r.ratioToMedian > 0 ? QStringLiteral("%1×").arg(r.ratioToMedian, 0, 'f', 2) : QStringLiteral("–");
        default: return {};
    }
}

QVariant ChannelTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case RankColumn: return tr("#");
        case ChannelColumn: return channelHeader_;
        case MaxAbsColumn: return tr("max|w|");
        case RatioColumn: return tr("× median");
        default: return {};
    }
}

}  // namespace qs::gui
