// The GGUF tab on the demo's Q4_K_M file as `quantscope-cli quantize --method q4_k_m` writes it: the
// metadata table says what the file's header says, the tensor table has one row per tensor of the file
// with the bytes its ggml type takes, the map's cells have the file's types, selecting a row or a cell
// selects that tensor in the tree (and back), the tree shows the GGUF names, the summary's bits per
// weight is the CLI's, and --select takes either name. A safetensors checkpoint has no GGUF tab.
#include <functional>

#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>

#include "qs/io/checkpoint.h"
#include "qs/io/ggml_type.h"
#include "qs/io/gguf_names.h"
#include "qs/io/llama_ftype.h"

#include "models/checkpoint_filter_model.h"
#include "models/checkpoint_tree_model.h"
#include "models/gguf_metadata_model.h"
#include "models/gguf_tensor_model.h"
#include "pages/gguf_page.h"
#include "panels/checkpoint_tree_panel.h"
#include "panels/summary_panel.h"
#include "plots/gguf_type_map.h"
#include "qt_test_support.h"
#include "quantized_demo.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class GgufPageTest : public QtAppTest {
protected:
    void SetUp() override {
        path = quantizedDemo(QStringLiteral("q4_k_m"));
        ASSERT_FALSE(path.isEmpty());
        file = std::make_unique<io::GgufFile>(io::GgufFile::open(path.toStdString()));
        window.resize(1400, 900);
        window.show();
        ASSERT_TRUE(window.openPath(path));
    }
    GgufPage& page() { return *window.ggufPage(); }
    QString cell(const QAbstractItemModel& model, int row, int column, int role = Qt::DisplayRole) {
        return model.data(model.index(row, column), role).toString();
    }

    QString path;
    std::unique_ptr<io::GgufFile> file;
    MainWindow window{MainWindow::Settings::Ignore};
};

// `inspect`'s "4.80 bits per weight of the decoder's linears, 4.91 over every tensor", as two strings.
std::pair<QString, QString> cliBitsPerWeight(const QString& path) {
    QProcess cli;
    cli.start(QStringLiteral(QS_CLI_EXE), {QStringLiteral("inspect"), path});
    if (!cli.waitForFinished(60000) || cli.exitCode() != 0) return {};
    const QString out = QString::fromUtf8(cli.readAllStandardOutput());
    const QRegularExpression line(
        QStringLiteral(R"(([0-9.]+) bits per weight of the decoder's linears, ([0-9.]+) over every tensor)"));
    const QRegularExpressionMatch m = line.match(out);
    return m.hasMatch() ? std::pair{m.captured(1), m.captured(2)} : std::pair<QString, QString>{};
}

// Bits per weight by brute force from the file alone: every matrix of a decoder block ("blk.N.*", two
// dimensions: the linears) and every tensor, 8 × bytes / elements.
std::pair<double, double> bitsFromTheFile(const io::GgufFile& file) {
    double linearBytes = 0, linearElements = 0, allBytes = 0, allElements = 0;
    for (const io::TensorInfo& t : file.tensors()) {
        allBytes += double(t.byteSize());
        allElements += double(t.numel());
        if (t.name.starts_with("blk.") && t.shape.size() == 2) {
            linearBytes += double(t.byteSize());
            linearElements += double(t.numel());
        }
    }
    return {8 * linearBytes / linearElements, 8 * allBytes / allElements};
}

TEST_F(GgufPageTest, TheTabIsShownForAGgufOnly) {
    QTabWidget* tabs =
        page().parentWidget() ? qobject_cast<QTabWidget*>(page().parentWidget()->parentWidget()) : nullptr;
    ASSERT_NE(tabs, nullptr);
    EXPECT_TRUE(tabs->isTabVisible(tabs->indexOf(&page())));
    ASSERT_TRUE(window.showPage(QStringLiteral("gguf")));
    EXPECT_EQ(window.currentPage(), &page());
    ASSERT_TRUE(window.openPath(kDemo));  // safetensors
    EXPECT_FALSE(tabs->isTabVisible(tabs->indexOf(&page())));
    EXPECT_FALSE(page().hasGguf());
    EXPECT_EQ(page().metadata()->rowCount(), 0);
    EXPECT_EQ(page().tensors()->rowCount(), 0);
    EXPECT_TRUE(page().typeMap()->grid().empty());
}

