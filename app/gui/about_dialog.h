#pragma once
// Help ▸ About: the version, the compute backend in use, and the licences of what QuantScope
// ships: the bundled models and texts (read from the installed resources) and the libraries.
#include <QDialog>

class QTextBrowser;

namespace qs::gui {

class AboutDialog : public QDialog {
    Q_OBJECT

public:
    explicit AboutDialog(QWidget* parent = nullptr);

    static QString versionText();    // "QuantScope 0.1.0"
    static QString backendText();    // "CPU (Eigen + OpenMP), 2 threads; no GPU backend in this build"
    static QString licencesHtml();   // bundled models and data, then libraries

    QString text() const;            // everything shown, as plain text (tests)

private:
    QTextBrowser* body_;
};

}  // namespace qs::gui
