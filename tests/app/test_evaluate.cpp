// File ▸ Compare with Original…, then Evaluate against Original, on the demo's own exports (made with
// `quantscope-cli quantize`): a GPTQ folder and a Q4_K_M GGUF file. The app's evaluation must be
// `quantscope-cli eval`'s: the same KL report to the last bit (one code path on the same token windows;
// another default, text or tokenization would change every number), shown as one row of Results.
#include <fstream>

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QToolButton>
#include <nlohmann/json.hpp>

#include "qs/io/checkpoint.h"
#include "qs/pipeline/job_report.h"

#include "jobs/evaluate_job.h"
#include "models/results_table_model.h"
#include "pages/results_page.h"
#include "panels/job_status_widget.h"
#include "plots/kl_per_layer_plot.h"
#include "qt_test_support.h"
#include "quantized_demo.h"
#include "text/results_format.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

int run(const QString& program, const QStringList& arguments, QString* errors = nullptr) {
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    process.setProcessEnvironment(env);
    process.start(program, arguments);
    if (!process.waitForFinished(300000)) {
        process.kill();
        return -1;
    }
    if (errors) *errors = QString::fromUtf8(process.readAllStandardError());
    return process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
}

nlohmann::json readJson(const QString& path) {
    std::ifstream in(path.toStdString());
    return in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
}

// `quantscope-cli eval ORIGINAL QUANTIZED --json`: what the app must reproduce.
nlohmann::json cliEval(const QString& original, const QString& quantized) {
    static QTemporaryDir dir;
    static int made = 0;
    const QString json = dir.filePath(QStringLiteral("eval%1.json").arg(++made));
    QString errors;
    EXPECT_EQ(run(QStringLiteral(QS_CLI_EXE),
                  {QStringLiteral("eval"), original, quantized, QStringLiteral("--json"), json}, &errors),
              0)
        << errors.toStdString();
    return readJson(json);
}

// By brute force: the bytes of every decoder linear's tensors but biases in `quantized`, over the weights of the
// demo's decoder linears.
double storedBitsPerWeight(const QString& quantized) {
    const io::Checkpoint q = io::Checkpoint::open(quantized.toStdString());
    const io::Checkpoint original = io::Checkpoint::open(kDemo.toStdString());
    const auto decoderLinear = [](const io::CheckpointTensor& t) {
        return t.naming.role == io::TensorRole::Linear && t.naming.layer >= 0 && t.naming.part != "bias";
    };
    double bytes = 0.0, weights = 0.0;
    for (const auto& t : q.tensors())
        if (decoderLinear(t)) bytes += double(t.info->byteSize());
    for (const auto& t : original.tensors())
        if (decoderLinear(t)) weights += double(t.info->numel());
    return 8.0 * bytes / weights;
}

class Quiet : public ErrorReporter {
public:
    void report(const QString&, const QString& message) override { messages << message; }
    QStringList messages;
};

class EvaluateTest : public QtAppTest {
protected:
    void SetUp() override {
        window.setErrorReporter(errors);
        window.show();
        QObject::connect(window.evaluateJob(), &EvaluateJob::finished,
                         [this](const EvaluationPtr& e) { evaluation = e; });
        QObject::connect(window.evaluateJob(), &EvaluateJob::failed, [this](const QString& m) { failure = m; });
        QObject::connect(window.evaluateJob(), &EvaluateJob::cancelled, [this] { cancelled = true; });
        QObject::connect(window.evaluateJob(), &EvaluateJob::progressed, [this](const qs::Progress&) { ++progress; });
    }

    // Opens `quantized`, names the demo as its original and evaluates; false when any step refused.
    bool evaluateAgainstDemo(const QString& quantized) {
        if (quantized.isEmpty() || !window.openPath(quantized) || !window.compareWithOriginal(kDemo)) return false;
        return window.startEvaluation() && waitForEvaluation();
    }
    bool waitForEvaluation() {
        return waitUntil([this] { return !window.evaluateJob()->isRunning(); }, 300000);
    }

