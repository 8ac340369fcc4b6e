#pragma once
// The main window: the checkpoint tree and summary docks, the inspector tabs in the centre, File
// menu with recent files, drag-and-drop. It owns the open checkpoint and tells the pages about it;
// every error reaches the user through the ErrorReporter.
#include <memory>
#include <vector>

#include <QMainWindow>

#include "error_reporter.h"
#include "inspector_page.h"

class QDockWidget;
class QMenu;
class QTabWidget;

namespace qs::gui {

class ChannelsPage;
class CheckpointTreePanel;
class HistogramPage;
class OverviewPage;
class SummaryPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    enum class Settings { Remember, Ignore };   // Ignore: screenshots and tests leave no trace

    explicit MainWindow(Settings settings = Settings::Remember, QWidget* parent = nullptr);
    ~MainWindow() override;

    void setErrorReporter(std::shared_ptr<ErrorReporter> reporter);
    // Opens a .safetensors file or a checkpoint folder; on failure reports the core's message and
    // keeps what was open. Returns whether it opened.
    bool openPath(const QString& path);
    bool showPage(const QString& key);   // "histogram", "channels", "overview"
    bool isBusy() const;                 // the visible page is still computing
    void selectTensor(const QString& name);
    QString currentTensor() const;
    CheckpointPtr checkpoint() const { return checkpoint_; }

    CheckpointTreePanel* treePanel() const { return tree_; }
    SummaryPanel* summaryPanel() const { return summary_; }
    HistogramPage* histogramPage() const { return histogram_; }
    ChannelsPage* channelsPage() const { return channels_; }
    OverviewPage* overviewPage() const { return overview_; }
    InspectorPage* currentPage() const;

signals:
    void checkpointOpened(const QString& path);
    void busyChanged(bool busy);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createDocks();
    void createPages();
    void createMenus();
    void fillRecentMenu();
    void openFileDialog();
    void openFolderDialog();
    void showAbout();
    void onTensorSelected(const QString& name);
    void reportError(const QString& title, const QString& message);
    void restoreWindowState();

    Settings settings_;
    std::shared_ptr<ErrorReporter> reporter_;
    CheckpointPtr checkpoint_;
    QString path_;

    CheckpointTreePanel* tree_;
    SummaryPanel* summary_;
    QDockWidget* treeDock_ = nullptr;
    QDockWidget* summaryDock_ = nullptr;
    QTabWidget* tabs_;
    HistogramPage* histogram_;
    ChannelsPage* channels_;
    OverviewPage* overview_;
    std::vector<InspectorPage*> pages_;
    QMenu* recentMenu_ = nullptr;
};

}  // namespace qs::gui
