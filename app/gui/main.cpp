// quantscope: the desktop application. With --screenshot it renders one window to a PNG and exits,
// which is how the README's picture is made and how CI checks that the GUI draws (offscreen).
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QSize>

#include "qs/huge_pages.h"
#include "qs/message_text.h"
#include "qs/pipeline/checkpoint_eval_report.h"

#include "jobs/evaluate_job.h"
#include "jobs/quantize_job.h"
#include "pages/imatrix_page.h"
#include "pages/overview_page.h"
#include "pages/results_page.h"
#include "panels/quantize_panel.h"
#include "window/main_window.h"
#if defined(QS_WITH_CUDA_BACKEND)
#include "qs/gpu/cuda_backend.h"
#endif
#include "window/screenshot_taker.h"
#include "window/stderr_error_reporter.h"

namespace {

struct Options {
    QString checkpoint;
    QString screenshot;
    QString tab;
    QString select;  // a tensor to select once the checkpoint is open (a GGUF or Hugging Face name)
    bool quantize = false;
    QStringList methods;
    QString overviewModules;  // the Overview's module list entry ("experts: gate_proj")
    QString original;         // File ▸ Compare with Original… once the checkpoint is open
    QString second;           // File ▸ Compare with Second Quantization…
    bool evaluate = false;    // then File ▸ Evaluate against Original
    QString json;             // where the evaluation goes, in quantscope-cli eval --json's shape
    QString imatrix;          // llama.cpp's imatrix to open (the Importance tab, the GGUF methods)
    QSize size{1400, 900};
    int timeoutMs = 60000;
};

// "1366x768" → QSize; an invalid size when the text is not two positive numbers.
QSize parseSize(const QString& text) {
    const QStringList parts = text.split(QLatin1Char('x'));
    if (parts.size() != 2) return {};
    bool okWidth = false;
    bool okHeight = false;
    const QSize size(parts[0].toInt(&okWidth), parts[1].toInt(&okHeight));
    return okWidth && okHeight && size.width() > 0 && size.height() > 0 ? size : QSize();
}

Options parseOptions(const QCoreApplication& app) {
    QCommandLineParser parser;
    parser.setApplicationDescription(QApplication::translate("main", "Inspect, quantize and compare LLM checkpoints."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QApplication::translate("main", "Render the window to a PNG file and exit."),
                                        QStringLiteral("file"));
    const QCommandLineOption tab(
        QStringLiteral("tab"),
        QApplication::translate(
            "main",
            "The tab to show: histogram, quantized, gguf, side-by-side, channels, overview, hessian, scales or "
            "results (experts: the results' tokens per expert of a MoE job; expert-errors: its error per expert; "
            "imatrix: the Importance tab, with --imatrix); or the Quantize or Export panel (quantize, export)."),
        QStringLiteral("name"));
    const QCommandLineOption select(
        QStringLiteral("select"),
        QApplication::translate("main",
                                "The tensor to select once the checkpoint is open, by its name in the checkpoint "
                                "or, for a GGUF file, by the file's own (e.g. blk.0.attn_q.weight)."),
        QStringLiteral("name"));
    const QCommandLineOption quantize(
        QStringLiteral("quantize"),
        QApplication::translate("main",
                                "Start a quantization with the Quantize panel's settings once the checkpoint "
                                "is open (with --screenshot, the picture shows its results)."));
    const QCommandLineOption timeout(
        QStringLiteral("timeout"),
        QApplication::translate("main", "Screenshot: longest wait for the view, in seconds."),
        QStringLiteral("seconds"), QStringLiteral("60"));
    const QCommandLineOption methods(
        QStringLiteral("methods"),
        QApplication::translate(
            "main", "The methods to tick in the Quantize panel, comma-separated (e.g. gptq4,q4_k_m,nvfp4)."),
        QStringLiteral("list"));
    const QCommandLineOption size(
        QStringLiteral("size"),
        QApplication::translate("main", "Screenshot: the window's size, e.g. 1366x768 (a laptop) or 1920x1080."),
        QStringLiteral("WxH"), QStringLiteral("1400x900"));
    const QCommandLineOption original(
        QStringLiteral("original"),
        QApplication::translate("main",
                                "The checkpoint the opened one was quantized from (File ▸ Compare with Original…): the "
                                "Quantized tab shows each linear's rounding error against it."),
        QStringLiteral("path"));
    const QCommandLineOption second(
        QStringLiteral("second"),
        QApplication::translate("main",
                                "Another quantization of the opened checkpoint's model (File ▸ Compare with Second "
                                "Quantization…): the Side by side tab compares the two linear by linear, and "
                                "--evaluate evaluates both."),
        QStringLiteral("path"));
    const QCommandLineOption evaluate(
        QStringLiteral("evaluate"),
        QApplication::translate("main",
                                "Evaluate the checkpoint against --original (File ▸ Evaluate against Original), as "
                                "quantscope-cli eval does; the result joins Results."));
    const QCommandLineOption json(
        QStringLiteral("json"),
        QApplication::translate("main",
                                "With --evaluate: write the evaluation Results shows to this file, as quantscope-cli "
                                "eval --json writes it."),
        QStringLiteral("file"));
    const QCommandLineOption overviewModules(
        QStringLiteral("overview-modules"),
        QApplication::translate(
            "main",
            "The Overview's modules of a mixture of experts: \"dense linears\" or one expert linear's "
            "layer × expert view, as the list names it (e.g. \"experts: gate_proj\")."),
        QStringLiteral("entry"));
    const QCommandLineOption imatrix(
        QStringLiteral("imatrix"),
        QApplication::translate("main",
                                "llama.cpp's importance matrix (File ▸ Open imatrix…): the Importance tab shows it and "
                                "the GGUF methods of --quantize weigh by it."),
        QStringLiteral("file"));
    parser.addOptions({screenshot, tab, select, quantize, methods, original, second, evaluate, json, imatrix,
                       overviewModules, size, timeout});
    parser.addPositionalArgument(
        QStringLiteral("checkpoint"),
        QApplication::translate("main", "A .safetensors or .gguf file, or a checkpoint folder."),
        QStringLiteral("[checkpoint]"));
    parser.process(app);

    Options options;
    options.screenshot = parser.value(screenshot);
    options.tab = parser.value(tab);
    options.select = parser.value(select);
    options.quantize = parser.isSet(quantize);
    if (parser.isSet(methods)) options.methods = parser.value(methods).split(QLatin1Char(','), Qt::SkipEmptyParts);
    options.original = parser.value(original);
    options.second = parser.value(second);
    options.evaluate = parser.isSet(evaluate);
    options.json = parser.value(json);
    options.imatrix = parser.value(imatrix);
    options.overviewModules = parser.value(overviewModules);
    options.size = parseSize(parser.value(size));
    options.timeoutMs = parser.value(timeout).toInt() * 1000;
    if (!parser.positionalArguments().isEmpty()) options.checkpoint = parser.positionalArguments().front();
    return options;
}

// The Results page's last evaluation as `quantscope-cli eval --json` writes it; false (saying why) when
// the page has none or the file cannot be written.
bool writeEvaluationJson(const qs::gui::ResultsPage& results, const QString& path) {
    if (results.evaluations().empty()) {
        std::fprintf(stderr, "quantscope: no evaluation in Results to write to %s\n", qUtf8Printable(path));
        return false;
    }
    const qs::gui::Evaluation& e = *results.evaluations().back();
    std::ofstream out(path.toStdString());
    out << qs::pipeline::checkpointEvalJson(e.original.toStdString(), e.quantized.toStdString(), e.result).dump(2)
        << '\n';
    if (!out) {
        std::fprintf(stderr, "quantscope: %s: cannot write the JSON report\n", qUtf8Printable(path));
        return false;
    }
    return true;
}

// --help and --version are answered (printed, then exit) by QCommandLineParser::process, which needs
// only a QCoreApplication: a QApplication without a display aborts before it could.
bool asksForHelpOrVersion(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--") break;
        if (a == "-h" || a == "-?" || a == "--help" || a == "--help-all" || a == "-v" || a == "--version") return true;
    }
    return false;
}

void setApplicationIdentity() {
    QCoreApplication::setOrganizationName(QStringLiteral("QuantScope"));
    QCoreApplication::setApplicationName(QStringLiteral("QuantScope"));
    QCoreApplication::setApplicationVersion(QStringLiteral(QS_VERSION));
}

}  // namespace

