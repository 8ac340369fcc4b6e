#pragma once
// What the centre shows before any checkpoint is open: how to open one, and the bundled demo model
// to try everything on at once (a small Qwen3 with its calibration and evaluation text).
#include <QWidget>

class QPushButton;

namespace qs::gui {

class StartPage : public QWidget {
    Q_OBJECT

public:
    explicit StartPage(QWidget* parent = nullptr);

    QPushButton* demoButton() const { return demo_; }

signals:
    void openFileRequested();
    void openFolderRequested();
    void openDemoRequested();

private:
    QPushButton* demo_;
};

}  // namespace qs::gui
