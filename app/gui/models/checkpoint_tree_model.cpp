#include "models/checkpoint_tree_model.h"

#include <algorithm>
#include <map>

#include <QStringList>

#include "qs/analysis/layer_overview.h"
#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/io/gguf_tensor_names.h"
#include "qs/io/tensor_name.h"

#include "experts/expert_path.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

constexpr int kRoot = 0;

struct Grouping {
    std::vector<int> embeddings, norms, lmHead, towers, other;
    std::map<int, std::map<std::string, std::vector<int>>> layers;  // layer → module → tensors
};

Grouping groupTensors(const std::vector<io::CheckpointTensor>& tensors) {
    Grouping g;
    for (int i = 0; i < static_cast<int>(tensors.size()); ++i) {
        const io::TensorName& n = tensors[static_cast<std::size_t>(i)].naming;
        if (io::isTowerTensor(tensors[static_cast<std::size_t>(i)].info->name)) {
            g.towers.push_back(i);  // a VLM's vision tower has layers of its own: never the decoder's
        } else if (n.layer >= 0) {
            g.layers[n.layer][n.module].push_back(i);
        } else if (n.role == io::TensorRole::Embedding) {
            g.embeddings.push_back(i);
        } else if (n.role == io::TensorRole::Norm) {
            g.norms.push_back(i);
        } else if (n.role == io::TensorRole::LmHead) {
            g.lmHead.push_back(i);
        } else {
            g.other.push_back(i);
        }
    }
    return g;
}

std::vector<std::string> modulesInDisplayOrder(const std::map<std::string, std::vector<int>>& modules) {
    std::vector<std::string> names;
    for (const auto& [name, tensors] : modules) names.push_back(name);
    std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
        return analysis::moduleRank(a) < analysis::moduleRank(b);  // the map already sorted by name
    });
    return names;
}

// "model.layers.3.mlp.down_proj.weight" without ".weight": the module's dotted name.
QString withoutSuffix(const QString& name, const QString& suffix) {
    const QString dotted = QLatin1Char('.') + suffix;
    return !suffix.isEmpty() && name.endsWith(dotted) ? name.chopped(dotted.size()) : QString();
}

// "blk.3.attn_q.weight" -> "attn_q": the kind of a block's tensor in llama.cpp's naming; "" otherwise.
QString ggufKind(const QString& ggufName) {
    const QStringList parts = ggufName.split(QLatin1Char('.'));
    return parts.size() == 4 && parts[0] == QLatin1String("blk") ? parts[2] : QString();
}

}  // namespace

CheckpointTreeModel::CheckpointTreeModel(QObject* parent) : QAbstractItemModel(parent) { nodes_.emplace_back(); }

void CheckpointTreeModel::setCheckpoint(CheckpointPtr checkpoint) {
    beginResetModel();
    checkpoint_ = std::move(checkpoint);
    build();
    endResetModel();
}

int CheckpointTreeModel::addNode(int parent, QString label, QString filterText) {
    Node node;
    node.parent = parent;
    node.label = std::move(label);
    node.filterText = std::move(filterText);
    node.order = static_cast<int>(nodes_[static_cast<std::size_t>(parent)].children.size());
    node.row = node.order;
    const int id = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(node));
    nodes_[static_cast<std::size_t>(parent)].children.push_back(id);
    return id;
}

void CheckpointTreeModel::build() {
    nodes_.assign(1, Node{});
    leafByName_.clear();
    ggufNames_.clear();
    if (!checkpoint_) return;
    if (const io::GgufFile* file = checkpoint_->gguf())
        for (const io::GgufTensorName& n : io::ggufTensorNames(*file))
            ggufNames_.insert(QString::fromStdString(n.hf), QString::fromStdString(n.gguf));
    const Grouping g = groupTensors(checkpoint_->tensors());
    const auto addGroup = [&](const QString& label, const std::vector<int>& members) {
        if (members.empty()) return;
        const int group = addNode(kRoot, label, label);
        for (const int t : members) addLeaf(group, t, QString());
    };
    addGroup(tr("Embeddings"), g.embeddings);
    for (const auto& [layer, modules] : g.layers) addLayer(layer, modules);
    addGroup(tr("Norms"), g.norms);
    addGroup(tr("LM head"), g.lmHead);
    addGroup(tr("Vision / audio tower"), g.towers);
    addGroup(tr("Other"), g.other);
    finishNode(kRoot);
    markQuantizedLinears();
}

QString CheckpointTreeModel::tensorName(int tensor) const {
    return QString::fromStdString(checkpoint_->tensors()[static_cast<std::size_t>(tensor)].info->name);
}