    // The app's row against the CLI's report of the same two checkpoints.
    void expectTheClisReport(const QString& quantized, const QString& label) {
        ASSERT_TRUE(evaluation) << failure.toStdString();
        const nlohmann::json cli = cliEval(kDemo, quantized);
        ASSERT_TRUE(cli.contains("kl"));
        EXPECT_EQ(pipeline::toJson(evaluation->result.kl), cli["kl"]);
        EXPECT_EQ(evaluation->result.quantizedFormat, cli["quantized_format"].get<std::string>());

        const JobResultPtr& shown = window.resultsPage()->result();
        ASSERT_TRUE(shown);
        ASSERT_EQ(shown->methods.size(), 1u);
        const pipeline::MethodResult& row = shown->methods.front();
        EXPECT_EQ(methodLabel(row), label);
        EXPECT_EQ(row.kl.meanKld.value, cli["kl"]["mean_kld"]["value"].get<double>());
        EXPECT_GT(row.kl.meanKld.value, 0.0);  // 4-bit weights do change the distributions
        EXPECT_EQ(row.kl.sameTop.value, cli["kl"]["same_top_p"]["value"].get<double>());
        EXPECT_EQ(row.kl.pplQ.value, cli["kl"]["ppl_q"]["value"].get<double>());
        const ResultsTableModel& table = *window.resultsPage()->table();
        EXPECT_EQ(table.data(table.index(0, ResultsTableModel::MethodColumn)).toString(), label);
        EXPECT_EQ(table.data(table.index(0, ResultsTableModel::MeanColumn)).toString(),
                  klText(cli["kl"]["mean_kld"]["value"].get<double>()));
        // The bits its decoder linears store (GPTQ's qweight, scales, qzeros and g_idx; a GGUF's blocks).
        EXPECT_NEAR(row.bitsPerWeight, storedBitsPerWeight(quantized), 1e-12);
        EXPECT_EQ(table.data(table.index(0, ResultsTableModel::BitsColumn)).toString(),
                  QString::number(storedBitsPerWeight(quantized), 'f', 3));
        // One KL for the whole checkpoint: the per-layer plot has nothing, and the summary says why.
        EXPECT_FALSE(window.resultsPage()->klPerLayer()->hasData());
        EXPECT_EQ(window.currentPage(), static_cast<InspectorPage*>(window.resultsPage()));
    }

    MainWindow window{MainWindow::Settings::Ignore};
    std::shared_ptr<Quiet> errors = std::make_shared<Quiet>();
    ModelChecker resultsChecker{window.resultsPage()->table()};
    EvaluationPtr evaluation;
    QString failure;
    bool cancelled = false;
    int progress = 0;
};

TEST_F(EvaluateTest, AGptqExportIsEvaluatedAsTheCliEvaluatesIt) {
    const QString gptq = quantizedDemo(QStringLiteral("gptq4"));
    EXPECT_FALSE(window.startEvaluation());  // nothing open, no original
    ASSERT_TRUE(window.openPath(gptq));
    EXPECT_FALSE(window.startEvaluation());  // no original named yet
    ASSERT_TRUE(evaluateAgainstDemo(gptq));
    EXPECT_GT(progress, 0);
    expectTheClisReport(gptq, QStringLiteral("gptq 4-bit"));
}

TEST_F(EvaluateTest, AGgufQ4KMFileIsEvaluatedAsTheCliEvaluatesIt) {
    const QString gguf = quantizedDemo(QStringLiteral("q4_k_m"));
    ASSERT_TRUE(evaluateAgainstDemo(gguf)) << errors->messages.join(QLatin1Char('\n')).toStdString();
    expectTheClisReport(gguf, QStringLiteral("gguf Q4_K_M"));
}

// The negative control: the demo against itself scores exactly zero, so what the rows show is the
// quantization's damage and not the comparison's own noise.
TEST_F(EvaluateTest, TheOriginalAgainstItselfScoresZero) {
    EvaluateJob job;
    EvaluationPtr self;
    QObject::connect(&job, &EvaluateJob::finished, [&self](const EvaluationPtr& e) { self = e; });
    ASSERT_TRUE(job.start(kDemo, kDemo));
    ASSERT_TRUE(waitUntil([&job] { return !job.isRunning(); }, 300000));
    ASSERT_TRUE(self);
    EXPECT_EQ(self->result.kl.meanKld.value, 0.0);
    EXPECT_EQ(self->result.kl.sameTop.value, 1.0);
    EXPECT_GT(self->result.kl.count, 0u);
}

