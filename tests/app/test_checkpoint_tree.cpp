#include <set>
#include <string>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QSet>
#include <QStringList>
#include <QTreeView>

#include "models/checkpoint_filter_model.h"
#include "models/checkpoint_tree_model.h"
#include "panels/checkpoint_tree_panel.h"
#include "panels/summary_panel.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

QStringList leafNames(const QAbstractItemModel& model, const QModelIndex& parent = {}) {
    QStringList names;
    for (int row = 0; row < model.rowCount(parent); ++row) {
        const QModelIndex index = model.index(row, 0, parent);
        const QString tensor = model.data(index, CheckpointTreeModel::TensorNameRole).toString();
        if (!tensor.isEmpty()) {
            EXPECT_EQ(model.rowCount(index), 0) << tensor.toStdString();
            names << tensor;
        }
        names << leafNames(model, index);
    }
    return names;
}

QStringList childLabels(const QAbstractItemModel& model, const QModelIndex& parent = {}) {
    QStringList labels;
    for (int row = 0; row < model.rowCount(parent); ++row) labels << model.index(row, 0, parent).data().toString();
    return labels;
}

class CheckpointTreeTest : public QtAppTest {
protected:
    void SetUp() override { ASSERT_TRUE(window.openPath(kStories)); }
    CheckpointTreeModel& model() { return *window.treePanel()->model(); }
    CheckpointFilterModel& proxy() { return *window.treePanel()->proxy(); }

    MainWindow window{MainWindow::Settings::Ignore};
    // Before the checkpoint opens, so that its reset and every filter and sort below are checked.
    ModelChecker treeChecker{window.treePanel()->model()};
    ModelChecker proxyChecker{window.treePanel()->proxy()};
};

TEST_F(CheckpointTreeTest, HoldsEveryTensorExactlyOnce) {
    const QStringList leaves = leafNames(model());
    std::set<std::string> expected;
    for (const auto& t : window.checkpoint()->tensors()) expected.insert(t.info->name);
    std::set<std::string> got;
    for (const QString& name : leaves) got.insert(name.toStdString());
    EXPECT_EQ(leaves.size(), static_cast<qsizetype>(window.checkpoint()->tensors().size()));
    EXPECT_EQ(leaves.size(), 47);
    EXPECT_EQ(got, expected);
    EXPECT_EQ(model().tensorCount(), 47);
}

TEST_F(CheckpointTreeTest, GroupsLayersModulesEmbeddingsAndNorms) {
    EXPECT_EQ(childLabels(model()),
              (QStringList{"Embeddings", "Layer 0", "Layer 1", "Layer 2", "Layer 3", "Layer 4", "Norms"}));
    const QModelIndex layer0 = model().index(1, 0);
    EXPECT_EQ(
        childLabels(model(), layer0),
        (QStringList{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
                     "mlp.up_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm"}));
    const QModelIndex downProj = model().index(6, 0, layer0);
    EXPECT_EQ(model().index(0, CheckpointTreeModel::ShapeColumn, downProj).data().toString(), "[64, 172]");
    EXPECT_EQ(model().index(0, CheckpointTreeModel::DTypeColumn, downProj).data().toString(), "F32");
    EXPECT_EQ(
        model().index(0, CheckpointTreeModel::SizeColumn, downProj).data(CheckpointTreeModel::SortRole).toULongLong(),
        64u * 172u * 4u);
    EXPECT_EQ(childLabels(model(), model().index(0, 0)), QStringList{"model.embed_tokens.weight"});
    EXPECT_EQ(childLabels(model(), model().index(6, 0)), QStringList{"model.norm.weight"});
}

TEST_F(CheckpointTreeTest, SubstringAndRegexFilters) {
    ASSERT_TRUE(proxy().setPattern(QStringLiteral("Q_PROJ"), false));  // case-insensitive
    QStringList leaves = leafNames(proxy());
    EXPECT_EQ(leaves.size(), 5);
    for (const QString& name : leaves) EXPECT_TRUE(name.contains(QStringLiteral("q_proj"))) << name.toStdString();
    // A layer's item count is of what the filter shows; unfiltered it is all of them.
    const QModelIndex layer0 = proxy().index(0, 0);  // the embeddings are filtered out
    ASSERT_EQ(layer0.data().toString(), "Layer 0");
    EXPECT_EQ(layer0.siblingAtColumn(CheckpointTreeModel::ShapeColumn).data().toString(), "1 of 9 item(s)");

    ASSERT_TRUE(proxy().setPattern(QStringLiteral(R"(layers\.[01]\.mlp)"), true));
    EXPECT_EQ(leafNames(proxy()).size(), 6);

    // A matching group keeps all its children: the layer's path selects its whole subtree.
    ASSERT_TRUE(proxy().setPattern(QStringLiteral("model.layers.2"), false));
    EXPECT_EQ(leafNames(proxy()).size(), 9);

    EXPECT_FALSE(proxy().setPattern(QStringLiteral("(unclosed"), true));
    EXPECT_EQ(leafNames(proxy()).size(), 9);  // an invalid pattern leaves the filter as it was

    ASSERT_TRUE(proxy().setPattern(QString(), false));
    EXPECT_EQ(leafNames(proxy()).size(), 47);
    EXPECT_EQ(proxy().index(1, CheckpointTreeModel::ShapeColumn).data().toString(), "9 item(s)");
}

