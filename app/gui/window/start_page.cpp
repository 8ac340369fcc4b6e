#include "window/start_page.h"

#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace qs::gui {

StartPage::StartPage(QWidget* parent) : QWidget(parent), demo_(new QPushButton(tr("Open the demo"), this)) {
    auto* title =
        new QLabel(tr("<h2>QuantScope</h2><p>Open a .safetensors or .gguf file or a checkpoint folder, or drop "
                      "one on this window.</p>"),
                   this);
    title->setAlignment(Qt::AlignCenter);
    auto* openFile = new QPushButton(tr("Open File…"), this);
    auto* openFolder = new QPushButton(tr("Open Folder…"), this);
    demo_->setToolTip(
        tr("The bundled demo: a 1.7M-parameter Qwen3 with its calibration and evaluation text, small enough to "
           "quantize with every method in seconds"));
    auto* layout = new QVBoxLayout(this);
    layout->addStretch(1);
    layout->addWidget(title);
    for (QPushButton* button : {openFile, openFolder, demo_}) {
        button->setMinimumWidth(220);
        layout->addWidget(button, 0, Qt::AlignHCenter);
    }
    layout->addStretch(2);
    connect(openFile, &QPushButton::clicked, this, &StartPage::openFileRequested);
    connect(openFolder, &QPushButton::clicked, this, &StartPage::openFolderRequested);
    connect(demo_, &QPushButton::clicked, this, &StartPage::openDemoRequested);
}

}  // namespace qs::gui
