#include "panels/export_panel.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include <QAction>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QStyle>
#include <QVBoxLayout>

#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/export_check.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_result_export.h"

#include "text/number_format.h"
#include "text/results_format.h"

namespace qs::gui {
namespace {

constexpr int kProgressPollMs = 100;
// The format of a GGUF method's result: one file, written by pipeline::writeGgufResult.
const QString kGgufFormat = QStringLiteral("gguf");

const quant::QuantizedLinear* firstLinear(const pipeline::MethodResult& m) {
    for (const auto& layer : pipeline::linearHeaders(m))
        for (const auto& [name, q] : layer) return q.get();
    return nullptr;
}

// Each of `encoders` with its refusal of `m` (empty: it takes the result), from one pass over the result's
// layers (read from the work folder when the result is on disk). A result without layers is refused by
// every layout: nothing is offered beside the default, and exporting says why.
std::vector<std::pair<const formats::LinearEncoder*, QString>> refusalsOf(
    const std::vector<const formats::LinearEncoder*>& encoders, const pipeline::MethodResult& m,
    const CancelToken& cancel = {}) {
    std::vector<std::pair<const formats::LinearEncoder*, QString>> out;
    const std::vector<std::string> why = pipeline::hasLayers(m)
                                             ? pipeline::exportRefusals(m, encoders, cancel)
                                             : std::vector<std::string>(encoders.size(), "the result holds no layer");
    for (std::size_t i = 0; i < encoders.size(); ++i) out.emplace_back(encoders[i], QString::fromStdString(why[i]));
    return out;
}

// Whether `inner` is `outer` or lies inside it (after resolving "..", symlinks of existing parts).
bool isWithin(const std::filesystem::path& inner, const std::filesystem::path& outer) {
    std::error_code ec;
    const auto a = std::filesystem::weakly_canonical(inner, ec);
    const auto b = std::filesystem::weakly_canonical(outer, ec);
    return std::mismatch(b.begin(), b.end(), a.begin(), a.end()).first == b.end();
}

bool samePath(const QString& a, const QString& b) {
    std::error_code ec;
    return std::filesystem::weakly_canonical(a.toStdString(), ec) ==
           std::filesystem::weakly_canonical(b.toStdString(), ec);
}

}  // namespace

ExportPanel::ExportPanel(QWidget* parent)
    : QWidget(parent),
      method_(new QComboBox(this)),
      format_(new QComboBox(this)),
      formatInfo_(new QLabel(this)),
      size_(new QLabel(this)),
      destination_(new QLineEdit(this)),
      problem_(new QLabel(this)),
      progress_(new QProgressBar(this)),
      export_(new QPushButton(tr("Export"), this)),
      open_(new QPushButton(tr("Open for inspection"), this)) {
    formatInfo_->setWordWrap(true);
    problem_->setWordWrap(true);
    progress_->setRange(0, 1000);
    destination_->setPlaceholderText(tr("a new folder"));
    auto* browse = new QAction(style()->standardIcon(QStyle::SP_DirOpenIcon), tr("Choose a folder…"), destination_);
    destination_->addAction(browse, QLineEdit::TrailingPosition);
    connect(browse, &QAction::triggered, this, &ExportPanel::chooseDestination);

    auto* form = new QFormLayout;
    form->addRow(tr("Result:"), method_);
    form->addRow(tr("Format:"), format_);
    form->addRow(formatInfo_);
    form->addRow(tr("Size:"), size_);
    form->addRow(tr("Destination:"), destination_);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(export_);
    buttons->addWidget(open_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(problem_);
    layout->addWidget(progress_);
    layout->addLayout(buttons);
    layout->addStretch(1);

    connect(method_, &QComboBox::currentIndexChanged, this, [this] {
        fillFormats();
        leaveWrittenDestination();
    });
    connect(format_, &QComboBox::currentIndexChanged, this, [this] {
        updateRefusal();
        leaveWrittenDestination();
        updateState();
    });
    connect(destination_, &QLineEdit::textChanged, this, &ExportPanel::updateState);
    connect(export_, &QPushButton::clicked, this, &ExportPanel::startExport);
    connect(open_, &QPushButton::clicked, this, [this] { emit openRequested(written_); });
    connect(&runner_, &JobRunner::busyChanged, this, &ExportPanel::updateState);
    progressTimer_.setInterval(kProgressPollMs);
    connect(&progressTimer_, &QTimer::timeout, this,
            [this] { progress_->setValue(static_cast<int>(1000.0 * fraction_->load())); });
    fillMethods();
}

void ExportPanel::setSource(const QString& checkpointPath, io::CheckpointFingerprint fingerprint) {
    source_ = checkpointPath;
    sourceFingerprint_ = std::move(fingerprint);
    setResult(nullptr);
}

void ExportPanel::setResult(JobResultPtr result) {
    runner_.cancel();
    sizes_.cancel();
    result_ = std::move(result);
    storedRefusals_.clear();
    measured_.clear();
    written_.clear();
    writtenMethod_ = nullptr;
    fillMethods();
}

void ExportPanel::setDestination(const QString& folder) { destination_->setText(folder); }

bool ExportPanel::selectMethod(const QString& label) {
    const int at = method_->findText(label);
    if (at >= 0) method_->setCurrentIndex(at);
    return at >= 0;
}

bool ExportPanel::selectFormat(const QString& name) {
    const int at = format_->findData(name);
    if (at >= 0) format_->setCurrentIndex(at);
    return at >= 0;
}

const pipeline::MethodResult* ExportPanel::method() const {
    const int i = method_->currentData().toInt();
    if (!result_ || method_->currentIndex() < 0 || i < 0 || i >= static_cast<int>(result_->methods.size()))
        return nullptr;
    return &result_->methods[static_cast<std::size_t>(i)];
}

const formats::LinearEncoder* ExportPanel::encoder() const {
    const std::string name = format_->currentData().toString().toStdString();
    for (const formats::LinearEncoder* e : formats::allEncoders())
        if (e->name() == name) return e;
    return nullptr;
}

void ExportPanel::fillMethods() {
    const QSignalBlocker block(method_);
    method_->clear();
    if (result_)
        for (std::size_t i = 0; i < result_->methods.size(); ++i)
            if (result_->methods[i].error.empty())
                method_->addItem(methodLabel(result_->methods[i]), static_cast<int>(i));
    fillFormats();
}

// The method's default layout first, then every other layout that takes all of its linears.
void ExportPanel::fillFormats() {
    const QSignalBlocker block(format_);
    format_->clear();
    const pipeline::MethodResult* m = method();
    const quant::QuantizedLinear* first = m ? firstLinear(*m) : nullptr;
    if (first && m->method.gguf()) {
        // Its only format; who loads it is in the description below (the combo is too narrow for it).
        format_->addItem(tr("GGUF (default)"), kGgufFormat);
        format_->setItemData(0, tr("GGUF (llama.cpp, Ollama, LM Studio)"), Qt::ToolTipRole);
    } else if (first && m->mixed) {
        // A mix of methods: ct-mixed first, as the CLI's quantize --target-bpw writes it; then every
        // other layout, those that cannot carry this mix saying why when chosen (gptq and gptq_v2
        // carry a mix of bit widths as `dynamic`).
        const formats::LinearEncoder& preferred = formats::encoderNamed("ct-mixed");
        format_->addItem(tr("%1 (default)").arg(QString::fromUtf8(preferred.name())),
                         QString::fromUtf8(preferred.name()));
        for (const formats::LinearEncoder* e : formats::allEncoders())
            if (e != &preferred) format_->addItem(QString::fromUtf8(e->name()), QString::fromUtf8(e->name()));
    } else if (first) {
        const formats::LinearEncoder& preferred = formats::defaultEncoderFor(*first);
        format_->addItem(tr("%1 (default)").arg(QString::fromUtf8(preferred.name())),
                         QString::fromUtf8(preferred.name()));
        std::vector<const formats::LinearEncoder*> others = formats::allEncoders();
        std::erase(others, &preferred);
        // A result on disk is read layer by layer from its work folder (gigabytes for a large model):
        // on the worker, while the panel says it is checking and Export waits.
        if (m->stored) return checkStoredResult(std::move(others));
        for (const auto& [e, why] : refusalsOf(others, *m))
            if (why.isEmpty()) format_->addItem(QString::fromUtf8(e->name()), QString::fromUtf8(e->name()));
    }
    updateRefusal();
    updateState();
}

// Every layout's refusal of a result on disk, from one read of its layers on the worker: the other layouts
// that take it are offered, the chosen one's answer shown, and all of them kept for when they are chosen.
void ExportPanel::checkStoredResult(std::vector<const formats::LinearEncoder*> others) {
    const formats::LinearEncoder* chosen = encoder();
    updateSize();
    checking_ = true;
    refusal_.clear();
    updateState();
    std::vector<const formats::LinearEncoder*> all = std::move(others);
    if (chosen) all.insert(all.begin(), chosen);
    checks_.start(
        [result = result_, m = method(), all](const CancelToken& token) { return refusalsOf(all, *m, token); },
        [this, m = method(), chosen](const std::vector<std::pair<const formats::LinearEncoder*, QString>>& found) {
            const QSignalBlocker blocker(format_);  // the chosen (default) layout stays chosen
            for (const auto& [e, why] : found) {
                storedRefusals_[{m, e}] = why;
                if (e != chosen && why.isEmpty())
                    format_->addItem(QString::fromUtf8(e->name()), QString::fromUtf8(e->name()));
            }
            finishCheck(chosen ? storedRefusals_[{m, chosen}] : QString());
        },
        [this](const QString& message) { finishCheck(message); });
}

// The worker's answer (or why it could not give one, which then refuses the export too).
void ExportPanel::finishCheck(const QString& refusal) {
    refusal_ = refusal;
    checking_ = false;
    updateState();
}

QString ExportPanel::formatName() const { return format_->currentData().toString(); }

bool ExportPanel::ggufChosen() const { return format_->currentData().toString() == kGgufFormat; }

QString ExportPanel::formatText() const {
    if (ggufChosen())
        return tr(
            "One .gguf file: every linear in the ggml types of the result, token_embd and output as llama-quantize "
            "chooses them, the architecture's metadata and the tokenizer. Loaded by llama.cpp, Ollama and LM Studio.");
    const formats::LinearEncoder* e = encoder();
    return e ? QString::fromUtf8(e->description()) : QString();
}

QString ExportPanel::sizeText() const {
    const pipeline::MethodResult* m = method();
    if (!m) return QStringLiteral("–");
    if (const auto bytes = measuredSize()) return tr("%1 (%2)").arg(humanBytes(bytes->tensorFiles), bitsLabel(*m));
    return tr("about %1 (%2)").arg(humanBytes(m->checkpointBytes), bitsLabel(*m));
}

QString ExportPanel::sizeToolTip() const {
    if (const auto bytes = measuredSize())
        return ggufChosen() ? tr("The .gguf file as it is written (measured before writing: metadata, tokenizer and "
                                 "every tensor in its ggml type).")
                            : tr("The .safetensors files as this layout writes them (measured before writing: every "
                                 "part it stores, headers included). config.json, the tokenizer and the report add %1.")
                                  .arg(humanBytes(bytes->otherFiles));
    return isMeasuring() ? tr("The method's bits and the tensors kept; measuring what this layout writes…")
                         : tr("The method's bits and the tensors kept (the layout's own parts are not counted).");
}

std::optional<io::WrittenBytes> ExportPanel::measuredSize() const {
    const auto it = measured_.find({method(), formatName()});
    return it == measured_.end() ? std::nullopt : std::optional(it->second);
}

void ExportPanel::updateSize() {
    sizes_.cancel();
    const pipeline::MethodResult* m = method();
    const QString format = formatName();
    if (!m || !(encoder() || ggufChosen()) || measured_.contains({m, format})) return;
    pipeline::ExportRequest request;
    request.source = source_.toStdString();
    request.format = format.toStdString();
    if (settings_) request.settings = settings_(*m);
    sizes_.start(
        [result = result_, m, request, gguf = ggufChosen()](const CancelToken& token) {
            if (gguf)
                return io::WrittenBytes{pipeline::measureGgufResult(io::Checkpoint::open(request.source), *m, {})};
            return pipeline::measureExport(request, *m, token);
        },
        [this, m, format](const io::WrittenBytes& bytes) {
            measured_[{m, format}] = bytes;
            updateState();
        },
        [](const QString&) {});  // a layout that refuses the result says why itself; the size stays the estimate
}

QString ExportPanel::problem() const {
    if (!result_) return tr("Run a quantization job first: its results are what is exported.");
    if (!method()) return tr("No method of the last job succeeded.");
    if (const std::string why = pipeline::sourceMismatch(*method(), sourceFingerprint_); !why.empty())
        return QString::fromStdString(why);
    if (!encoder() && !ggufChosen()) return tr("No format takes this result.");
    if (!refusal_.isEmpty()) return refusal_;
    // What is wrong with the destination is known at once; the worker's check comes after it.
    if (const QString why = destinationProblem(); !why.isEmpty() || !checking_) return why;
    return checkingText();
}

QString ExportPanel::destinationProblem() const {
    const QString folder = destination_->text().trimmed();
    if (folder.isEmpty())
        return ggufChosen() ? tr("Choose a destination .gguf file.") : tr("Choose a destination folder.");
    if (ggufChosen() && !folder.endsWith(QStringLiteral(".gguf")))
        return tr("A GGUF destination is a file ending in .gguf.");
    std::filesystem::path sourceFolder = source_.toStdString();
    if (!std::filesystem::is_directory(sourceFolder)) sourceFolder = sourceFolder.parent_path();
    if (isWithin(folder.toStdString(), sourceFolder))
        return tr("The destination is in the source checkpoint's folder; QuantScope never writes there.");
    if (std::filesystem::exists(folder.toStdString()))
        return ggufChosen() ? tr("%1 exists; choose a new file.").arg(folder)
                            : tr("%1 exists; choose a new folder.").arg(folder);
    return {};
}

// What the panel says that is not a problem: what it just wrote, or the folders Export will create.
QString ExportPanel::note() const {
    const QString destination = destination_->text().trimmed();
    if (destination.isEmpty()) return {};
    if (!written_.isEmpty() && samePath(written_, destination)) return tr("Written to %1.").arg(written_);
    const std::filesystem::path parent = std::filesystem::path(destination.toStdString()).parent_path();
    if (problem().isEmpty() && !parent.empty() && !std::filesystem::exists(parent))
        return tr("%1 does not exist yet: Export creates it.").arg(QString::fromStdString(parent.string()));
    return {};
}

QString ExportPanel::checkingText() const {
    return tr("Checking that %1 holds every linear (reading the result's layers from its run folder)…")
        .arg(formatName());
}

QString ExportPanel::shownText() const { return problem_->isHidden() ? QString() : problem_->text(); }

// The core's one line on why the chosen layout cannot hold the chosen result (a linear's method, or
// what the layout's config states once for the whole model); asked once per choice, not per keystroke.
void ExportPanel::updateRefusal() {
    const pipeline::MethodResult* m = method();
    const formats::LinearEncoder* e = encoder();
    refusal_.clear();
    checks_.cancel();
    checking_ = false;
    updateSize();
    if (!m || !e || ggufChosen()) return;
    if (!m->stored) {
        refusal_ = QString::fromStdString(pipeline::exportRefusal(*m, *e));
        return;
    }
    if (const auto known = storedRefusals_.find({m, e}); known != storedRefusals_.end()) {
        refusal_ = known->second;  // found before, for this result and layout
        return;
    }
    checking_ = true;  // a result on disk: its layers are read on the worker
    checks_.start(
        [result = result_, m, e](const CancelToken& token) {
            return QString::fromStdString(pipeline::exportRefusal(*m, *e, token));
        },
        [this, m, e](const QString& refusal) {
            storedRefusals_[{m, e}] = refusal;
            finishCheck(refusal);
        },
        [this](const QString& message) { finishCheck(message); });
}

void ExportPanel::updateState() {
    destination_->setPlaceholderText(ggufChosen() ? tr("a new .gguf file") : tr("a new folder"));
    formatInfo_->setText(formatText());
    size_->setText(sizeText());
    size_->setToolTip(sizeToolTip());
    const QString why = problem();
    const QString note = this->note();
    // After an export its destination exists: that is what was written, not a problem in red.
    const bool justWritten = !written_.isEmpty() && samePath(written_, destination_->text().trimmed());
    const bool waiting = checking_ && why == checkingText();  // not a problem: the worker's answer is coming
    problem_->setStyleSheet(justWritten || why.isEmpty() || waiting ? QString() : QStringLiteral("color:#b03030"));
    problem_->setText(justWritten || why.isEmpty() ? note : why);
    problem_->setVisible(!problem_->text().isEmpty() && !isExporting());
    export_->setEnabled(why.isEmpty() && !isExporting());
    progress_->setVisible(isExporting());
    open_->setVisible(showsWritten() && !isExporting());
}

bool ExportPanel::showsWritten() const {
    return !written_.isEmpty() && method() == writtenMethod_ && formatName() == writtenFormat_;
}

// Another method or layout chosen after an export: the folder just written is not its destination
// (it would only say "exists"), and "Open for inspection" would open the other result's export.
void ExportPanel::leaveWrittenDestination() {
    if (!written_.isEmpty() && !showsWritten() && samePath(written_, destination_->text().trimmed()))
        destination_->clear();
    updateState();
}

void ExportPanel::chooseDestination() {
    const QString folder = ggufChosen()
                               ? QFileDialog::getSaveFileName(this, tr("Export to a new .gguf file"),
                                                              destination_->text(), tr("GGUF (*.gguf)"))
                               : QFileDialog::getSaveFileName(this, tr("Export to a new folder"), destination_->text());
    if (!folder.isEmpty()) destination_->setText(folder);
}

void ExportPanel::startExport() {
    const pipeline::MethodResult* m = method();
    if (!m || !problem().isEmpty()) return;
    pipeline::ExportRequest request;
    request.source = source_.toStdString();
    request.destination = destination_->text().trimmed().toStdString();
    request.format = formatName().toStdString();
    if (settings_) request.settings = settings_(*m);
    fraction_->store(0.0);
    progressTimer_.start();
    runner_.start(
        [request, result = result_, m, fraction = fraction_, gguf = ggufChosen()](const qs::CancelToken& token) {
            const auto progress = [fraction](const qs::Progress& p) { fraction->store(p.fraction); };
            // The panel said a missing parent folder would be created; the writers need it to exist.
            if (const auto parent = request.destination.parent_path(); !parent.empty())
                std::filesystem::create_directories(parent);
            if (gguf)
                return QString::fromStdString(pipeline::writeGgufResult(io::Checkpoint::open(request.source), *m,
                                                                        request.destination, {}, progress, token)
                                                  .string());
            return QString::fromStdString(pipeline::exportCheckpoint(request, *m, progress, token).string());
        },
        [this](const QString& folder) { onExported(folder); },
        [this](const QString& message) {
            progressTimer_.stop();
            emit failed(message);
        });
}

void ExportPanel::onExported(const QString& folder) {
    progressTimer_.stop();
    written_ = folder;
    writtenMethod_ = method();
    writtenFormat_ = formatName();
    emit exported(folder);
    updateState();
}

}  // namespace qs::gui