TEST_F(CheckpointTreeTest, SortsBySizeNumerically) {
    proxy().sort(CheckpointTreeModel::SizeColumn, Qt::DescendingOrder);
    qulonglong previous = ~0ull;
    for (int row = 0; row < proxy().rowCount(); ++row) {
        const qulonglong bytes =
            proxy().index(row, CheckpointTreeModel::SizeColumn).data(CheckpointTreeModel::SortRole).toULongLong();
        EXPECT_LE(bytes, previous) << "row " << row;
        previous = bytes;
    }
    EXPECT_EQ(proxy().index(proxy().rowCount() - 1, 0).data().toString(), "Norms");
}

TEST_F(CheckpointTreeTest, SelectsTheFirstLinearAndShowsTheSummary) {
    EXPECT_EQ(window.currentTensor(), "model.layers.0.self_attn.q_proj.weight");
    EXPECT_EQ(window.summaryPanel()->text(QStringLiteral("Layers")), "5");
    EXPECT_TRUE(
        window.summaryPanel()->text(QStringLiteral("Architecture")).contains(QStringLiteral("LlamaForCausalLM")));
    EXPECT_EQ(window.summaryPanel()->text(QStringLiteral("Tensors")), "47");
}

TEST_F(CheckpointTreeTest, SelectingAModuleSelectsItsWeight) {
    const QModelIndex layer3 = proxy().index(4, 0);
    ASSERT_EQ(layer3.data().toString(), "Layer 3");
    const QModelIndex upProj = proxy().index(5, 0, layer3);
    ASSERT_EQ(upProj.data().toString(), "mlp.up_proj");
    window.treePanel()->view()->setCurrentIndex(upProj);
    EXPECT_EQ(window.currentTensor(), "model.layers.3.mlp.up_proj.weight");
}

// A vision-language model's vision tower has layers, q_proj's and norms of its own: they are one
// group of their own, never mixed into the decoder's layers (whose first linear stays the default).
class CheckpointTreeVlmTest : public QtAppTest {};

TEST_F(CheckpointTreeVlmTest, TheVisionTowerIsAGroupOfItsOwn) {
    MainWindow window{MainWindow::Settings::Ignore};
    ASSERT_TRUE(window.openPath(QStringLiteral(QS_TEST_DATA_DIR "/gemma3/gemma3-vlm-tiny")));
    const CheckpointTreeModel& model = *window.treePanel()->model();
    const QStringList top = childLabels(model);
    ASSERT_TRUE(top.contains(QStringLiteral("Vision / audio tower"))) << top.join(", ").toStdString();
    const QModelIndex tower = model.index(int(top.indexOf(QStringLiteral("Vision / audio tower"))), 0);
    const QStringList towerTensors = leafNames(model, tower);
    EXPECT_EQ(towerTensors.size(), 17);
    for (const QString& name : towerTensors)
        EXPECT_TRUE(name.startsWith(QStringLiteral("model.vision_tower.")) ||
                    name.startsWith(QStringLiteral("model.multi_modal_projector.")))
            << name.toStdString();
    const QModelIndex layer0 = model.index(int(top.indexOf(QStringLiteral("Layer 0"))), 0);
    for (const QString& name : leafNames(model, layer0))
        EXPECT_TRUE(name.startsWith(QStringLiteral("model.language_model.layers.0."))) << name.toStdString();
    EXPECT_EQ(window.currentTensor(), "model.language_model.layers.0.self_attn.q_proj.weight");
}

const QString kQwen3Moe = QStringLiteral(QS_TEST_DATA_DIR "/moe/qwen3-moe-tiny");
const QString kMixtral = QStringLiteral(QS_TEST_DATA_DIR "/moe/mixtral-tiny");
const QString kGptOss = QStringLiteral(QS_TEST_DATA_DIR "/gptoss/gptoss-tiny");

