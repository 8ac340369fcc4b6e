#include "pages/gguf_page.h"

#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "qs/io/gguf_tensor_names.h"

#include "models/gguf_metadata_model.h"
#include "models/gguf_tensor_model.h"
#include "plots/gguf_type_map.h"

namespace qs::gui {
namespace {

QTableView* tableView(QAbstractItemModel* model, QWidget* parent) {
    auto* view = new QTableView(parent);
    view->setModel(model);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->setWordWrap(false);
    view->setTextElideMode(Qt::ElideLeft);  // a tensor name's end says the most: layer, module, part
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
    view->horizontalHeader()->setHighlightSections(false);
    return view;
}

}  // namespace

GgufPage::GgufPage(QWidget* parent)
    : InspectorPage(parent),
      metadata_(new GgufMetadataModel(this)),
      tensors_(new GgufTensorModel(this)),
      sorted_(new QSortFilterProxyModel(this)),
      metadataView_(tableView(metadata_, this)),
      tensorView_(nullptr),
      map_(new GgufTypeMap(this)) {
    sorted_->setSourceModel(tensors_);
    sorted_->setSortRole(GgufTensorModel::SortRole);
    tensorView_ = tableView(sorted_, this);
    tensorView_->setSortingEnabled(true);
    tensorView_->sortByColumn(GgufTensorModel::GgufNameColumn, Qt::AscendingOrder);  // file order
    metadataView_->horizontalHeader()->setStretchLastSection(true);
    tensorView_->horizontalHeader()->setStretchLastSection(false);
    map_->setMinimumHeight(150);

    // One above the other, each as wide as the page: at a laptop's 1366 pixels the centre is under 600
    // wide, which two side by side would halve.
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(metadataView_);
    splitter->addWidget(map_);
    splitter->addWidget(tensorView_);
    for (int i = 0; i < 3; ++i) splitter->setStretchFactor(i, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(splitter);

    connect(tensorView_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &GgufPage::onRowChanged);
    connect(map_, &LayerExpertMap::expertClicked, this,
            [this](int, const QString& tensor) { emit tensorActivated(tensor); });
    connect(map_, &PlotView::exportFailed, this,
            [this](const QString& m) { emit errorOccurred(tr("Export failed"), m); });
}

bool GgufPage::hasGguf() const { return checkpoint_ && checkpoint_->gguf(); }

void GgufPage::setCheckpoint(CheckpointPtr checkpoint) {
    checkpoint_ = std::move(checkpoint);
    metadata_->setCheckpoint(checkpoint_.get());
    tensors_->setCheckpoint(checkpoint_.get());
    const io::GgufFile* file = hasGguf() ? checkpoint_->gguf() : nullptr;
    map_->setGrid(file ? GgufTypeGrid::fromFile(*file, io::ggufTensorNames(*file)) : GgufTypeGrid());
    metadataView_->resizeColumnToContents(GgufMetadataModel::KeyColumn);
    metadataView_->setColumnWidth(GgufMetadataModel::KeyColumn,
                                  std::min(metadataView_->columnWidth(GgufMetadataModel::KeyColumn), 220));
    tensorView_->resizeColumnsToContents();
    // The names elide in the middle rather than push bytes and bits per weight off a laptop's page.
    tensorView_->setColumnWidth(GgufTensorModel::GgufNameColumn,
                                std::min(tensorView_->columnWidth(GgufTensorModel::GgufNameColumn), 150));
    tensorView_->setColumnWidth(GgufTensorModel::HfNameColumn,
                                std::min(tensorView_->columnWidth(GgufTensorModel::HfNameColumn), 150));
}

void GgufPage::setTensor(const QString& name) {
    const int row = tensors_->rowOfTensor(name);
    following_ = true;
    if (row < 0) {
        tensorView_->clearSelection();
    } else {
        const QModelIndex index = sorted_->mapFromSource(tensors_->index(row, 0));
        tensorView_->setCurrentIndex(index);
        tensorView_->scrollTo(index);
    }
    following_ = false;
}

void GgufPage::onRowChanged(const QModelIndex& current) {
    if (following_ || !current.isValid()) return;
    const QString tensor = current.data(GgufTensorModel::TensorNameRole).toString();
    if (!tensor.isEmpty()) emit tensorActivated(tensor);
}

}  // namespace qs::gui
