#pragma once
// The File ▸ Open Recent list, most recent first, kept in QSettings.
#include <QStringList>

namespace qs::gui {

class RecentFiles {
public:
    static constexpr int kMaximum = 10;

    QStringList paths() const;      // only those that still exist
    void add(const QString& path);  // moves an existing entry to the front
    void clear();
};

}  // namespace qs::gui
