// What a new user meets first: a start page that opens the bundled demo (also in Help), and a
// Quantize panel whose every control says what it does, with no two method rows named alike.
#include <QAbstractSpinBox>
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenuBar>
#include <QPushButton>
#include <QSet>

#include "panels/quantize_panel.h"
#include "qt_test_support.h"
#include "window/main_window.h"
#include "window/start_page.h"

namespace qs::gui::test {
namespace {

class FirstStepsTest : public QtAppTest {
protected:
    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(FirstStepsTest, EveryQuantizePanelControlExplainsItself) {
    QuantizePanel& panel = *window.quantizePanel();
    int controls = 0;
    for (QWidget* w : panel.findChildren<QWidget*>()) {
        const bool control = qobject_cast<QAbstractButton*>(w) || qobject_cast<QAbstractSpinBox*>(w) ||
                             qobject_cast<QComboBox*>(w) || qobject_cast<QLineEdit*>(w);
        if (!control || qobject_cast<QLineEdit*>(w->parentWidget())) continue;  // a spin box's or line edit's own parts
        if (qobject_cast<QAbstractSpinBox*>(w->parentWidget()) || qobject_cast<QComboBox*>(w->parentWidget())) continue;
        ++controls;
        const auto* button = qobject_cast<QAbstractButton*>(w);
        EXPECT_FALSE(w->toolTip().isEmpty())
            << w->metaObject()->className() << " " << (button ? button->text().toStdString() : "") << " has no tooltip";
    }
    EXPECT_GT(controls, 30);

    QSet<QString> names;
    for (QCheckBox* check : panel.findChildren<QCheckBox*>())
        EXPECT_FALSE(names.contains(check->text())) << "two rows read " << check->text().toStdString();
    for (QCheckBox* check : panel.findChildren<QCheckBox*>()) names.insert(check->text());
    EXPECT_TRUE(names.contains(QStringLiteral("Trellis (a)")) && names.contains(QStringLiteral("Trellis (b)")));
}

TEST_F(FirstStepsTest, TheStartPageAndHelpOpenTheDemo) {
    window.show();
    EXPECT_TRUE(window.startPage()->isVisible());
    window.startPage()->demoButton()->click();
    ASSERT_TRUE(window.checkpoint());
    EXPECT_EQ(QFileInfo(QString::fromStdString(window.checkpoint()->root().string())).canonicalFilePath(),
              QFileInfo(kDemo).canonicalFilePath());
    EXPECT_FALSE(window.startPage()->isVisible());
    EXPECT_TRUE(window.currentPage()->isVisible());

    QAction* demo = nullptr;
    for (QAction* menu : window.menuBar()->actions())
        if (menu->text() == QStringLiteral("&Help"))
            for (QAction* a : menu->menu()->actions())
                if (a->text() == QStringLiteral("Open the &Demo")) demo = a;
    ASSERT_NE(demo, nullptr);
    ASSERT_TRUE(window.openPath(kStories));
    demo->trigger();
    EXPECT_EQ(QFileInfo(QString::fromStdString(window.checkpoint()->root().string())).canonicalFilePath(),
              QFileInfo(kDemo).canonicalFilePath());
}

}  // namespace
}  // namespace qs::gui::test