TEST_F(EvaluateTest, CancelStopsTheEvaluationAndLeavesResultsEmpty) {
    ASSERT_TRUE(window.openPath(quantizedDemo(QStringLiteral("gptq4"))));
    ASSERT_TRUE(window.compareWithOriginal(kDemo));
    ASSERT_TRUE(window.startEvaluation());
    EXPECT_TRUE(window.isBusy());
    EXPECT_FALSE(window.startEvaluation());  // one at a time
    ASSERT_TRUE(waitUntil([this] { return progress > 0; }, 120000));
    window.jobStatus()->findChild<QToolButton*>()->click();  // the status bar's Cancel
    ASSERT_TRUE(waitForEvaluation());
    ASSERT_TRUE(waitUntil([this] { return cancelled; }));
    EXPECT_FALSE(evaluation);
    EXPECT_TRUE(failure.isEmpty());
    EXPECT_FALSE(window.resultsPage()->result());
    EXPECT_TRUE(window.startEvaluation());  // and it can run again
    ASSERT_TRUE(waitForEvaluation());
    EXPECT_TRUE(waitUntil([this] { return evaluation != nullptr; }));
}

// Another model (stories260K's 64-wide linears) is refused as the original, saying which linear does
// not fit; and an evaluation against it, asked for directly, fails naming both checkpoints.
TEST_F(EvaluateTest, AnOriginalOfAnotherModelIsRefusedSayingWhy) {
    const QString gptq = quantizedDemo(QStringLiteral("gptq4"));
    ASSERT_TRUE(window.openPath(gptq));
    EXPECT_FALSE(window.compareWithOriginal(kStories));
    ASSERT_EQ(errors->messages.size(), 1);
    EXPECT_TRUE(errors->messages.front().contains(QStringLiteral("proj"))) << errors->messages.front().toStdString();
    EXPECT_FALSE(window.startEvaluation());

    EvaluateJob job;
    QString message;
    QObject::connect(&job, &EvaluateJob::failed, [&message](const QString& m) { message = m; });
    ASSERT_TRUE(job.start(kStories, gptq));
    ASSERT_TRUE(waitUntil([&job] { return !job.isRunning(); }, 120000));
    ASSERT_TRUE(waitUntil([&message] { return !message.isEmpty(); }));
    EXPECT_TRUE(message.contains(QStringLiteral("stories260K"))) << message.toStdString();
}

// The command line the screenshots and the issue use: what --json writes is the page's evaluation in
// the CLI's shape, equal to the CLI's report but for the time taken.
TEST_F(EvaluateTest, TheCommandLineWritesTheCLIsJson) {
    const QString gptq = quantizedDemo(QStringLiteral("gptq4"));
    QTemporaryDir dir;
    const QString json = dir.filePath(QStringLiteral("gui.json")), png = dir.filePath(QStringLiteral("r.png"));
    QString errorsText;
    ASSERT_EQ(run(QStringLiteral(QS_QUANTSCOPE_EXE),
                  {QStringLiteral("--original"), kDemo, QStringLiteral("--evaluate"), QStringLiteral("--json"), json,
                   QStringLiteral("--screenshot"), png, QStringLiteral("--tab"), QStringLiteral("results"),
                   QStringLiteral("--size"), QStringLiteral("1366x768"), QStringLiteral("--timeout"),
                   QStringLiteral("300"), gptq},
                  &errorsText),
              0)
        << errorsText.toStdString();
    nlohmann::json gui = readJson(json), cli = cliEval(kDemo, gptq);
    ASSERT_TRUE(gui.contains("time_s"));
    gui.erase("time_s");
    cli.erase("time_s");
    EXPECT_EQ(gui, cli);
    EXPECT_TRUE(QFileInfo(png).size() > 0);

    // With --quantize too, the Quantize panel's job runs once the evaluation is in Results (one run at a
    // time): exit code 2 if it could not start or failed.
    ASSERT_EQ(run(QStringLiteral(QS_QUANTSCOPE_EXE),
                  {QStringLiteral("--original"), kDemo, QStringLiteral("--evaluate"), QStringLiteral("--quantize"),
                   QStringLiteral("--methods"), QStringLiteral("rtn4"), QStringLiteral("--json"), json,
                   QStringLiteral("--screenshot"), png, QStringLiteral("--timeout"), QStringLiteral("300"), gptq},
                  &errorsText),
              0)
        << errorsText.toStdString();
    gui = readJson(json);
    gui.erase("time_s");
    EXPECT_EQ(gui, cli);

    // --evaluate without --original is refused before anything opens.
    EXPECT_EQ(run(QStringLiteral(QS_QUANTSCOPE_EXE),
                  {QStringLiteral("--evaluate"), QStringLiteral("--screenshot"), png, gptq}),
              2);
}

