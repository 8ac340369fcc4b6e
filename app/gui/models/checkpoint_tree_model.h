#pragma once
// CheckpointTreeModel: the checkpoint's tensors as a tree, embeddings / Layer i → module → part /
// norms / LM head / other; a MoE layer's experts in one "experts (N)" node, expert e → module → part. The model keeps only a small node index (integers and labels); every
// cell's text is made on demand from the checkpoint's headers, so a checkpoint of a hundred
// thousand tensors costs no more than its index.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <QAbstractItemModel>
#include <QHash>

#include "pages/inspector_page.h"

namespace qs::gui {

class CheckpointTreeModel : public QAbstractItemModel {
    Q_OBJECT

public:
    enum Column { NameColumn, DTypeColumn, ShapeColumn, SizeColumn, ColumnCount };
    enum Role {
        TensorNameRole = Qt::UserRole + 1,  // full tensor name; empty for group nodes
        FilterTextRole,                     // what the filter matches: the node's full dotted name
        SortRole,                           // numeric where the text would sort wrongly
        QuantSchemeRole,                    // a quantized linear's scheme ("int4 g128 asym"); empty for others
        GroupItemsRole,                     // a group's child count, which its Shape cell shows; none for others
        GgufNameRole,                       // a GGUF checkpoint's leaf: the file's name of its tensor; else empty
    };

    explicit CheckpointTreeModel(QObject* parent = nullptr);

    void setCheckpoint(CheckpointPtr checkpoint);
    int tensorCount() const;  // leaves
    QModelIndex indexOfTensor(const QString& name) const;
    // The tensor a node stands for: a leaf itself, a module its "weight" (else its largest part).
    QString representativeTensor(const QModelIndex& index) const;
    // The first linear weight of the first decoder layer (else the first tensor): what to show first.
    QString defaultTensor() const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Node {
        int parent = -1;
        int row = 0;
        std::vector<int> children;
        int tensor = -1;  // index into Checkpoint::tensors() for leaves
        QString label;
        QString filterText;
        int order = 0;                // natural position among siblings
        std::uint64_t bytes = 0;      // leaf or subtree
        std::set<std::string> types;  // element types in the subtree (TensorInfo::typeName: "BF16", GGUF's "q4_K")
        // A quantized linear's module node: its scheme and [out, in] (its parts are storage, not the shape).
        QString scheme;       // "int4 g128 act-order asym": the tooltip's and QuantSchemeRole's
        QString schemeLabel;  // "int4", "nvfp4", "fp8": the DType column's, as short as "BF16"
        std::vector<std::int64_t> linearShape;
        QString ggufName;  // a GGUF checkpoint's leaf: the file's tensor it is read from ("blk.0.attn_q.weight")
    };

    void build();
    QString tensorName(int tensor) const;
    void addLeaf(int parent, int tensor, const QString& label);
    QString addModule(int parent, const QString& label, const std::vector<int>& members);
    void addLayer(int layer, const std::map<std::string, std::vector<int>>& modules);
    void addExperts(int layerNode, const std::string& container,
                    const std::map<std::string, std::vector<int>>& modules);
    QString expertsLabel(int perExpert, const std::vector<int>& stacked) const;
    void markQuantizedLinears();
    int addNode(int parent, QString label, QString filterText);
    void finishNode(int node);
    int nodeOf(const QModelIndex& index) const;
    QVariant displayData(const Node& node, int column) const;
    static QString storedTypes(const Node& node);  // "F16, I32"

    CheckpointPtr checkpoint_;
    std::vector<Node> nodes_;  // nodes_[0] is the invisible root
    QHash<QString, int> leafByName_;
    QHash<QString, QString> ggufNames_;  // a GGUF checkpoint's tensors: Hugging Face name -> GGUF name
};

}  // namespace qs::gui