int main(int argc, char** argv) {
    if (asksForHelpOrVersion(argc, argv)) {
        const QCoreApplication app(argc, argv);
        setApplicationIdentity();
        parseOptions(app);  // prints the help or the version and exits
        return 0;
    }
    qs::restartWithHugePages(argv);  // before any work: glibc reads the tunable only at start
    QApplication app(argc, argv);
#if defined(QS_WITH_CUDA_BACKEND)
    qs::gpu::registerCudaBackend();  // the Quantize panel's Auto / CUDA can then pick the GPU
#endif
    setApplicationIdentity();
    // Lets Wayland compositors match the window to the installed desktop entry (and so its icon).
    QApplication::setDesktopFileName(QStringLiteral("io.github.quantscope.QuantScope"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/quantscope.png")));
    const Options options = parseOptions(app);
    const bool headless = !options.screenshot.isEmpty();
    if (!options.size.isValid()) {
        std::fprintf(stderr, "quantscope: --size wants WIDTHxHEIGHT in pixels, e.g. 1366x768\n");
        return 2;
    }
    if ((options.evaluate && options.original.isEmpty()) || (!options.json.isEmpty() && !options.evaluate)) {
        std::fprintf(stderr, "quantscope: --evaluate needs --original, and --json needs --evaluate\n");
        return 2;
    }
    if (options.tab == QLatin1String("side-by-side") && options.second.isEmpty()) {
        std::fprintf(stderr, "quantscope: --tab side-by-side needs --second (the tab compares two quantizations)\n");
        return 2;
    }

    using qs::gui::MainWindow;
    MainWindow window(headless ? MainWindow::Settings::Ignore : MainWindow::Settings::Remember);
    auto stderrReporter = std::make_shared<qs::gui::StderrErrorReporter>();
    if (headless) {
        window.setErrorReporter(stderrReporter);  // nobody could close a dialog
        window.resize(options.size);
    }
    // "experts" ("expert-errors"): the Results page with its tokens-per-expert (error-per-expert) tab in
    // front once a MoE job's result has one.
    const bool errors = options.tab == QLatin1String("expert-errors");
    const bool experts = errors || options.tab == QLatin1String("experts");
    if (experts) window.resultsPage()->preferExpertTokens(true);
    bool jobFailed = false;  // a --quantize run that fails (or an --imatrix that cannot be read) exits with 2
    if (!options.imatrix.isEmpty()) {
        QObject::connect(window.imatrixPage(), &qs::gui::InspectorPage::errorOccurred,
                         [&jobFailed] { jobFailed = true; });
        window.openImatrix(options.imatrix);  // its tab shown, so that --tab imatrix finds it
    }
    if (errors) window.resultsPage()->preferExpertErrors(true);
    if (!options.tab.isEmpty() && !window.showPage(experts ? QStringLiteral("results") : options.tab)) {
        std::fprintf(stderr,
                     "quantscope: unknown tab '%s' (histogram, quantized, gguf, side-by-side, channels, overview, "
                     "hessian, scales, results, experts, expert-errors, imatrix with --imatrix, quantize, export)\n",
                     qUtf8Printable(options.tab));
        return 2;
    }
    if (!options.methods.isEmpty()) {
        std::vector<std::string> names;
        for (const QString& m : options.methods) names.push_back(m.trimmed().toStdString());
        if (!window.quantizePanel()->selectMethods(names)) {
            std::fprintf(stderr, "quantscope: --methods names a method the Quantize panel does not list\n");
            return 2;
        }
    }
    window.show();
    if (!options.checkpoint.isEmpty() && !window.openPath(options.checkpoint) && headless) return 2;
    if (!options.select.isEmpty() && !window.selectTensorNamed(options.select)) {
        // One line whatever the name holds: it is the user's text, echoed.
        const std::string name = qs::sanitizeMessage(options.select.toStdString(), 200);
        std::fprintf(
            stderr, "quantscope: --select: no tensor named '%s' in %s\n", name.c_str(),
            options.checkpoint.isEmpty() ? "the window (no checkpoint is open)" : qUtf8Printable(options.checkpoint));
        if (headless) return 2;
    }
    if (!options.overviewModules.isEmpty() && !window.overviewPage()->setModuleView(options.overviewModules)) {
        std::fprintf(stderr, "quantscope: the Overview lists no modules '%s' for this checkpoint (%s)\n",
                     qUtf8Printable(options.overviewModules),
                     qUtf8Printable(window.overviewPage()->moduleViews().join(QStringLiteral(", "))));
        if (headless) return 2;
    }
    if (!options.original.isEmpty() && !window.compareWithOriginal(options.original) && headless) return 2;
    if (!options.second.isEmpty()) {
        if (!window.compareWithSecond(options.second) && headless) return 2;
        // The comparison showed its own tab: the one asked for again (side-by-side is hidden until now).
        if (!options.tab.isEmpty() && !window.showPage(experts ? QStringLiteral("results") : options.tab)) return 2;
    }
    QObject::connect(window.quantizeJob(), &qs::gui::QuantizeJob::failed, [&jobFailed] { jobFailed = true; });
    QObject::connect(window.evaluateJob(), &qs::gui::EvaluateJob::failed, [&jobFailed] { jobFailed = true; });
    // What the Results page shows of the evaluation, once it is there (after the window's own slot).
    if (!options.json.isEmpty())
        QObject::connect(window.evaluateJob(), &qs::gui::EvaluateJob::finished, [&window, &options, &jobFailed] {
            if (!writeEvaluationJson(*window.resultsPage(), options.json)) jobFailed = true;
        });
    if (options.evaluate && !window.startEvaluation()) {
        std::fprintf(stderr, "quantscope: --evaluate needs a checkpoint that opens and its --original\n");
        if (headless) return 2;
    }
    if (options.quantize && options.evaluate) {
        // One run at a time: the quantization once the evaluation has ended (its worker gone) and is in
        // Results, so both show there.
        QObject::connect(window.evaluateJob(), &qs::gui::EvaluateJob::runningChanged, &window,
                         [&window, &jobFailed](bool running) {
                             if (!running && !jobFailed && !window.startQuantizeJob()) jobFailed = true;
                         });
    } else if (options.quantize && !options.imatrix.isEmpty()) {
        // Once the imatrix is read and in the Quantize panel, so that the GGUF methods weigh by it.
        QObject::connect(window.imatrixPage(), &qs::gui::ImatrixPage::imatrixLoaded, &window, [&window, &jobFailed] {
            if (!window.startQuantizeJob()) jobFailed = true;
        });
    } else if (options.quantize && !window.startQuantizeJob()) {
        std::fprintf(stderr, "quantscope: --quantize needs a checkpoint that opens\n");
        if (headless) return 2;
    }
    if (!headless) return app.exec();

    qs::gui::ScreenshotTaker taker(&window, options.screenshot, options.timeoutMs);
    taker.start();
    const int code = app.exec();
    return jobFailed ? 2 : code;
}
