// The window on a laptop screen (1366x768) and on a full-HD one: it fits, its docks do not paint over
// each other and Start stays in view; the checkpoint tree keeps its names readable.
#include <map>
#include <optional>

#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QHeaderView>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QToolButton>
#include <QTreeView>

#include "jobs/quantize_job.h"
#include "models/checkpoint_tree_model.h"
#include "models/results_table_model.h"
#include "pages/channels_page.h"
#include "pages/histogram_page.h"
#include "pages/mixed_precision_page.h"
#include "pages/results_page.h"
#include "panels/checkpoint_tree_panel.h"
#include "panels/quantize_panel.h"
#include "plots/kl_per_layer_plot.h"
#include "plots/mixed_allocation_map.h"
#include "plots/output_error_plot.h"
#include "plots/plot_view.h"
#include "plots/serving_scales_plot.h"
#include "qt_test_support.h"
#include "quantized_demo.h"
#include "sensitivity_tables.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class WindowLayoutTest : public QtAppTest {
protected:
    // Shows the window at `size` and lets the layout settle.
    void showAt(const QSize& size) {
        window.resize(size);
        window.show();
        waitUntil([] { return false; }, 200);
    }

    MainWindow window{MainWindow::Settings::Ignore};
};

// Whether `widget` is shown whole: no part of it cut off by a parent (a scroll area, a dock, the window).
bool shownWhole(const QWidget* widget) {
    return widget->isVisible() && widget->visibleRegion().boundingRect() == widget->rect();
}

TEST_F(WindowLayoutTest, TheMinimumSizeFitsALaptopScreen) {
    const QSize minimum = window.minimumSizeHint().expandedTo(window.minimumSize());
    EXPECT_LE(minimum.width(), 1366);
    EXPECT_LE(minimum.height(), 768 - 48);  // a taskbar and the title bar take some of the 768
    showAt({1366, 768 - 48});
    EXPECT_EQ(window.size(), QSize(1366, 768 - 48));
}

TEST_F(WindowLayoutTest, StartIsInViewAtLaptopAndFullHdSizes) {
    ASSERT_TRUE(window.openPath(kDemo));
    for (const QSize size : {QSize(1366, 720), QSize(1920, 1080)}) {
        showAt(size);
        const QPushButton* start = window.quantizePanel()->startButton();
        EXPECT_TRUE(shownWhole(start)) << size.width() << "x" << size.height() << ": Start is clipped to "
                                       << start->visibleRegion().boundingRect().height() << " of " << start->height()
                                       << " pixels";
        EXPECT_TRUE(start->isEnabled());
    }
}

TEST_F(WindowLayoutTest, TheModuleLogShowsSeveralRowsOnALaptop) {
    showAt({1366, 720});
    const auto* log = window.findChild<QTableView*>(QStringLiteral("moduleLogView"));
    ASSERT_NE(log, nullptr);
    const int rowHeight = log->verticalHeader()->defaultSectionSize();
    EXPECT_GE(log->viewport()->height(), 5 * rowHeight)
        << "the log shows " << log->viewport()->height() / rowHeight << " rows";
}

// A layer of an NVFP4 checkpoint holds four element types; the DType column listing them all took
// the Name column down to two or three characters.
TEST_F(WindowLayoutTest, TheTreeKeepsNamesReadableForQuantizedCheckpoints) {
    const QString nvfp4 = quantizedDemo(QStringLiteral("nvfp4"));
    ASSERT_FALSE(nvfp4.isEmpty());
    showAt({1366, 720});
    ASSERT_TRUE(window.openPath(nvfp4));
    waitUntil([] { return false; }, 100);
    const QTreeView* view = window.treePanel()->view();
    const QHeaderView* header = view->header();
    const int name = header->sectionSize(CheckpointTreeModel::NameColumn);
    const int dtype = header->sectionSize(CheckpointTreeModel::DTypeColumn);
    EXPECT_GE(name, view->fontMetrics().horizontalAdvance(QStringLiteral("self_attn.q"))) << name << " pixels";
    EXPECT_GE(name, dtype);
    // The elided DType cell still tells every type, in its tooltip.
    const QModelIndex layer0 = window.treePanel()->model()->index(1, CheckpointTreeModel::DTypeColumn);
    EXPECT_EQ(layer0.data(Qt::ToolTipRole).toString().count(QLatin1Char(',')), 3)
        << layer0.data(Qt::ToolTipRole).toString().toStdString();
}

