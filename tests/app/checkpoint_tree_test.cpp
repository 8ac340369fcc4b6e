#include <set>
#include <string>

#include <QStringList>
#include <QTreeView>

#include "checkpoint_filter_model.h"
#include "checkpoint_tree_model.h"
#include "checkpoint_tree_panel.h"
#include "main_window.h"
#include "qt_test_support.h"
#include "summary_panel.h"

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
    EXPECT_EQ(childLabels(model()), (QStringList{"Embeddings", "Layer 0", "Layer 1", "Layer 2", "Layer 3", "Layer 4", "Norms"}));
    const QModelIndex layer0 = model().index(1, 0);
    EXPECT_EQ(childLabels(model(), layer0),
              (QStringList{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
                           "mlp.up_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm"}));
    const QModelIndex downProj = model().index(6, 0, layer0);
    EXPECT_EQ(model().index(0, CheckpointTreeModel::ShapeColumn, downProj).data().toString(), "[64, 172]");
    EXPECT_EQ(model().index(0, CheckpointTreeModel::DTypeColumn, downProj).data().toString(), "F32");
    EXPECT_EQ(model().index(0, CheckpointTreeModel::SizeColumn, downProj).data(CheckpointTreeModel::SortRole).toULongLong(),
              64u * 172u * 4u);
    EXPECT_EQ(childLabels(model(), model().index(0, 0)), QStringList{"model.embed_tokens.weight"});
    EXPECT_EQ(childLabels(model(), model().index(6, 0)), QStringList{"model.norm.weight"});
}

TEST_F(CheckpointTreeTest, SubstringAndRegexFilters) {
    ASSERT_TRUE(proxy().setPattern(QStringLiteral("Q_PROJ"), false));   // case-insensitive
    QStringList leaves = leafNames(proxy());
    EXPECT_EQ(leaves.size(), 5);
    for (const QString& name : leaves) EXPECT_TRUE(name.contains(QStringLiteral("q_proj"))) << name.toStdString();

    ASSERT_TRUE(proxy().setPattern(QStringLiteral(R"(layers\.[01]\.mlp)"), true));
    EXPECT_EQ(leafNames(proxy()).size(), 6);

    // A matching group keeps all its children: the layer's path selects its whole subtree.
    ASSERT_TRUE(proxy().setPattern(QStringLiteral("model.layers.2"), false));
    EXPECT_EQ(leafNames(proxy()).size(), 9);

    EXPECT_FALSE(proxy().setPattern(QStringLiteral("(unclosed"), true));
    EXPECT_EQ(leafNames(proxy()).size(), 9);   // an invalid pattern leaves the filter as it was

    ASSERT_TRUE(proxy().setPattern(QString(), false));
    EXPECT_EQ(leafNames(proxy()).size(), 47);
}

TEST_F(CheckpointTreeTest, SortsBySizeNumerically) {
    proxy().sort(CheckpointTreeModel::SizeColumn, Qt::DescendingOrder);
    qulonglong previous = ~0ull;
    for (int row = 0; row < proxy().rowCount(); ++row) {
        const qulonglong bytes = proxy().index(row, CheckpointTreeModel::SizeColumn).data(CheckpointTreeModel::SortRole).toULongLong();
        EXPECT_LE(bytes, previous) << "row " << row;
        previous = bytes;
    }
    EXPECT_EQ(proxy().index(proxy().rowCount() - 1, 0).data().toString(), "Norms");
}

TEST_F(CheckpointTreeTest, SelectsTheFirstLinearAndShowsTheSummary) {
    EXPECT_EQ(window.currentTensor(), "model.layers.0.self_attn.q_proj.weight");
    EXPECT_EQ(window.summaryPanel()->text(QStringLiteral("Layers")), "5");
    EXPECT_TRUE(window.summaryPanel()->text(QStringLiteral("Architecture")).contains(QStringLiteral("LlamaForCausalLM")));
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
        EXPECT_TRUE(name.startsWith(QStringLiteral("model.vision_tower.")) || name.startsWith(QStringLiteral("model.multi_modal_projector.")))
            << name.toStdString();
    const QModelIndex layer0 = model.index(int(top.indexOf(QStringLiteral("Layer 0"))), 0);
    for (const QString& name : leafNames(model, layer0))
        EXPECT_TRUE(name.startsWith(QStringLiteral("model.language_model.layers.0."))) << name.toStdString();
    EXPECT_EQ(window.currentTensor(), "model.language_model.layers.0.self_attn.q_proj.weight");
}

}  // namespace
}  // namespace qs::gui::test