QJsonObject configOf(const QString& folder) {
    QFile file(folder + QStringLiteral("/config.json"));
    EXPECT_TRUE(file.open(QIODevice::ReadOnly)) << folder.toStdString();
    return QJsonDocument::fromJson(file.readAll()).object();
}

QModelIndex childLabelled(const QAbstractItemModel& model, const QModelIndex& parent, const QString& label) {
    for (int row = 0; row < model.rowCount(parent); ++row)
        if (model.index(row, 0, parent).data().toString() == label) return model.index(row, 0, parent);
    return {};
}

// A mixture of experts: each layer's experts in one node, each expert a child (Qwen3-MoE, Mixtral), or
// the stacked tensors that hold them all (gpt-oss); counted against the checkpoints' own config.json.
class MoeTreeTest : public QtAppTest {
protected:
    CheckpointTreeModel& model() { return *window.treePanel()->model(); }
    CheckpointFilterModel& proxy() { return *window.treePanel()->proxy(); }

    MainWindow window{MainWindow::Settings::Ignore};
    ModelChecker treeChecker{window.treePanel()->model()};
    ModelChecker proxyChecker{window.treePanel()->proxy()};
};

// Each layer of the tiny Qwen3-MoE: attention, the router where it was, and one "experts (4)" node
// whose children are the experts 0..3, each with its gate, up and down projection's weight.
TEST_F(MoeTreeTest, Qwen3MoeExpertsAreOneNodePerLayer) {
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    const QJsonObject config = configOf(kQwen3Moe);
    const int experts = config.value(QStringLiteral("num_experts")).toInt();
    const int layers = config.value(QStringLiteral("num_hidden_layers")).toInt();
    ASSERT_EQ(experts, 4);
    const QString groupLabel = QStringLiteral("experts (%1)").arg(experts);
    for (int layer = 0; layer < layers; ++layer) {
        const QModelIndex layerNode = childLabelled(model(), {}, QStringLiteral("Layer %1").arg(layer));
        ASSERT_TRUE(layerNode.isValid()) << layer;
        const QStringList modules = childLabels(model(), layerNode);
        EXPECT_EQ(modules, (QStringList{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                        groupLabel, "input_layernorm", "post_attention_layernorm", "self_attn.q_norm",
                                        "self_attn.k_norm", "mlp.gate"}))
            << modules.join(", ").toStdString();
        const QModelIndex group = childLabelled(model(), layerNode, groupLabel);
        ASSERT_TRUE(group.isValid());
        EXPECT_EQ(model().rowCount(group), experts);
        EXPECT_EQ(group.data(CheckpointTreeModel::FilterTextRole).toString(),
                  QStringLiteral("model.layers.%1.mlp.experts").arg(layer));
        for (int e = 0; e < experts; ++e) {
            const QModelIndex expert = model().index(e, 0, group);
            EXPECT_EQ(expert.data().toString(), QStringLiteral("expert %1").arg(e));
            EXPECT_EQ(childLabels(model(), expert), (QStringList{"gate_proj", "up_proj", "down_proj"}));
            QStringList expected;
            for (const char* linear : {"gate_proj", "up_proj", "down_proj"})
                expected << QStringLiteral("model.layers.%1.mlp.experts.%2.%3.weight")
                                .arg(layer)
                                .arg(e)
                                .arg(QLatin1String(linear));
            EXPECT_EQ(leafNames(model(), expert), expected);
        }
    }
    // Nothing lost or doubled by the grouping.
    const QStringList leaves = leafNames(model());
    EXPECT_EQ(leaves.size(), static_cast<qsizetype>(window.checkpoint()->tensors().size()));
    EXPECT_EQ(QSet<QString>(leaves.begin(), leaves.end()).size(), leaves.size());
}

TEST_F(MoeTreeTest, AnExpertTensorIsSelectedByNameEvenWhenFilteredOut) {
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    const QString name = QStringLiteral("model.layers.1.mlp.experts.3.down_proj.weight");
    auto* filter = window.treePanel()->findChild<QLineEdit*>();
    ASSERT_NE(filter, nullptr);
    filter->setText(QStringLiteral("q_proj"));  // as typed: hides every expert
    ASSERT_FALSE(proxy().mapFromSource(model().indexOfTensor(name)).isValid());
    window.selectTensor(name);
    EXPECT_TRUE(filter->text().isEmpty());
    EXPECT_EQ(window.currentTensor(), name);
    const QModelIndex current = window.treePanel()->view()->currentIndex();
    EXPECT_EQ(current.data(CheckpointTreeModel::TensorNameRole).toString(), name);
    // Its place: weight ← down_proj ← expert 3 ← experts (4) ← Layer 1.
    QStringList path;
    for (QModelIndex i = current; i.isValid(); i = i.parent()) path.prepend(i.data().toString());
    EXPECT_EQ(path, (QStringList{"Layer 1", "experts (4)", "expert 3", "down_proj", "weight"}));

    // Selecting a module of an expert selects its weight, as for any module.
    const QModelIndex upProj = current.parent().parent().model()->index(1, 0, current.parent().parent());
    ASSERT_EQ(upProj.data().toString(), "up_proj");
    window.treePanel()->view()->setCurrentIndex(upProj);
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.1.mlp.experts.3.up_proj.weight"));
}