// `label` empty: the tensor's full name.
void CheckpointTreeModel::addLeaf(int parent, int tensor, const QString& label) {
    const QString name = tensorName(tensor);
    const int id = addNode(parent, label.isEmpty() ? name : label, name);
    nodes_[static_cast<std::size_t>(id)].tensor = tensor;
    nodes_[static_cast<std::size_t>(id)].ggufName = ggufNames_.value(name);
    leafByName_.insert(name, id);
}

// A module node labelled `label`, its parts beneath it ("weight", "qweight", ...); returns its path
// ("model.layers.3.mlp.down_proj"), or "" when the part cannot be told from the name. A GGUF checkpoint's
// module reads with llama.cpp's kind beside ("q_proj · attn_q"), its leaves' tooltips give the GGUF names.
QString CheckpointTreeModel::addModule(int parent, const QString& label, const std::vector<int>& members) {
    const io::CheckpointTensor& first = checkpoint_->tensors()[static_cast<std::size_t>(members.front())];
    const QString modulePath = withoutSuffix(tensorName(members.front()), QString::fromStdString(first.naming.part));
    QString kind;
    for (const int t : members)
        if (kind.isEmpty()) kind = ggufKind(ggufNames_.value(tensorName(t)));
    // "self_attn.q_proj" reads "q_proj · attn_q": the tree's name column is narrow.
    const QString shown = kind.isEmpty() ? label : label.section(QLatin1Char('.'), -1) + QStringLiteral(" · ") + kind;
    const int node = addNode(parent, shown, modulePath.isEmpty() ? label : modulePath);
    for (const int t : members)
        addLeaf(node, t, QString::fromStdString(checkpoint_->tensors()[static_cast<std::size_t>(t)].naming.part));
    return modulePath;
}

// A decoder layer: its modules in display order; a MoE block's experts in one node where the first of
// them would be (the router and shared experts stay modules of the layer).
void CheckpointTreeModel::addLayer(int layer, const std::map<std::string, std::vector<int>>& modules) {
    const int layerNode = addNode(kRoot, tr("Layer %1").arg(layer), QString());
    QString layerPath;
    std::set<std::string> containersDone;
    for (const std::string& module : modulesInDisplayOrder(modules)) {
        const std::vector<int>& members = modules.at(module);
        if (module.empty()) {  // parts without a module name: the layer's own leaves
            for (const int t : members) addLeaf(layerNode, t, QString());
            continue;
        }
        if (const auto expert = parseExpertPath(module)) {
            if (containersDone.insert(expert->container).second) addExperts(layerNode, expert->container, modules);
            continue;
        }
        const QString moduleName = QString::fromStdString(module);
        const QString modulePath = addModule(layerNode, moduleName, members);
        if (layerPath.isEmpty()) layerPath = withoutSuffix(modulePath, moduleName);
    }
    nodes_[static_cast<std::size_t>(layerNode)].filterText =
        layerPath.isEmpty() ? QStringLiteral("layers.%1").arg(layer) : layerPath;
}

// "experts (128)" with an "expert e" node per expert and its linears beneath; gpt-oss's stacked tensors
// (every expert in one) are leaves of the experts node itself, "experts (32, stacked)".
void CheckpointTreeModel::addExperts(int layerNode, const std::string& container,
                                     const std::map<std::string, std::vector<int>>& modules) {
    std::map<int, std::map<std::string, std::vector<int>>> perExpert;  // expert → module → tensors
    std::vector<int> stacked;
    for (const auto& [module, members] : modules) {
        const auto path = parseExpertPath(module);
        if (!path || path->container != container) continue;
        if (path->expert >= 0)
            perExpert[path->expert][module] = members;
        else
            stacked.insert(stacked.end(), members.begin(), members.end());
    }
    std::sort(stacked.begin(), stacked.end());  // the checkpoint's order: a linear beside its bias
    const QString anyTensor =
        tensorName(!stacked.empty() ? stacked.front() : perExpert.begin()->second.begin()->second.front());
    const QString marker = QLatin1Char('.') + QString::fromStdString(container) + QLatin1Char('.');
    // "model.layers.0.mlp.experts"; a name that fuses its part into the container ("experts_blocks") has no
    // marker: the container's own name then, and its tensors by their full names.
    const qsizetype at = anyTensor.indexOf(marker);
    const QString containerPath = at < 0 ? QString::fromStdString(container) : anyTensor.left(at + marker.size() - 1);
    const int group = addNode(layerNode, expertsLabel(static_cast<int>(perExpert.size()), stacked), containerPath);
    for (const auto& [expert, expertModules] : perExpert) {
        const int expertNode =
            addNode(group, tr("expert %1").arg(expert), containerPath + QLatin1Char('.') + QString::number(expert));
        for (const std::string& module : modulesInDisplayOrder(expertModules)) {
            const std::string linear = parseExpertPath(module)->rest;  // "up_proj"
            addModule(expertNode, QString::fromStdString(linear.empty() ? module : linear), expertModules.at(module));
        }
    }
    for (const int t : stacked) {
        const QString name = tensorName(t);
        addLeaf(group, t,
                name.startsWith(containerPath + QLatin1Char('.')) ? name.mid(containerPath.size() + 1)
                                                                  : QString());  // "gate_up_proj_bias"
    }
}