// The Outlier channels table scrolled sideways at 1366 pixels and hid its "× median" column.
TEST_F(WindowLayoutTest, TheChannelsTableShowsEveryColumnOnALaptop) {
    ASSERT_TRUE(window.openPath(kDemo));
    for (const QSize size : {QSize(1366, 720), QSize(1920, 1080)}) {
        showAt(size);
        window.showPage(QStringLiteral("channels"));
        ASSERT_TRUE(waitUntil(
            [this] { return window.channelsPage()->stats().has_value() && !window.channelsPage()->isBusy(); }));
        waitUntil([] { return false; }, 100);
        const QTableView* table = window.channelsPage()->tableView();
        ASSERT_GT(table->model()->rowCount(), 0);
        EXPECT_EQ(table->horizontalScrollBar()->maximum(), 0) << size.width() << ": the table scrolls sideways";
        int columns = 0;
        for (int c = 0; c < table->model()->columnCount(); ++c) {
            EXPECT_GE(table->columnWidth(c), table->horizontalHeader()->sectionSizeHint(c))
                << size.width() << ": column " << c << " is cut";
            columns += table->columnWidth(c);
        }
        EXPECT_LE(columns, table->viewport()->width()) << size.width();
        EXPECT_TRUE(shownWhole(table)) << size.width();
    }
}

// The Results table scrolled sideways at 1366 pixels (nine columns in about 555): its columns are as wide as
// their cells, and the median starts hidden (the header's menu shows it; the KL bars' tooltips give it).
TEST_F(WindowLayoutTest, TheResultsTableShowsItsColumnsWholeOnALaptop) {
    ASSERT_TRUE(window.openPath(kDemo));
    showAt({1366, 768});
    QuantizePanel& panel = *window.quantizePanel();
    panel.setSampling(4, 64, 4);
    ASSERT_TRUE(panel.selectMethods({"rtn4", "gptq4", "mxfp4", "q4_k_m"}));
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitUntil([this] { return !window.quantizeJob()->isRunning(); }, 120000));
    ASSERT_TRUE(window.showPage(QStringLiteral("results")));
    waitUntil([] { return false; }, 100);
    const QTableView* table = window.resultsPage()->tableView();
    ASSERT_EQ(table->model()->rowCount(), 4);
    EXPECT_TRUE(table->isColumnHidden(ResultsTableModel::MedianColumn));
    EXPECT_EQ(table->horizontalScrollBar()->maximum(), 0) << "the table scrolls sideways";
    int width = 0;
    for (int c = 0; c < table->model()->columnCount(); ++c) {
        if (table->isColumnHidden(c)) continue;
        const QString title = table->model()->headerData(c, Qt::Horizontal).toString();
        EXPECT_GE(table->columnWidth(c), table->fontMetrics().horizontalAdvance(title)) << "the title is cut: " << c;
        EXPECT_GE(table->columnWidth(c), static_cast<const QAbstractItemView*>(table)->sizeHintForColumn(c))
            << "a cell is cut: " << c;
        width += table->columnWidth(c);
    }
    EXPECT_LE(width, table->viewport()->width());
}