TEST_F(GgufPageTest, TheMetadataTableSaysWhatTheFileSays) {
    ModelChecker checker(page().metadata());
    const GgufMetadataModel& m = *page().metadata();
    EXPECT_EQ(m.value(QStringLiteral("GGUF version")), QString::number(file->header().version));
    const auto fileType = file->metadata().integer("general.file_type");
    ASSERT_TRUE(fileType.has_value());
    EXPECT_EQ(m.value(QStringLiteral("File type")), QString::fromStdString(io::llamaFtypeName(*fileType)));
    EXPECT_EQ(m.value(QStringLiteral("File type")), QStringLiteral("Q4_K_M"));
    EXPECT_TRUE(m.value(QStringLiteral("Alignment")).startsWith(QString::number(file->header().alignment) + ' '));
    EXPECT_EQ(m.value(QStringLiteral("Tensors")), QString::number(file->tensors().size()));
    // Every key, in file order after the header's five rows; scalars as the file has them.
    ASSERT_EQ(std::size_t(m.rowCount()), 5 + file->metadata().size());
    int row = 5;
    for (const auto& [key, value] : file->metadata().entries()) {
        EXPECT_EQ(m.data(m.index(row, GgufMetadataModel::KeyColumn)).toString(), QString::fromStdString(key));
        const QString shown = m.data(m.index(row++, GgufMetadataModel::ValueColumn)).toString();
        const io::GgufArray* array = value.asArray();
        if (!array) {
            EXPECT_EQ(shown, QString::fromStdString(value.summary())) << key;
            continue;
        }
        // An array: its type, length and first few values, never the whole vocabulary.
        EXPECT_TRUE(shown.startsWith(QStringLiteral("[array of %1 %2]")
                                         .arg(array->items.size())
                                         .arg(QString::fromStdString(io::ggufValueTypeName(array->elementType)))))
            << key << ": " << shown.toStdString();
        for (std::size_t i = 0; i < array->items.size() && i < GgufMetadataModel::kArrayValuesShown; ++i)
            EXPECT_TRUE(shown.contains(QString::fromStdString(array->items[i].summary()))) << key;
        EXPECT_LT(shown.size(), 300) << key;
    }
    EXPECT_EQ(m.value(QStringLiteral("tokenizer.ggml.model")),
              QString::fromStdString(*file->metadata().string("tokenizer.ggml.model")));
    EXPECT_EQ(m.value(QStringLiteral("tokenizer.ggml.pre")),
              QString::fromStdString(*file->metadata().string("tokenizer.ggml.pre")));
    const QString tokens = m.value(QStringLiteral("tokenizer.ggml.tokens"));
    const auto* vocabulary = file->metadata().array("tokenizer.ggml.tokens");
    ASSERT_NE(vocabulary, nullptr);
    ASSERT_GT(vocabulary->items.size(), 100u);
    EXPECT_TRUE(tokens.endsWith(QStringLiteral(", …"))) << tokens.toStdString();
}

TEST_F(GgufPageTest, BitsPerWeightAreTheClisEverywhere) {
    const auto [linears, all] = cliBitsPerWeight(path);
    ASSERT_FALSE(linears.isEmpty());
    EXPECT_EQ(linears, QStringLiteral("4.80"));  // docs/user-guide.md's figures for this file
    EXPECT_EQ(all, QStringLiteral("4.91"));
    const auto [bruteLinears, bruteAll] = bitsFromTheFile(*file);
    EXPECT_EQ(QString::number(bruteLinears, 'f', 2), linears);
    EXPECT_EQ(QString::number(bruteAll, 'f', 2), all);
    const QString expected = QStringLiteral("%1 (decoder linears) · %2 (all tensors)").arg(linears, all);
    EXPECT_EQ(window.summaryPanel()->text(QStringLiteral("Bits per weight")), expected);
    EXPECT_EQ(page().metadata()->value(QStringLiteral("Bits per weight")), expected);
    // A safetensors checkpoint has no such row.
    ASSERT_TRUE(window.openPath(kDemo));
    EXPECT_EQ(window.summaryPanel()->text(QStringLiteral("Bits per weight")), QStringLiteral("–"));
}