QString CheckpointTreeModel::expertsLabel(int perExpert, const std::vector<int>& stacked) const {
    if (stacked.empty()) return tr("experts (%1)").arg(perExpert);
    std::int64_t count = 0;  // the stacked tensors' first dimension: [experts, ...]
    for (const int t : stacked) {
        const auto& shape = checkpoint_->tensors()[static_cast<std::size_t>(t)].info->shape;
        if (shape.size() >= 2) count = std::max(count, shape.front());
    }
    return count > 0 ? tr("experts (%1, stacked)").arg(count) : tr("experts (stacked)");
}

// A quantized linear is one module node (qweight, scales, qzeros, g_idx beneath it) that reads as the
// linear it stores: its scheme in the DType column, [out, in] in the Shape column. From the configs and
// headers (formats::detect); a checkpoint whose format cannot be told keeps the storage view.
void CheckpointTreeModel::markQuantizedLinears() {
    formats::FormatInfo format;
    try {
        format = formats::detect(*checkpoint_);
    } catch (const Error&) {
        return;
    }
    QHash<QString, const formats::LayerQuantInfo*> byPrefix;
    for (const formats::LayerQuantInfo& l : format.layers)
        if (l.ref.expert < 0 && l.scheme != "dense" && l.problem.empty())
            byPrefix.insert(QString::fromStdString(l.ref.prefix), &l);
    if (byPrefix.isEmpty()) return;
    for (Node& node : nodes_) {
        if (node.tensor >= 0 || node.children.empty()) continue;
        const auto it = byPrefix.find(node.filterText);
        if (it == byPrefix.end()) continue;
        node.scheme = QString::fromStdString((*it)->summary());
        node.schemeLabel =
            QString::fromStdString((*it)->scheme == "int" ? "int" + std::to_string((*it)->bits) : (*it)->scheme);
        node.linearShape = {(*it)->rows, (*it)->cols};
    }
}

// Sizes and dtypes of groups are their subtree's, summed once here rather than on every paint.
void CheckpointTreeModel::finishNode(int id) {
    Node& node = nodes_[static_cast<std::size_t>(id)];
    if (node.tensor >= 0) {
        const io::TensorInfo& info = *checkpoint_->tensors()[static_cast<std::size_t>(node.tensor)].info;
        node.bytes = info.byteSize();
        node.types = {info.typeName()};
        return;
    }
    std::uint64_t bytes = 0;
    std::set<std::string> types;
    for (const int child : nodes_[static_cast<std::size_t>(id)].children) {
        finishNode(child);
        bytes += nodes_[static_cast<std::size_t>(child)].bytes;
        const auto& childTypes = nodes_[static_cast<std::size_t>(child)].types;
        types.insert(childTypes.begin(), childTypes.end());
    }
    nodes_[static_cast<std::size_t>(id)].bytes = bytes;
    nodes_[static_cast<std::size_t>(id)].types = std::move(types);
}

int CheckpointTreeModel::tensorCount() const { return static_cast<int>(leafByName_.size()); }

QModelIndex CheckpointTreeModel::indexOfTensor(const QString& name) const {
    const auto it = leafByName_.find(name);
    if (it == leafByName_.end()) return {};
    return createIndex(nodes_[static_cast<std::size_t>(*it)].row, NameColumn, quintptr(*it));
}

QString CheckpointTreeModel::representativeTensor(const QModelIndex& index) const {
    const int id = nodeOf(index);
    if (id == kRoot) return {};
    const Node& node = nodes_[static_cast<std::size_t>(id)];
    if (node.tensor >= 0) return node.filterText;
    // A quantized module has no "weight": its largest part holds the packed codes (qweight,
    // weight_packed), where its first part by name was g_idx or a single global scale.
    const Node* largest = nullptr;
    for (const int child : node.children) {
        const Node& c = nodes_[static_cast<std::size_t>(child)];
        if (c.tensor < 0) return {};  // a layer or a group of modules stands for no single tensor
        if (c.label == QLatin1String("weight")) return c.filterText;
        if (!largest || c.bytes > largest->bytes) largest = &c;
    }
    return largest ? largest->filterText : QString();
}