// Beside the default docks at 1366 pixels the Results tab hid behind the tab bar's scroll arrow.
TEST_F(WindowLayoutTest, EveryTabOfADenseCheckpointIsInViewOnALaptop) {
    ASSERT_TRUE(window.openPath(kDemo));
    showAt({1366, 720});
    const auto* tabs = window.findChild<QTabWidget*>();
    ASSERT_NE(tabs, nullptr);
    for (const QString key : {"histogram", "channels", "overview", "hessian", "scales", "results"}) {
        ASSERT_TRUE(window.showPage(key));
        waitUntil([] { return false; }, 100);
        const QTabBar* bar = tabs->tabBar();
        for (int i = 0; i < bar->count(); ++i) {
            if (!bar->isTabVisible(i)) continue;
            EXPECT_LE(bar->tabRect(i).right(), bar->width())
                << key.toStdString() << ": tab " << bar->tabText(i).toStdString() << " is cut";
            EXPECT_GE(bar->tabRect(i).left(), 0)
                << key.toStdString() << ": tab " << bar->tabText(i).toStdString() << " scrolled away";
        }
    }
}

// A GGUF file adds the Quantized and GGUF tabs, and the bar scrolls at 1366 pixels: the current tab is kept in
// view (chosen before the window is shown and the file opened, as `quantscope --tab results FILE` does), and
// the button at the
// bar's end lists every tab.
TEST_F(WindowLayoutTest, WhenTheTabsScrollTheCurrentOneStaysInViewAndEveryTabIsListed) {
    const QString gguf = quantizedDemo(QStringLiteral("q4_k_m"));
    ASSERT_FALSE(gguf.isEmpty());
    // As `quantscope --tab results FILE` does it.
    ASSERT_TRUE(window.showPage(QStringLiteral("results")));
    showAt({1366, 720});
    ASSERT_TRUE(window.openPath(gguf));
    waitUntil([] { return false; }, 200);
    auto* tabs = window.findChild<QTabWidget*>();
    ASSERT_NE(tabs, nullptr);
    const QTabBar* bar = tabs->tabBar();
    ASSERT_EQ(tabs->currentWidget(), window.resultsPage());
    EXPECT_TRUE(bar->rect().contains(bar->tabRect(bar->currentIndex())))
        << "Results at " << bar->tabRect(bar->currentIndex()).left() << " of a " << bar->width() << "-pixel bar";

    auto* list = tabs->findChild<QToolButton*>(QStringLiteral("tabList"));
    ASSERT_NE(list, nullptr);
    ASSERT_NE(list->menu(), nullptr);
    emit list->menu()->aboutToShow();
    QStringList listed, shown;
    for (const QAction* a : list->menu()->actions()) listed << a->text();
    for (int i = 0; i < bar->count(); ++i)
        if (bar->isTabVisible(i)) shown << bar->tabText(i);
    EXPECT_EQ(listed, shown);
    EXPECT_TRUE(shown.contains(QStringLiteral("GGUF")));
    list->menu()->actions().front()->trigger();
    EXPECT_EQ(tabs->currentIndex(), 0);
}

// Switching tabs must not move the docks: at 1366 pixels a page with a wider minimum size pushed the
// left and right docks narrower, and the tab bar moved under the cursor.
TEST_F(WindowLayoutTest, TheDocksKeepTheirWidthsFromTabToTab) {
    for (const QString& path : {kDemo, quantizedDemo(QStringLiteral("gptq4"))}) {
        ASSERT_FALSE(path.isEmpty());
        ASSERT_TRUE(window.openPath(path));
        showAt({1366, 720});
        auto* tabs = window.findChild<QTabWidget*>();
        ASSERT_NE(tabs, nullptr);
        std::map<QString, int> widths;  // the visible docks' widths, as first shown
        std::optional<int> tabsLeft;
        for (int i = 0; i < tabs->count(); ++i) {
            if (!tabs->isTabVisible(i)) continue;
            tabs->setCurrentIndex(i);
            waitUntil([this] { return !window.isBusy(); });  // the page's data too (the Outliers table's widths)
            waitUntil([] { return false; }, 100);
            for (const QDockWidget* dock : window.findChildren<QDockWidget*>()) {
                if (!dock->isVisible() || dock->isFloating()) continue;
                const auto at = widths.emplace(dock->windowTitle(), dock->width());
                EXPECT_EQ(dock->width(), at.first->second)
                    << path.toStdString() << ", tab " << tabs->tabText(i).toStdString() << ": dock "
                    << dock->windowTitle().toStdString() << " changed width";
            }
            const int left = tabs->mapTo(&window, QPoint(0, 0)).x();
            if (!tabsLeft) tabsLeft = left;
            EXPECT_EQ(left, *tabsLeft) << path.toStdString() << ", tab " << tabs->tabText(i).toStdString();
        }
    }
}

