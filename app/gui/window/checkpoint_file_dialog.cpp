#include "window/checkpoint_file_dialog.h"

#include <QDir>
#include <QFileInfo>

namespace qs::gui {

CheckpointFileDialog::CheckpointFileDialog(QWidget* parent, const QString& directory, const QString& title)
    : QFileDialog(parent,
                  title.isEmpty() ? tr("Open checkpoint (a file, or a folder: select it and press Open)") : title,
                  directory, tr("Checkpoints (*.safetensors *.safetensors.index.json *.gguf);;All files (*)")) {
    setFileMode(QFileDialog::ExistingFile);
    // Qt's own dialog: accept() below is what decides, and a platform dialog would not call it.
    setOption(QFileDialog::DontUseNativeDialog);
}

bool CheckpointFileDialog::isCheckpointFolder(const QString& path) {
    const QDir dir(path);
    return QFileInfo(path).isDir() &&
           !dir.entryList({QStringLiteral("*.safetensors"), QStringLiteral("*.safetensors.index.json"),
                           QStringLiteral("*.gguf")},
                          QDir::Files)
                .isEmpty();
}

void CheckpointFileDialog::accept() {
    const QStringList chosen = selectedFiles();
    if (chosen.size() == 1 && isCheckpointFolder(chosen.front())) {
        QDialog::accept();  // selectedFiles() keeps naming the folder
        return;
    }
    QFileDialog::accept();
}

}  // namespace qs::gui