TEST_F(GgufPageTest, TheTensorTableHasEveryTensorOfTheFile) {
    ModelChecker checker(page().tensors());
    const GgufTensorModel& m = *page().tensors();
    ASSERT_EQ(std::size_t(m.rowCount()), file->tensors().size());
    const io::Checkpoint checkpoint = io::Checkpoint::open(path.toStdString());
    for (int row = 0; row < m.rowCount(); ++row) {
        const io::TensorInfo& t = file->tensors()[std::size_t(row)];
        EXPECT_EQ(cell(m, row, GgufTensorModel::GgufNameColumn), QString::fromStdString(t.name));
        ASSERT_TRUE(t.ggmlType.has_value());
        EXPECT_EQ(cell(m, row, GgufTensorModel::TypeColumn), QString::fromUtf8(io::ggmlTypeTraits(*t.ggmlType).name));
        // The bytes its type takes: ggml rows of the innermost dimension, times the rows.
        std::uint64_t rows = 1;
        for (std::size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= std::uint64_t(t.shape[d]);
        const std::uint64_t bytes = io::ggmlRowBytes(*t.ggmlType, t.shape.back()) * rows;
        EXPECT_EQ(m.data(m.index(row, GgufTensorModel::BytesColumn), GgufTensorModel::SortRole).toULongLong(), bytes)
            << t.name;
        EXPECT_NEAR(m.data(m.index(row, GgufTensorModel::BitsColumn), GgufTensorModel::SortRole).toDouble(),
                    8.0 * double(bytes) / double(t.numel()), 1e-12);
        // The Hugging Face name is llama.cpp's mapping of the GGUF name, and a tensor of the checkpoint.
        const QString hf = cell(m, row, GgufTensorModel::HfNameColumn, GgufTensorModel::TensorNameRole);
        EXPECT_NE(checkpoint.find(hf.toStdString()), nullptr) << t.name;
        if (const auto mapped = io::hfNameOfGgufTensor(t.name)) {
            EXPECT_EQ(hf.toStdString(), *mapped);
        }
    }
}

TEST_F(GgufPageTest, TheTensorTableSortsAndSelectsInTheTree) {
    QSortFilterProxyModel& sorted = *page().sortedTensors();
    page().tensorView()->sortByColumn(GgufTensorModel::BytesColumn, Qt::DescendingOrder);
    std::uint64_t largest = 0;
    for (const io::TensorInfo& t : file->tensors()) largest = std::max(largest, t.byteSize());
    EXPECT_EQ(sorted.index(0, GgufTensorModel::BytesColumn).data(GgufTensorModel::SortRole).toULongLong(), largest);
    for (int row = 1; row < sorted.rowCount(); ++row)
        EXPECT_GE(sorted.index(row - 1, GgufTensorModel::BytesColumn).data(GgufTensorModel::SortRole).toULongLong(),
                  sorted.index(row, GgufTensorModel::BytesColumn).data(GgufTensorModel::SortRole).toULongLong());

    const int row = page().tensors()->rowOfTensor(QStringLiteral("blk.1.ffn_down.weight"));
    ASSERT_GE(row, 0);
    page().tensorView()->setCurrentIndex(sorted.mapFromSource(page().tensors()->index(row, 0)));
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.1.mlp.down_proj.weight"));
    // And back: a tensor chosen in the tree selects its row here.
    window.selectTensor(QStringLiteral("model.layers.0.self_attn.k_proj.weight"));
    const QModelIndex current = sorted.mapToSource(page().tensorView()->currentIndex());
    EXPECT_EQ(cell(*page().tensors(), current.row(), GgufTensorModel::GgufNameColumn),
              QStringLiteral("blk.0.attn_k.weight"));
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.self_attn.k_proj.weight"));
}

TEST_F(GgufPageTest, TheMapsCellsHaveTheFilesTypes) {
    window.showPage(QStringLiteral("gguf"));
    const GgufTypeGrid& grid = page().typeMap()->grid();
    ASSERT_EQ(grid.layers(), 2);
    const std::vector<std::string> kinds{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    ASSERT_EQ(grid.kinds(), int(kinds.size()));
    int q6 = 0;
    for (int layer = 0; layer < grid.layers(); ++layer)
        for (int k = 0; k < grid.kinds(); ++k) {
            EXPECT_EQ(grid.kind(k), kinds[std::size_t(k)]);
            const std::string name = "blk." + std::to_string(layer) + "." + kinds[std::size_t(k)] + ".weight";
            const io::TensorInfo* t = file->find(name);
            ASSERT_NE(t, nullptr) << name;
            const GgufTypeCell* c = grid.cell(layer, k);
            ASSERT_NE(c, nullptr) << name;
            const io::GgmlTypeTraits& traits = io::ggmlTypeTraits(*t->ggmlType);
            EXPECT_EQ(c->type, traits.name) << name;
            EXPECT_EQ(page().typeMap()->cellValue(layer, k), traits.bitsPerWeight()) << name;
            q6 += c->type == "q6_K";
        }
    EXPECT_EQ(q6, 2);  // Q4_K_M: layer 1's attn_v and ffn_down (of two layers), as docs/user-guide.md says
    EXPECT_EQ(grid.cell(1, 2)->type, "q6_K");
    EXPECT_EQ(grid.cell(0, 2)->type, "q4_K");
    EXPECT_EQ(grid.cell(2, 0), nullptr);  // no third layer
    EXPECT_TRUE(waitUntil([&] { return page().typeMap()->labelsShown() == 14; }))
        << page().typeMap()->labelsShown() << " type labels drawn of 14";
    // Squeezed below a label's size, the cells keep their colours and lose their labels rather than overlap them.
    page().typeMap()->setMinimumSize(0, 0);
    page().typeMap()->resize(120, 60);
    page().typeMap()->replot();
    EXPECT_EQ(page().typeMap()->labelsShown(), 0);

    // A click on a cell (plot coordinates: kind, layer) selects its tensor.
    emit page().typeMap()->clicked(6.1, 0.9);
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.1.mlp.down_proj.weight"));
    emit page().typeMap()->clicked(2.0, 0.0);
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.self_attn.v_proj.weight"));
    emit page().typeMap()->clicked(9.0, 0.0);  // outside the map: nothing changes
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.self_attn.v_proj.weight"));
}

TEST_F(GgufPageTest, TheTreeShowsTheGgufNames) {
    CheckpointTreeModel* tree = window.treePanel()->model();
    const QModelIndex leaf = tree->indexOfTensor(QStringLiteral("model.layers.0.self_attn.q_proj.weight"));
    ASSERT_TRUE(leaf.isValid());
    EXPECT_EQ(leaf.data(CheckpointTreeModel::GgufNameRole).toString(), QStringLiteral("blk.0.attn_q.weight"));
    EXPECT_TRUE(leaf.data(Qt::ToolTipRole).toString().contains(QStringLiteral("blk.0.attn_q.weight")));
    EXPECT_EQ(leaf.parent().data().toString(), QStringLiteral("q_proj · attn_q"));
    const QModelIndex embeddings = tree->indexOfTensor(QStringLiteral("model.embed_tokens.weight"));
    EXPECT_EQ(embeddings.data(CheckpointTreeModel::GgufNameRole).toString(), QStringLiteral("token_embd.weight"));
    // Every leaf has the GGUF name it is read from.
    for (const io::TensorInfo& t : file->tensors()) {
        const auto hf = io::hfNameOfGgufTensor(t.name);
        if (!hf) continue;
        EXPECT_EQ(tree->indexOfTensor(QString::fromStdString(*hf)).data(CheckpointTreeModel::GgufNameRole).toString(),
                  QString::fromStdString(t.name));
    }
    // The filter finds tensors by their GGUF names too.
    const auto leavesMatching = [tree](const QString& pattern) {
        CheckpointFilterModel filter;
        filter.setSourceModel(tree);
        EXPECT_TRUE(filter.setPattern(pattern, false));
        QStringList leaves;
        std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
            for (int row = 0; row < filter.rowCount(parent); ++row) {
                const QModelIndex index = filter.index(row, 0, parent);
                if (const QString name = index.data(CheckpointTreeModel::TensorNameRole).toString(); !name.isEmpty())
                    leaves << name;
                walk(index);
            }
        };
        walk({});
        return leaves;
    };
    EXPECT_EQ(leavesMatching(QStringLiteral("blk.1.attn_v.")),
              QStringList{QStringLiteral("model.layers.1.self_attn.v_proj.weight")});
    EXPECT_EQ(leavesMatching(QStringLiteral("ffn_down")).size(), 2);
    // A safetensors checkpoint: Hugging Face names alone.
    ASSERT_TRUE(window.openPath(kDemo));
    EXPECT_TRUE(leavesMatching(QStringLiteral("ffn_down")).isEmpty());
    const QModelIndex dense = tree->indexOfTensor(QStringLiteral("model.layers.0.self_attn.q_proj.weight"));
    ASSERT_TRUE(dense.isValid());
    EXPECT_TRUE(dense.data(CheckpointTreeModel::GgufNameRole).toString().isEmpty());
    EXPECT_EQ(dense.parent().data().toString(), QStringLiteral("self_attn.q_proj"));
}

TEST_F(GgufPageTest, SelectTakesAGgufOrAHuggingFaceName) {
    EXPECT_TRUE(window.selectTensorNamed(QStringLiteral("blk.1.attn_v.weight")));
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.1.self_attn.v_proj.weight"));
    EXPECT_TRUE(window.selectTensorNamed(QStringLiteral("model.layers.0.mlp.up_proj.weight")));
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.mlp.up_proj.weight"));
    EXPECT_FALSE(window.selectTensorNamed(QStringLiteral("blk.7.attn_v.weight")));
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.mlp.up_proj.weight"));  // unchanged
    // A GGUF name means nothing in a safetensors checkpoint.
    ASSERT_TRUE(window.openPath(kDemo));
    EXPECT_FALSE(window.selectTensorNamed(QStringLiteral("blk.0.attn_q.weight")));
    EXPECT_TRUE(window.selectTensorNamed(QStringLiteral("model.layers.0.self_attn.q_proj.weight")));
}

// Pixels of the heat gradient's top (yellow): the map's cells of the file's highest bits per weight.
int yellowPixels(const QImage& image) {
    int count = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const QColor c = image.pixelColor(x, y);
            count += c.red() > 245 && c.green() > 245 && c.blue() < 60;
        }
    return count;
}