// The Bit budget tab at a laptop's size, before and after a measurement: the rules table's buttons
// were cut off at the right and the heat map lay below the fold. Every control is shown whole, no
// button narrower than its text, and the 32-layer heat map and the plot in view at their working
// sizes. With QS_LAYOUT_SCREENSHOT set, the measured tab is saved there as a PNG, to look at.
TEST_F(WindowLayoutTest, TheBitBudgetTabIsUsableWholeOnALaptop) {
    ASSERT_TRUE(window.openPath(kDemo));
    MixedPrecisionPage* page = window.mixedPrecisionPage();
    for (const bool measured : {false, true}) {
        if (measured) page->setTable(deepTable(32));
        for (const QSize size : {QSize(1366, 720), QSize(1366, 768)}) {
            showAt(size);
            ASSERT_TRUE(window.showPage(page->key()));
            waitUntil([] { return false; }, 100);
            const std::string at = std::to_string(size.height()) + (measured ? " measured" : " before measuring");
            for (const char* name :
                 {"candidates", "sensitivity", "addRule", "removeRule", "measure", "quantizeAllocation"}) {
                const auto* w = page->findChild<QWidget*>(QString::fromLatin1(name));
                ASSERT_NE(w, nullptr) << name;
                EXPECT_TRUE(shownWhole(w))
                    << at << ": " << name << " is cut to " << w->visibleRegion().boundingRect().width() << "x"
                    << w->visibleRegion().boundingRect().height() << " of " << w->width() << "x" << w->height();
                if (const auto* button = qobject_cast<const QPushButton*>(w)) {
                    EXPECT_GE(button->width(), button->sizeHint().width()) << at << ": " << name << "'s text is cut";
                }
            }
            const QTableWidget* rules = page->rulesTable();
            EXPECT_TRUE(shownWhole(rules)) << at;
            EXPECT_GE(rules->viewport()->height(), 2 * rules->verticalHeader()->defaultSectionSize())
                << at << ": room for two rules";
            EXPECT_TRUE(shownWhole(page->budgetSlider())) << at;
            EXPECT_TRUE(shownWhole(page->plot())) << at;
            EXPECT_GE(page->plot()->axisRect()->height(), 120)
                << at << ": the plot's axes (the legend under them takes four rows)";
            const MixedAllocationMap* map = page->allocationMap();
            EXPECT_TRUE(shownWhole(map)) << at << ": the heat map is cut to "
                                         << map->visibleRegion().boundingRect().height() << " of " << map->height()
                                         << " pixels";
            EXPECT_GE(map->height(), map->minimumSizeHint().height()) << at;
            EXPECT_EQ(map->layerCount(), measured ? 32 : 0);
            // Five candidates beside the three of the table: the legend wraps rather than running off the edge.
            if (measured) {
                page->allocationMap()->setAllocation(page->planner()->methods(*page->currentAllocation(), "wide"),
                                                     {"gptq2", "gptq4", "gptq8", "fp8-channel", "nvfp4"});
                waitUntil([] { return false; }, 100);
                const std::vector<QRect> legend = map->legendRects();
                ASSERT_EQ(legend.size(), std::size_t(map->legend().size()) + 1);  // the five, the table's in use, dense
                EXPECT_GE(legend.size(), 7u);
                for (const QRect& r : legend) EXPECT_TRUE(map->rect().contains(r)) << at << ": a legend entry is cut";
                EXPECT_TRUE(shownWhole(map)) << at;
                EXPECT_GE(map->height(), map->minimumSizeHint().height()) << at;
            }
            if (const QString png = qEnvironmentVariable("QS_LAYOUT_SCREENSHOT"); !png.isEmpty())
                window.grab().save(
                    QStringLiteral("%1-%2%3.png").arg(png).arg(size.height()).arg(measured ? "-measured" : ""));
        }
    }
}

