#include "jobs/run_cache.h"

#include <algorithm>
#include <functional>
#include <tuple>
#include <vector>

#include <QDir>
#include <QStandardPaths>

#include "qs/error.h"
#include "qs/pipeline/work_folder.h"

namespace qs::gui {
namespace fs = std::filesystem;

namespace {

constexpr int kMostRunsOfOneKey = 10000;

// Whether `name` is a run folder's name of `key`: "<key>-<n>", or "<key>" as earlier versions named it.
bool isRunOf(const std::string& name, const std::string& key) {
    if (name == key) return true;
    if (name.size() <= key.size() + 1 || !name.starts_with(key) || name[key.size()] != '-') return false;
    return std::all_of(name.begin() + std::ptrdiff_t(key.size()) + 1, name.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
}

bool holdsRun(const fs::path& folder) {
    std::error_code ec;
    return fs::exists(folder / "plan.json", ec);
}

bool finished(const fs::path& folder) {
    std::error_code ec;
    return fs::exists(RunLease::finishedMarkerOf(folder), ec);
}

std::uintmax_t bytesUnder(const fs::path& folder) {
    std::uintmax_t bytes = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
        if (std::error_code sizeError; it->is_regular_file(sizeError)) bytes += it->file_size(sizeError);
    return bytes;
}

// `path` without the suffix it ends with ("x.lock" -> "x"), or empty when it does not.
fs::path withoutSuffix(const fs::path& path, const std::string& suffix) {
    const std::string s = path.string();
    return s.ends_with(suffix) && s.size() > suffix.size() ? fs::path(s.substr(0, s.size() - suffix.size()))
                                                           : fs::path();
}

}  // namespace

RunCache RunCache::inUserCache() {
    QString cache = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
    if (cache.isEmpty()) cache = QDir::temp().filePath(QStringLiteral("quantscope"));
    return RunCache(fs::path(cache.toStdString()) / "runs");
}

std::optional<RunCache::Interrupted> RunCache::takeInterrupted(const std::string& key) const {
    std::vector<std::tuple<int, fs::file_time_type, fs::path>> candidates;  // finished layers, last change, folder
    std::error_code ec;
    for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path folder = it->path();
        if (!isRunOf(folder.filename().string(), key) || finished(folder)) continue;
        const std::optional<int> layers = pipeline::WorkFolder::interruptedLayers(folder);
        std::error_code timeError;
        if (layers && *layers > 0) candidates.emplace_back(*layers, fs::last_write_time(folder, timeError), folder);
    }
    std::sort(candidates.begin(), candidates.end(), std::greater<>());  // the most layers, then the newest
    for (const auto& [layers, changed, folder] : candidates) {
        std::optional<FolderLock> lock = FolderLock::acquire(folder);
        if (!lock) continue;  // another process runs it, or shows its result
        // Looked at again under the lock: the process that held it may have finished it meanwhile.
        if (finished(folder) || pipeline::WorkFolder::interruptedLayers(folder) != layers) continue;
        return Interrupted{std::make_shared<RunLease>(folder, std::move(*lock)), layers};
    }
    return std::nullopt;
}

std::shared_ptr<RunLease> RunCache::startNew(const std::string& key) const {
    for (int n = 1; n <= kMostRunsOfOneKey; ++n) {
        const fs::path folder = root_ / (key + "-" + std::to_string(n));
        std::error_code ec;
        if (fs::exists(folder, ec) || finished(folder)) continue;
        std::optional<FolderLock> lock = FolderLock::acquire(folder);
        if (!lock || fs::exists(folder, ec)) continue;  // taken by another process just now
        return std::make_shared<RunLease>(folder, std::move(*lock));
    }
    throw Error(root_.string() + ": " + std::to_string(kMostRunsOfOneKey) +
                " runs of the same settings are kept there; remove the folder");
}

RunCache::Cleaned RunCache::cleanUp(std::chrono::hours keepInterrupted) const {
    Cleaned cleaned;
    std::vector<fs::path> entries;
    std::error_code ec;
    for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
    for (const fs::path& entry : entries) {
        try {
            // A lock or marker whose folder is gone: taking the lock and letting it go removes its file.
            for (const char* suffix : {".lock", ".finished"}) {
                const fs::path folder = withoutSuffix(entry, suffix);
                if (folder.empty() || fs::exists(folder, ec)) continue;
                if (std::optional<FolderLock> lock = FolderLock::acquire(folder))
                    fs::remove(RunLease::finishedMarkerOf(folder), ec);
            }
            if (!fs::is_directory(entry, ec) || !holdsRun(entry)) continue;
            std::optional<FolderLock> lock = FolderLock::acquire(entry);
            if (!lock) continue;  // in use by a live process
            const bool done = finished(entry);
            const std::optional<int> layers = pipeline::WorkFolder::interruptedLayers(entry);
            const auto age = fs::file_time_type::clock::now() - fs::last_write_time(entry);
            if (!done && layers.value_or(0) > 0 && age <= keepInterrupted) continue;  // kept to resume
            const std::uintmax_t bytes = bytesUnder(entry);
            pipeline::WorkFolder::discard(entry);
            fs::remove(RunLease::finishedMarkerOf(entry), ec);
            ++cleaned.folders;
            cleaned.bytes += bytes;
        } catch (const std::exception&) {
            // Removed by another process meanwhile, or not removable now: tried again at the next start.
        }
    }
    return cleaned;
}

}  // namespace qs::gui
