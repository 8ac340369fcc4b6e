#pragma once
// The tree's filter (a proxy, as in hotspot, not code in the view): a case-insensitive substring or
// regular expression matched against full dotted names. A matching group keeps all of its children
// ("mlp" shows whole MLP modules); a matching tensor keeps its parents.
#include <QSortFilterProxyModel>

namespace qs::gui {

class CheckpointFilterModel : public QSortFilterProxyModel {
    Q_OBJECT

public:
    explicit CheckpointFilterModel(QObject* parent = nullptr);

    // Returns false (and leaves the filter as it was) when `regex` is set and `pattern` is invalid.
    bool setPattern(const QString& pattern, bool regex);
};

}  // namespace qs::gui
