#pragma once
// The left dock: a filter box over the checkpoint tree. Selecting a tensor (or a module: its
// weight) announces it; selectTensor() is how other views (the overview heat map) point at one.
#include <QWidget>

#include "pages/inspector_page.h"

class QCheckBox;
class QLineEdit;
class QTreeView;

namespace qs::gui {

class CheckpointFilterModel;
class CheckpointTreeModel;

class CheckpointTreePanel : public QWidget {
    Q_OBJECT

public:
    explicit CheckpointTreePanel(QWidget* parent = nullptr);

    void setCheckpoint(CheckpointPtr checkpoint);
    void selectTensor(const QString& name);  // clears a filter that hides it
    QString currentTensor() const;

    CheckpointTreeModel* model() const { return model_; }
    CheckpointFilterModel* proxy() const { return proxy_; }
    QTreeView* view() const { return view_; }

signals:
    void tensorSelected(const QString& name);

private:
    void applyFilter();
    void fitDTypeColumn();
    void onCurrentChanged(const QModelIndex& current);

    CheckpointTreeModel* model_;
    CheckpointFilterModel* proxy_;
    QLineEdit* filter_;
    QCheckBox* regex_;
    QTreeView* view_;
    QString current_;
};

}  // namespace qs::gui