QString CheckpointTreeModel::defaultTensor() const {
    if (!checkpoint_ || checkpoint_->tensors().empty()) return {};
    for (const int top : nodes_[kRoot].children) {
        const Node& group = nodes_[static_cast<std::size_t>(top)];
        if (!group.label.startsWith(tr("Layer ")) || group.children.empty()) continue;
        const QString tensor = representativeTensor(createIndex(0, NameColumn, quintptr(group.children.front())));
        if (!tensor.isEmpty()) return tensor;
    }
    return QString::fromStdString(checkpoint_->tensors().front().info->name);
}

int CheckpointTreeModel::nodeOf(const QModelIndex& index) const {
    return index.isValid() ? static_cast<int>(index.internalId()) : kRoot;
}

QModelIndex CheckpointTreeModel::index(int row, int column, const QModelIndex& parent) const {
    const Node& p = nodes_[static_cast<std::size_t>(nodeOf(parent))];
    if (row < 0 || column < 0 || column >= ColumnCount || row >= static_cast<int>(p.children.size())) return {};
    return createIndex(row, column, quintptr(p.children[static_cast<std::size_t>(row)]));
}

QModelIndex CheckpointTreeModel::parent(const QModelIndex& child) const {
    const int id = nodeOf(child);
    if (id == kRoot) return {};
    const int parentId = nodes_[static_cast<std::size_t>(id)].parent;
    if (parentId == kRoot) return {};
    return createIndex(nodes_[static_cast<std::size_t>(parentId)].row, NameColumn, quintptr(parentId));
}

int CheckpointTreeModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid() && parent.column() != NameColumn) return 0;
    return static_cast<int>(nodes_[static_cast<std::size_t>(nodeOf(parent))].children.size());
}

int CheckpointTreeModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QString CheckpointTreeModel::storedTypes(const Node& node) {
    QStringList names;
    for (const auto& type : node.types) names << QString::fromStdString(type);
    return names.join(QStringLiteral(", "));
}

QVariant CheckpointTreeModel::displayData(const Node& node, int column) const {
    const io::TensorInfo* info =
        node.tensor >= 0 ? checkpoint_->tensors()[static_cast<std::size_t>(node.tensor)].info : nullptr;
    switch (column) {
        case NameColumn: return node.label;
        case DTypeColumn: return node.scheme.isEmpty() ? storedTypes(node) : node.schemeLabel;
        case ShapeColumn:
            if (!node.linearShape.empty()) return shapeText(node.linearShape);
            return info ? shapeText(info->shape) : tr("%n item(s)", nullptr, static_cast<int>(node.children.size()));
        case SizeColumn: return humanBytes(node.bytes);
        default: return {};
    }
}

QVariant CheckpointTreeModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || !checkpoint_) return {};
    const Node& node = nodes_[static_cast<std::size_t>(nodeOf(index))];
    switch (role) {
        case Qt::DisplayRole: return displayData(node, index.column());
        case Qt::ToolTipRole:  // the DType cell may be elided: its tooltip lists every type
            if (index.column() != DTypeColumn)
                return node.ggufName.isEmpty() ? node.filterText
                                               : tr("%1\nGGUF: %2").arg(node.filterText, node.ggufName);
            if (node.scheme.isEmpty()) return displayData(node, DTypeColumn);
            return tr("Quantized linear: %1, stored as %2").arg(node.scheme, storedTypes(node));
        case Qt::TextAlignmentRole:
            return index.column() == SizeColumn ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
        case TensorNameRole: return node.tensor >= 0 ? node.filterText : QString();
        case QuantSchemeRole: return node.scheme;
        case GgufNameRole: return node.ggufName;
        case GroupItemsRole:
            return node.tensor < 0 && node.linearShape.empty() ? QVariant(qlonglong(node.children.size())) : QVariant();
        case FilterTextRole: return node.filterText;
        case SortRole:
            switch (index.column()) {
                case NameColumn: return node.order;
                case ShapeColumn:
                    return node.tensor >= 0
                               ? QVariant(qlonglong(
                                     checkpoint_->tensors()[static_cast<std::size_t>(node.tensor)].info->numel()))
                               : QVariant(qlonglong(node.children.size()));
                case SizeColumn: return qulonglong(node.bytes);
                default: return displayData(node, index.column());
            }
        default: return {};
    }
}

QVariant CheckpointTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case NameColumn: return tr("Name");
        case DTypeColumn: return tr("DType");
        case ShapeColumn: return tr("Shape");
        case SizeColumn: return tr("Size");
        default: return {};
    }
}

}  // namespace qs::gui