TEST_F(MoeTreeTest, TheFilterFindsExpertTensorsAndWholeExperts) {
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    ASSERT_TRUE(proxy().setPattern(QStringLiteral("experts.2.up_proj"), false));
    EXPECT_EQ(leafNames(proxy()), (QStringList{"model.layers.0.mlp.experts.2.up_proj.weight",
                                               "model.layers.1.mlp.experts.2.up_proj.weight"}));
    // A matching expert keeps its linears; the experts node of a layer keeps every expert.
    ASSERT_TRUE(proxy().setPattern(QStringLiteral(R"(layers\.1\.mlp\.experts\.0$)"), true));
    EXPECT_EQ(leafNames(proxy()).size(), 3);
    ASSERT_TRUE(proxy().setPattern(QStringLiteral("model.layers.0.mlp.experts"), false));
    EXPECT_EQ(leafNames(proxy()).size(), 12);
    // The router is no expert: it stays a module of its layer, found as before.
    ASSERT_TRUE(proxy().setPattern(QStringLiteral("mlp.gate.weight"), false));
    EXPECT_EQ(leafNames(proxy()), (QStringList{"model.layers.0.mlp.gate.weight", "model.layers.1.mlp.gate.weight"}));
}

TEST_F(MoeTreeTest, MixtralExpertsAreGroupedUnderTheSparseBlock) {
    ASSERT_TRUE(window.openPath(kMixtral));
    const int experts = configOf(kMixtral).value(QStringLiteral("num_local_experts")).toInt();
    ASSERT_GT(experts, 1);
    const QModelIndex layer0 = childLabelled(model(), {}, QStringLiteral("Layer 0"));
    const QModelIndex group = childLabelled(model(), layer0, QStringLiteral("experts (%1)").arg(experts));
    ASSERT_TRUE(group.isValid()) << childLabels(model(), layer0).join(", ").toStdString();
    EXPECT_EQ(model().rowCount(group), experts);
    EXPECT_EQ(childLabels(model(), model().index(experts - 1, 0, group)), (QStringList{"w1", "w3", "w2"}));
    EXPECT_EQ(leafNames(model(), model().index(0, 0, group)).front(),
              QStringLiteral("model.layers.0.block_sparse_moe.experts.0.w1.weight"));
    EXPECT_TRUE(childLabelled(model(), layer0, QStringLiteral("block_sparse_moe.gate")).isValid());  // the router stays
}

// gpt-oss stacks every expert in one tensor: the experts node holds those tensors, counted by their
// first dimension; the router stays where it was.
TEST_F(MoeTreeTest, GptOssStackedExpertsAreOneNodeCountedByTheirFirstDimension) {
    ASSERT_TRUE(window.openPath(kGptOss));
    const int experts = configOf(kGptOss).value(QStringLiteral("num_local_experts")).toInt();
    const QModelIndex layer0 = childLabelled(model(), {}, QStringLiteral("Layer 0"));
    const QModelIndex group = childLabelled(model(), layer0, QStringLiteral("experts (%1, stacked)").arg(experts));
    ASSERT_TRUE(group.isValid()) << childLabels(model(), layer0).join(", ").toStdString();
    EXPECT_EQ(childLabels(model(), group),
              (QStringList{"down_proj", "down_proj_bias", "gate_up_proj", "gate_up_proj_bias"}));
    EXPECT_EQ(leafNames(model(), group).front(), QStringLiteral("model.layers.0.mlp.experts.down_proj"));
    EXPECT_TRUE(childLabelled(model(), layer0, QStringLiteral("mlp.router")).isValid());
    window.selectTensor(QStringLiteral("model.layers.2.mlp.experts.gate_up_proj"));
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.2.mlp.experts.gate_up_proj"));
    const QStringList leaves = leafNames(model());
    EXPECT_EQ(leaves.size(), static_cast<qsizetype>(window.checkpoint()->tensors().size()));
}

}  // namespace
}  // namespace qs::gui::test
