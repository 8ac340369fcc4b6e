#pragma once
// The tree's filter (a proxy, as in hotspot, not code in the view): a case-insensitive substring or
// regular expression matched against full dotted names (and a GGUF checkpoint's tensors' GGUF names). A matching group keeps all of its children
// ("mlp" shows whole MLP modules); a matching tensor keeps its parents. While it filters, a group's
// item count is of what it shows ("2 of 11 items").
#include <QSortFilterProxyModel>

namespace qs::gui {

class CheckpointFilterModel : public QSortFilterProxyModel {
    Q_OBJECT

public:
    explicit CheckpointFilterModel(QObject* parent = nullptr);

    // Returns false (and leaves the filter as it was) when `regex` is set and `pattern` is invalid.
    bool setPattern(const QString& pattern, bool regex);

    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

private:
    bool filtering_ = false;
};

}  // namespace qs::gui