// Whether the plot's legend lies outside its axes (where the data is drawn).
bool legendBesideTheData(PlotView& plot) {
    plot.replot();
    return plot.legend->visible() && !plot.legend->outerRect().intersects(plot.axisRect()->rect());
}

TEST_F(WindowLayoutTest, LegendsOfTheResultsPlotsLeaveTheDataUncovered) {
    showAt({1366, 720});
    window.showPage(QStringLiteral("results"));
    for (PlotView* plot : {static_cast<PlotView*>(window.resultsPage()->outputError()),
                           static_cast<PlotView*>(window.resultsPage()->klPerLayer())}) {
        plot->resize(300, 260);  // the narrowest a 1366-pixel window gives them
        plot->addGraph()->setName(QStringLiteral("gptq4"));
        plot->addGraph()->setName(QStringLiteral("nvfp4"));
        EXPECT_TRUE(legendBesideTheData(*plot)) << plot->metaObject()->className();
    }
}

// At 300 pixels four entries to a row cut every name to its first letters: a row holds what fits.
TEST_F(WindowLayoutTest, LegendNamesAreNeverCut) {
    OutputErrorPlot outputError;
    ServingScalesPlot scales;
    for (PlotView* plot : {static_cast<PlotView*>(&outputError), static_cast<PlotView*>(&scales)}) {
        plot->resize(300, 260);
        plot->show();
        waitUntil([] { return false; }, 100);
        ASSERT_EQ(plot->viewport().width(), plot->width());  // laid out at its real size
        ASSERT_LE(plot->width(), 330);                       // its minimum width, or 300
        for (const char* name : {"gptq4-act", "fp8-w8a8", "nvfp4-w4a4", "q4_k_m"})
            plot->addGraph()->setName(QString::fromLatin1(name));
        plot->replot();
        int entries = 0;
        for (int i = 0; i < plot->legend->itemCount(); ++i) {
            const QCPAbstractLegendItem* item = plot->legend->item(i);
            if (!item) continue;  // an empty cell of the last row
            ++entries;
            EXPECT_GE(item->outerRect().width(), item->minimumOuterSizeHint().width())
                << plot->metaObject()->className() << " " << i;
        }
        EXPECT_EQ(entries, 4);
    }
}

// "Log counts" used the log ticker's default labels, "1.000000·10³".
TEST_F(WindowLayoutTest, LogCountsReadAsPowersOfTen) {
    ASSERT_TRUE(window.openPath(kDemo));
    showAt({1366, 720});
    ASSERT_TRUE(waitUntil([this] { return window.histogramPage()->histogram().has_value(); }));
    auto* log = window.histogramPage()->findChild<QCheckBox*>(QStringLiteral("logCounts"));
    ASSERT_NE(log, nullptr);
    log->setChecked(true);
    QCPAxis* y = window.histogramPage()->plot()->yAxis;
    ASSERT_EQ(y->scaleType(), QCPAxis::stLogarithmic);
    EXPECT_EQ(y->numberFormat(), QStringLiteral("eb"));
    EXPECT_EQ(y->numberPrecision(), 0);
    log->setChecked(false);
    EXPECT_EQ(y->scaleType(), QCPAxis::stLinear);
    EXPECT_EQ(y->numberFormat().front(), QLatin1Char('g'));
}

}  // namespace
}  // namespace qs::gui::test