// An evaluation joins the Quantize panel's results instead of replacing them, and a later job's result
// keeps it; an evaluation of another checkpoint is not shown.
TEST_F(EvaluateTest, AnEvaluationRowStaysBesideTheJobsMethods) {
    ResultsPage page;
    ModelChecker checker{page.table()};
    auto job = std::make_shared<pipeline::JobResult>();
    job->source.path = "model";
    job->methods.emplace_back().method.name = "rtn4";
    job->methods.back().kl.count = 10;
    auto e = std::make_shared<Evaluation>();
    e->source = job->source;
    e->openCheckpoint = job->source;
    e->label = QStringLiteral("gguf Q4_K_M");
    e->result.kl.count = 10;
    e->result.kl.meanKld.value = 0.25;
    page.addEvaluation(e);
    ASSERT_EQ(page.table()->rowCount(), 1);
    page.setResult(job);
    ASSERT_EQ(page.table()->rowCount(), 2);
    EXPECT_EQ(page.table()->data(page.table()->index(1, ResultsTableModel::MethodColumn)).toString(),
              QStringLiteral("gguf Q4_K_M"));
    EXPECT_TRUE(page.table()->data(page.table()->index(1, 0), Qt::ToolTipRole).toString().contains("original"));
    EXPECT_FALSE(page.table()->data(page.table()->index(0, 0), Qt::ToolTipRole).isValid());  // a method's row
    EXPECT_EQ(page.result()->methods.front().method.name, "rtn4");
    EXPECT_EQ(page.result()->methods.back().kl.meanKld.value, 0.25);

    auto other = std::make_shared<Evaluation>(*e);
    other->source.path = "another model";
    other->openCheckpoint = other->source;
    page.addEvaluation(other);
    EXPECT_EQ(page.table()->rowCount(), 2);
    page.setCheckpoint(nullptr);
    EXPECT_EQ(page.table()->rowCount(), 0);
}

// Compare with Original…'s dialog opens beside the checkpoint (not inside the last original, the
// demo's folder in the app's resources), and a single .safetensors file is an original too.
TEST_F(EvaluateTest, TheOriginalIsLookedForBesideTheCheckpointAndMayBeAFile) {
    const QString gptq = quantizedDemo(QStringLiteral("gptq4"));
    ASSERT_TRUE(window.openPath(gptq));
    EXPECT_EQ(window.originalDialogFolder(), QFileInfo(gptq).absolutePath());
    ASSERT_TRUE(window.openPath(gptq + QLatin1Char('/')));  // as a shell completes a folder's name
    EXPECT_EQ(window.originalDialogFolder(), QFileInfo(gptq).absolutePath());
    const QString file = QDir(kDemo).filePath(QStringLiteral("model.safetensors"));
    ASSERT_TRUE(window.compareWithOriginal(file)) << errors->messages.join(QLatin1Char('\n')).toStdString();
    EXPECT_EQ(window.originalPath(), file);
    ASSERT_TRUE(window.openPath(kDemo));
    EXPECT_TRUE(window.originalPath().isEmpty());  // the original was the previous checkpoint's
    EXPECT_FALSE(window.startEvaluation());
}

}  // namespace
}  // namespace qs::gui::test
