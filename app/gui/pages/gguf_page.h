#pragma once
// The GGUF tab (shown only for a GGUF checkpoint): the file's metadata as a table, a layer × module
// map of its matrices' ggml types, and a sortable table of every tensor under both its names. Selecting
// a table row or a map cell asks for that tensor to be selected in the tree, which the other pages
// follow; selecting one elsewhere selects its row here.
#include "pages/inspector_page.h"

class QSortFilterProxyModel;
class QTableView;

namespace qs::gui {

class GgufMetadataModel;
class GgufTensorModel;
class GgufTypeMap;

class GgufPage : public InspectorPage {
    Q_OBJECT

public:
    explicit GgufPage(QWidget* parent = nullptr);

    QString title() const override { return tr("GGUF"); }
    QString toolTip() const override {
        return tr("The GGUF file: its metadata, the ggml type of every layer's matrices, every tensor by both names");
    }
    QString key() const override { return QStringLiteral("gguf"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;
    void setTensor(const QString& name) override;
    bool isBusy() const override { return false; }  // the header's tables: nothing to compute

    bool hasGguf() const;  // the open checkpoint is a GGUF file: the tab is shown
    GgufMetadataModel* metadata() const { return metadata_; }
    GgufTensorModel* tensors() const { return tensors_; }
    QTableView* metadataView() const { return metadataView_; }
    QTableView* tensorView() const { return tensorView_; }
    QSortFilterProxyModel* sortedTensors() const { return sorted_; }
    GgufTypeMap* typeMap() const { return map_; }

signals:
    void tensorActivated(const QString& name);  // a Hugging Face (checkpoint) tensor name

private:
    void onRowChanged(const QModelIndex& current);

    CheckpointPtr checkpoint_;
    GgufMetadataModel* metadata_;
    GgufTensorModel* tensors_;
    QSortFilterProxyModel* sorted_;
    QTableView* metadataView_;
    QTableView* tensorView_;
    GgufTypeMap* map_;
    bool following_ = false;  // selecting the row of a tensor chosen elsewhere: not asked back
};

}  // namespace qs::gui
