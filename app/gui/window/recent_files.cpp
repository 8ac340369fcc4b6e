#include "window/recent_files.h"

#include <QFileInfo>
#include <QSettings>

namespace qs::gui {
namespace {

const QString kKey = QStringLiteral("recentFiles");

}  // namespace

QStringList RecentFiles::paths() const {
    QStringList existing;
    for (const QString& path : QSettings().value(kKey).toStringList()) {
        if (QFileInfo::exists(path)) existing << path;
    }
    return existing;
}

void RecentFiles::add(const QString& path) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    QStringList list = QSettings().value(kKey).toStringList();
    list.removeAll(absolute);
    list.prepend(absolute);
    while (list.size() > kMaximum) list.removeLast();
    QSettings().setValue(kKey, list);
}

void RecentFiles::clear() { QSettings().remove(kKey); }

}  // namespace qs::gui