TEST_F(GgufPageTest, SelectOnTheCommandLine) {
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("s.png"));
    const auto run = [&](const QString& name) {
        QProcess process;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        process.setProcessEnvironment(env);
        process.start(QStringLiteral(QS_QUANTSCOPE_EXE),
                      {QStringLiteral("--screenshot"), png, QStringLiteral("--size"), QStringLiteral("1366x768"),
                       QStringLiteral("--tab"), QStringLiteral("gguf"), QStringLiteral("--select"), name, path});
        process.waitForFinished(120000);
        return std::pair{process.exitCode(), QString::fromUtf8(process.readAllStandardError())};
    };
    const auto [ok, okErrors] = run(QStringLiteral("blk.1.attn_v.weight"));
    EXPECT_EQ(ok, 0) << okErrors.toStdString();
    const QImage image(png);
    EXPECT_EQ(image.size(), QSize(1366, 768));
    // The tab is in front at a laptop's size, its map drawn: layer 1's two q6_K cells are the yellow ones.
    EXPECT_GT(yellowPixels(image), 1500);
    QFile::remove(png);
    const auto [unknown, message] = run(QStringLiteral("blk.9.attn_v.weight"));
    EXPECT_EQ(unknown, 2);
    EXPECT_TRUE(message.contains(QStringLiteral("--select: no tensor named 'blk.9.attn_v.weight'")))
        << message.toStdString();
    EXPECT_EQ(message.count(QStringLiteral("--select")), 1) << message.toStdString();
}

}  // namespace
}  // namespace qs::gui::test
