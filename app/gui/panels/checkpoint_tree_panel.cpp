#include "panels/checkpoint_tree_panel.h"

#include <algorithm>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QTreeView>
#include <QVBoxLayout>

#include "models/checkpoint_filter_model.h"
#include "models/checkpoint_tree_model.h"

namespace qs::gui {

CheckpointTreePanel::CheckpointTreePanel(QWidget* parent)
    : QWidget(parent),
      model_(new CheckpointTreeModel(this)),
      proxy_(new CheckpointFilterModel(this)),
      filter_(new QLineEdit(this)),
      regex_(new QCheckBox(tr("Regex"), this)),
      view_(new QTreeView(this)) {
    proxy_->setSourceModel(model_);
    filter_->setPlaceholderText(tr("Filter tensors, e.g. mlp or layers\\.1\\d?\\."));
    filter_->setClearButtonEnabled(true);
    regex_->setToolTip(tr("Treat the filter as a regular expression"));

    view_->setModel(proxy_);
    view_->setSortingEnabled(true);
    view_->sortByColumn(CheckpointTreeModel::NameColumn, Qt::AscendingOrder);
    view_->setUniformRowHeights(true);  // lets the view skip measuring rows of huge checkpoints
    view_->setAlternatingRowColors(true);
    view_->setTextElideMode(Qt::ElideMiddle);  // "self_a…q_proj": the end tells modules apart
    view_->header()->setStretchLastSection(false);
    view_->header()->setSectionResizeMode(CheckpointTreeModel::NameColumn, QHeaderView::Stretch);
    // A layer of a quantized checkpoint lists four element types ("BF16, F32, F8_E4M3, U8"): sized to
    // its contents, DType squeezed Name to a few characters. It is capped instead (the cell elides,
    // its tooltip has the whole list); Shape and Size are short.
    view_->header()->setSectionResizeMode(CheckpointTreeModel::DTypeColumn, QHeaderView::Interactive);
    for (const int column : {CheckpointTreeModel::ShapeColumn, CheckpointTreeModel::SizeColumn}) {
        view_->header()->setSectionResizeMode(column, QHeaderView::ResizeToContents);
    }

    auto* filterRow = new QHBoxLayout;
    filterRow->addWidget(filter_, 1);
    filterRow->addWidget(regex_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(filterRow);
    layout->addWidget(view_, 1);

    connect(filter_, &QLineEdit::textChanged, this, &CheckpointTreePanel::applyFilter);
    connect(regex_, &QCheckBox::toggled, this, &CheckpointTreePanel::applyFilter);
    connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& current) { onCurrentChanged(current); });
}

void CheckpointTreePanel::setCheckpoint(CheckpointPtr checkpoint) {
    current_.clear();
    model_->setCheckpoint(std::move(checkpoint));
    // Layers expanded one level: the modules are what people scan for.
    view_->expandToDepth(0);
    fitDTypeColumn();
}

void CheckpointTreePanel::fitDTypeColumn() {
    view_->resizeColumnToContents(CheckpointTreeModel::DTypeColumn);
    const int cap = view_->fontMetrics().horizontalAdvance(QStringLiteral("F8_E4M3…")) + 16;  // + the cell margins
    view_->header()->resizeSection(CheckpointTreeModel::DTypeColumn,
                                   std::min(view_->header()->sectionSize(CheckpointTreeModel::DTypeColumn), cap));
}

void CheckpointTreePanel::applyFilter() {
    const bool valid = proxy_->setPattern(filter_->text(), regex_->isChecked());
    filter_->setStyleSheet(valid ? QString() : QStringLiteral("QLineEdit { background: #ffd6d6; }"));
    filter_->setToolTip(valid ? QString() : tr("Invalid regular expression"));
    if (!filter_->text().isEmpty()) view_->expandAll();
}

void CheckpointTreePanel::selectTensor(const QString& name) {
    const QModelIndex source = model_->indexOfTensor(name);
    if (!source.isValid()) return;
    QModelIndex index = proxy_->mapFromSource(source);
    if (!index.isValid()) {
        filter_->clear();
        index = proxy_->mapFromSource(source);
    }
    view_->setCurrentIndex(index);
    view_->scrollTo(index);
}

QString CheckpointTreePanel::currentTensor() const { return current_; }

void CheckpointTreePanel::onCurrentChanged(const QModelIndex& current) {
    const QString tensor = model_->representativeTensor(proxy_->mapToSource(current));
    if (tensor.isEmpty() || tensor == current_) return;
    current_ = tensor;
    emit tensorSelected(tensor);
}

}  // namespace qs::gui
