#pragma once
// File ▸ Open's and Compare with Original…'s dialog: a checkpoint file, or a checkpoint folder. Qt's file dialog only navigates
// into a folder whose path is typed (or selected) and Open pressed; a checkpoint is often a folder,
// so a folder that holds one is accepted as the choice instead.
#include <QFileDialog>

namespace qs::gui {

class CheckpointFileDialog : public QFileDialog {
    Q_OBJECT

public:
    // `title`: File ▸ Open's when empty.
    CheckpointFileDialog(QWidget* parent, const QString& directory, const QString& title = {});

    // Whether `path` is a folder QuantScope opens as a checkpoint (it holds .safetensors, an index
    // or a .gguf file).
    static bool isCheckpointFolder(const QString& path);

    void accept() override;
};

}  // namespace qs::gui
