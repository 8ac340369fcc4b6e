#include "panels/quantize_panel.h"

#include <algorithm>
#include <array>
#include <map>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStyle>
#include <QVBoxLayout>

#include "qs/model/bf16_layer_math.h"
#include "qs/pipeline/gguf_type_mix.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/method_spec.h"

#include "jobs/run_plan.h"
#include "panels/forward_pass_support.h"
#include "panels/spin_box.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

// Without the CUDA backend in the build, CUDA is shown but cannot be chosen.
#if defined(QS_WITH_CUDA_BACKEND)
constexpr bool kCudaBackendLinked = true;
#else
constexpr bool kCudaBackendLinked = false;
#endif
constexpr int kEstimateDelayMs = 250;  // one estimate per burst of edits, not per keystroke

struct MethodRowSpec {
    const char* label;
    const char* prefix;
    const char* suffix;
    int bits;  // 0: a fixed format, no bits to choose
    bool grouped;
    bool checked;
};

constexpr std::array<MethodRowSpec, 18> kMethodRows{{
    {"RTN", "rtn", "", 4, true, true},
    {"GPTQ", "gptq", "", 4, true, false},
    {"GPTQ act-order", "gptq", "-act", 4, true, false},
    {"GPTAQ", "gptaq", "", 4, true, false},
    {"AWQ", "awq", "", 4, true, false},
    {"FP8 E4M3", "fp8", "", 0, false, true},
    // The inputs quantized too, as the engine's FP8 / FP4 GEMMs do (static scales calibrated here).
    {"FP8 W8A8", "fp8", "-w8a8", 0, false, false},
    {"FP8 W8A8 per token", "fp8", "-w8a8-dynamic", 0, false, false},
    {"MXFP4", "mxfp4", "", 0, false, false},
    {"NVFP4", "nvfp4", "", 0, false, false},
    {"NVFP4 W4A4", "nvfp4", "-w4a4", 0, false, false},
    {"NF4", "nf4", "", 0, false, false},
    {"Trellis", "trellis", "", 2, false, false},
    {"Trellis", "trellis", "", 3, false, false},
    // llama-quantize's file types: a GGUF file for llama.cpp, Ollama and LM Studio.
    {"GGUF Q4_K_M", "q4_k_m", "", 0, false, false},
    {"GGUF Q5_K_M", "q5_k_m", "", 0, false, false},
    {"GGUF Q6_K", "q6_k", "", 0, false, false},
    {"GGUF Q8_0", "q8_0", "", 0, false, false},
}};

// The tooltip of a GGUF row: llama.cpp's mix and who loads the file.
QString ggufTooltip(const char* prefix) {
    const pipeline::GgufFileType* type = pipeline::ggufFileTypeNamed(prefix);
    if (type == nullptr) return {};
    return QObject::tr(
               "%1 as llama-quantize makes it: %2. Importance-weighted by the calibration text (its imatrix). "
               "Exported as a GGUF file for llama.cpp, Ollama and LM Studio.")
        .arg(QString::fromUtf8(type->name.data(), qsizetype(type->name.size())),
             QString::fromUtf8(type->description.data(), qsizetype(type->description.size())));
}

// What a method row runs, for its tooltip; a method without a sentence here is described by its
// label (pipeline::MethodSpec::label), so rows added to the list are never bare.
QString methodTooltip(const std::string& prefix, const std::string& suffix, const std::string& name) {
    static const std::map<std::string, const char*> kSentences{
        {"rtn",
         QT_TRANSLATE_NOOP("QuantizePanel",
                           "Round to nearest: each group's weights on an integer grid, no calibration. The baseline.")},
        {"gptq",
         QT_TRANSLATE_NOOP("QuantizePanel",
                           "GPTQ: rounds column by column and corrects the rest with the Hessian of the calibration "
                           "inputs. Loaded by vLLM and transformers.")},
        {"gptaq",
         QT_TRANSLATE_NOOP("QuantizePanel",
                           "GPTAQ: GPTQ that also corrects towards the full-precision model's inputs, which the "
                           "quantized model's drift from. Exported as GPTQ; runs on the CPU.")},
        {"awq", QT_TRANSLATE_NOOP("QuantizePanel",
                                  "AWQ: scales the input channels that carry large activations before rounding to "
                                  "protect them. Loaded by vLLM and transformers.")},
        {"fp8",
         QT_TRANSLATE_NOOP("QuantizePanel", "FP8 E4M3 weights with one scale per 128x128 block, no calibration.")},
        {"mxfp4", QT_TRANSLATE_NOOP("QuantizePanel",
                                    "MXFP4 (OCP microscaling): FP4 E2M1 values, one power-of-two scale per 32.")},
        {"nvfp4", QT_TRANSLATE_NOOP("QuantizePanel",
                                    "NVFP4: FP4 E2M1 values, an FP8 scale per 16 and a global scale (Blackwell).")},
        {"fp8-w8a8",
         QT_TRANSLATE_NOOP("QuantizePanel",
                           "FP8 W8A8: E4M3 weights with one scale per tensor, and every linear's input "
                           "quantized to E4M3 with a static scale calibrated here (vLLM fp8, ModelOpt FP8).")},
        {"fp8-w8a8-dynamic", QT_TRANSLATE_NOOP("QuantizePanel",
                                               "FP8 W8A8 with per-channel weight scales and inputs scaled per token "
                                               "at run time (compressed-tensors FP8_DYNAMIC).")},
        {"nvfp4-w4a4",
         QT_TRANSLATE_NOOP("QuantizePanel",
                           "NVFP4 W4A4: NVFP4 weights, and inputs quantized to NVFP4 under a global scale "
                           "calibrated here (ModelOpt NVFP4, compressed-tensors NVFP4).")},
        {"nf4", QT_TRANSLATE_NOOP("QuantizePanel",
                                  "NF4 (bitsandbytes, QLoRA): 16 levels at normal quantiles, one scale per 64.")},
        {"trellis", QT_TRANSLATE_NOOP("QuantizePanel",
                                      "Trellis-coded quantization (QTIP / EXL3 style) after a Hadamard rotation: "
                                      "1 to 4 bits per weight.")},
    };
    auto it = kSentences.find(prefix + suffix);  // a variant's own sentence ("fp8-w8a8"), else its family's
    if (it == kSentences.end()) it = kSentences.find(prefix);
    if (it != kSentences.end()) return QCoreApplication::translate("QuantizePanel", it->second);
    try {
        return QString::fromStdString(pipeline::parseMethod(name).label());
    } catch (const std::exception&) {
        return QString::fromStdString(name);
    }
}

QComboBox* groupSizeBox(QWidget* parent) {
    auto* box = new QComboBox(parent);
    for (int size : {32, 64, 128, 256}) box->addItem(QString::number(size), size);
    box->addItem(QObject::tr("per row"), -1);
    box->setCurrentIndex(2);
    return box;
}

}  // namespace

std::string QuantizePanel::MethodRow::name() const {
    return prefix + (variableBits ? std::to_string(bits->value()) : std::string()) + suffix;
}

// The settings scroll (a 768-pixel laptop screen has no room for all of them); the estimate and
// Start stay below them, always in view.
QuantizePanel::QuantizePanel(QWidget* parent) : QWidget(parent) {
    auto* content = new QWidget(this);
    auto* settingsLayout = new QVBoxLayout(content);
    settingsLayout->setContentsMargins(0, 0, 0, 0);
    settingsLayout->addWidget(createMethods());
    settingsLayout->addWidget(createTexts());
    settingsLayout->addWidget(createRun());
    settingsLayout->addStretch(1);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("quantizeSettingsScroll"));
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // Only the height scrolls: the settings' full width is the panel's minimum.
    scroll->setMinimumWidth(content->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width());
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(scroll, 1);
    layout->addLayout(createFooter());
    debounce_.setSingleShot(true);
    debounce_.setInterval(kEstimateDelayMs);
    connect(&debounce_, &QTimer::timeout, this, &QuantizePanel::computeEstimate);
    updateStartButton();
    defaults_ = state();
}

QWidget* QuantizePanel::createMethods() {
    auto* box = new QGroupBox(tr("Methods"), this);
    auto* grid = new QGridLayout(box);
    // Above the rows, what the checkpoint means for them: its architecture rules some out; a quantized
    // checkpoint is quantized from its decoded weights.
    auto* notes = new QVBoxLayout;
    notes->setContentsMargins(0, 0, 0, 0);
    architectureNote_ = new QLabel(box);  // what the model's architecture rules out, and why
    sourceNote_ = new QLabel(box);
    sourceNote_->setObjectName(QStringLiteral("sourceNote"));
    for (QLabel* note : {architectureNote_, sourceNote_}) {
        note->setWordWrap(true);
        note->setTextFormat(Qt::RichText);
        note->setTextInteractionFlags(Qt::TextSelectableByMouse);
        note->hide();
        notes->addWidget(note);
    }
    sourceNote_->setTextFormat(Qt::PlainText);  // the CLI's line, as it prints it
    grid->addLayout(notes, 0, 0, 1, 3);
    grid->addWidget(new QLabel(tr("bits"), box), 1, 1);
    grid->addWidget(new QLabel(tr("group"), box), 1, 2);
    // Methods without bits or group to choose go two to a line (the second under "bits"), so the
    // GGUF rows leave the panel as tall as it was and the window fits 900 pixels.
    bool pairOpen = false;
    for (const MethodRowSpec& spec : kMethodRows) {
        const bool fixed = spec.bits == 0 && !spec.grouped;
        const bool second = fixed && pairOpen;
        pairOpen = fixed && !second;
        const int at = second ? grid->rowCount() - 1 : grid->rowCount();
        MethodRow row;
        row.prefix = spec.prefix;
        row.suffix = spec.suffix;
        row.variableBits = spec.bits > 0;
        // Rows of one method (two Trellis rows, to compare two widths in one job) are told apart.
        const auto alike =
            std::count_if(rows_.begin(), rows_.end(), [&](const MethodRow& r) { return r.label == spec.label; });
        row.label = spec.label;
        const auto lettered = [&](int n) { return QStringLiteral("%1 (%2)").arg(tr(spec.label)).arg(QChar(u'a' + n)); };
        row.check = new QCheckBox(alike == 0 ? tr(spec.label) : lettered(static_cast<int>(alike)), box);
        if (alike == 1)
            for (MethodRow& r : rows_)
                if (r.label == spec.label) r.check->setText(lettered(0));
        row.check->setChecked(spec.checked);
        const QString gguf = ggufTooltip(spec.prefix);
        row.tooltip = !gguf.isEmpty()
                          ? gguf
                          : methodTooltip(spec.prefix, spec.suffix,
                                          spec.prefix + (spec.bits > 0 ? std::to_string(spec.bits) : std::string()) +
                                              spec.suffix);
        row.check->setToolTip(row.tooltip);
        if (second)
            grid->addWidget(row.check, at, 1, 1, 2);
        else
            grid->addWidget(row.check, at, 0);
        connect(row.check, &QCheckBox::toggled, this, &QuantizePanel::scheduleEstimate);
        connect(row.check, &QCheckBox::toggled, this, &QuantizePanel::updateStartButton);
        if (row.variableBits) {
            const bool trellis = row.prefix == "trellis";
            row.bits = makeSpinBox(trellis ? 1 : 2, trellis ? 4 : 8, spec.bits, box);
            row.bits->setToolTip(tr("Bits per weight of the codes"));
            grid->addWidget(row.bits, at, 1);
            connect(row.bits, &QSpinBox::valueChanged, this, &QuantizePanel::scheduleEstimate);
        }
        if (spec.grouped) {
            row.group = groupSizeBox(box);
            row.group->setToolTip(
                tr("Input columns that share one scale (and zero point); per row: one for the whole row"));
            grid->addWidget(row.group, at, 2);
            connect(row.group, &QComboBox::currentIndexChanged, this, &QuantizePanel::scheduleEstimate);
        }
        rows_.push_back(row);
    }
    grid->setColumnStretch(0, 1);
    return box;
}

QLineEdit* QuantizePanel::createFileField(const QString& placeholder) {
    auto* edit = new QLineEdit(this);
    edit->setPlaceholderText(placeholder);
    edit->setClearButtonEnabled(true);
    auto* browse = new QAction(tr("Choose a text file…"), edit);
    browse->setIcon(style()->standardIcon(QStyle::SP_DirOpenIcon));
    edit->addAction(browse, QLineEdit::TrailingPosition);
    connect(browse, &QAction::triggered, this, [this, edit] {
        const QString file =
            QFileDialog::getOpenFileName(this, tr("Text file"), edit->text(), tr("Text (*.txt *.json);;All files (*)"));
        if (!file.isEmpty()) edit->setText(file);
    });
    connect(edit, &QLineEdit::textChanged, this, [this] { scheduleEstimate(); });
    return edit;
}

QWidget* QuantizePanel::createTexts() {
    auto* box = new QGroupBox(tr("Calibration and evaluation"), this);
    auto* form = new QFormLayout(box);
    const QString bundled = tr("bundled (beside the checkpoint, else the demo's)");
    calibrationFile_ = createFileField(bundled);
    evaluationFile_ = createFileField(bundled);
    samples_ = makeSpinBox(1, 4096, 16, box);
    sequenceLength_ = makeSpinBox(8, 8192, 128, box);
    evaluationSamples_ = makeSpinBox(1, 4096, 8, box);
    calibrationFile_->setToolTip(
        tr("Text the model reads to measure its activations (GPTQ's Hessian, AWQ's scales): a UTF-8 "
           "file or a JSON list of strings. Empty: the text beside the checkpoint, else the demo's."));
    evaluationFile_->setToolTip(tr("Held-out text on which each method's KL divergence from the original is measured"));
    samples_->setToolTip(tr("Calibration sequences: more give steadier statistics and take longer"));
    sequenceLength_->setToolTip(tr("Tokens per calibration and evaluation sequence"));
    evaluationSamples_->setToolTip(tr("Evaluation sequences for the KL divergence"));
    form->addRow(tr("Calibration text:"), calibrationFile_);
    form->addRow(tr("Samples:"), samples_);
    form->addRow(tr("Sequence length:"), sequenceLength_);
    form->addRow(tr("Evaluation text:"), evaluationFile_);
    form->addRow(tr("Evaluation samples:"), evaluationSamples_);
    for (QSpinBox* spin : {samples_, sequenceLength_, evaluationSamples_})
        connect(spin, &QSpinBox::valueChanged, this, &QuantizePanel::scheduleEstimate);
    return box;
}

QWidget* QuantizePanel::createRun() {
    auto* box = new QGroupBox(tr("Run"), this);
    auto* form = new QFormLayout(box);
    device_ = new QComboBox(box);
    device_->setObjectName(QStringLiteral("device"));
    device_->addItem(tr("Auto"), static_cast<int>(pipeline::DeviceChoice::Auto));
    device_->addItem(tr("CPU"), static_cast<int>(pipeline::DeviceChoice::Cpu));
    device_->addItem(tr("CUDA"), static_cast<int>(pipeline::DeviceChoice::Cuda));
    // CUDA can be chosen once the device probe (DeviceProbe, on a worker) says it passed its start-up check.
    QStandardItem* cuda = qobject_cast<QStandardItemModel*>(device_->model())->item(2);
    cuda->setEnabled(false);
    if (!kCudaBackendLinked) {
        cuda->setToolTip(tr("This build of QuantScope has no CUDA backend; jobs run on the CPU."));
    } else {
        cuda->setText(tr("CUDA (probing…)"));
        cuda->setToolTip(tr("Checking the GPU against the CPU…"));
    }
    device_->setToolTip(cuda->toolTip());
    connect(device_, &QComboBox::currentIndexChanged, this, [this] {
        scheduleEstimate();
        emit deviceChosen(settings().device);
    });
    matmul_ = new QComboBox(box);
    matmul_->setObjectName(QStringLiteral("matmul"));
    matmul_->addItem(model::cpuRunsBf16Natively() ? tr("Auto (BF16 on this CPU)") : tr("Auto (f32 on this CPU)"),
                     static_cast<int>(pipeline::MatmulChoice::Auto));
    matmul_->addItem(tr("BF16"), static_cast<int>(pipeline::MatmulChoice::Bf16));
    matmul_->addItem(tr("f32"), static_cast<int>(pipeline::MatmulChoice::F32));
    matmul_->setToolTip(
        tr("The calibration forward passes' matrix products and the Hessians' (XᵀX): BF16 with f32 "
           "accumulation runs 2-4x faster where the CPU multiplies BF16 natively (AVX512-BF16, AMX); the KL's "
           "passes stay f32. On a CUDA device the passes run in f32."));
    connect(matmul_, &QComboBox::currentIndexChanged, this, &QuantizePanel::scheduleEstimate);
    perLayerKl_ = new QCheckBox(tr("Per-layer KL (one layer quantized at a time)"), box);
    perLayerKl_->setToolTip(
        tr("Also measure the KL with only one layer quantized at a time, to find the fragile layers "
           "(one more evaluation per layer)"));
    connect(perLayerKl_, &QCheckBox::toggled, this, &QuantizePanel::scheduleEstimate);
    kvCacheFp8_ = new QCheckBox(tr("KV cache in FP8 (k/v scales calibrated per layer)"), box);
    kvCacheFp8_->setObjectName(QStringLiteral("kvCacheFp8"));
    kvCacheFp8_->setToolTip(
        tr("Measures and exports every safetensors method with an FP8 E4M3 KV cache, as vLLM runs it with "
           "--kv-cache-dtype fp8; the Results add the cache's damage alone. GGUF methods keep llama.cpp's "
           "cache, chosen when it runs."));
    connect(kvCacheFp8_, &QCheckBox::toggled, this, &QuantizePanel::scheduleEstimate);
    // A short label: the settings' width is the panel's minimum, and the pages beside it need theirs.
    rotate_ = new QCheckBox(tr("Rotate before quantizing (Hadamard)"), box);
    rotate_->setObjectName(QStringLiteral("rotate"));
    rotate_->setToolTip(
        tr("QuaRot's rotations: the residual stream and each head's values turned by seeded Hadamard "
           "matrices folded into the weights, so the model computes the same logits while its linears' "
           "outliers are spread over all their inputs. The export is an ordinary checkpoint of the same "
           "architecture (lm_head untied). Llama, Mistral, Qwen2/3, Qwen3-MoE and Mixtral."));
    connect(rotate_, &QCheckBox::toggled, this, &QuantizePanel::scheduleEstimate);
    allExperts_ = new QCheckBox(tr("Calibrate every expert on every token"), box);
    allExperts_->setObjectName(QStringLiteral("moeCalibrateAllExperts"));
    allExperts_->setChecked(true);
    allExperts_->setToolTip(
        tr("Each expert's Hessian and statistics come from every calibration token, while the forward pass "
           "still routes as the model does. Off, an expert sees only the tokens its router sends it: a "
           "rarely chosen expert is then quantized from a handful of tokens (starved; the Tokens per "
           "expert tab outlines it). On takes longer: every expert's Hessian gathers every token."));
    allExperts_->hide();
    connect(allExperts_, &QCheckBox::toggled, this, &QuantizePanel::scheduleEstimate);
    form->addRow(tr("Device:"), device_);
    form->addRow(tr("Matmuls:"), matmul_);
    form->addRow(perLayerKl_);
    form->addRow(kvCacheFp8_);
    form->addRow(rotate_);
    form->addRow(allExperts_);
    useImatrix_ = new QCheckBox(box);
    useImatrix_->setObjectName(QStringLiteral("useImatrix"));
    useImatrix_->setChecked(true);
    useImatrix_->setToolTip(tr("Open an imatrix (File ▸ Open imatrix…) for the GGUF methods to weigh by"));
    useImatrix_->hide();  // until an imatrix is open (setImatrix)
    connect(useImatrix_, &QCheckBox::toggled, this, &QuantizePanel::scheduleEstimate);
    form->addRow(useImatrix_);
    return box;
}

QLayout* QuantizePanel::createFooter() {
    estimateLabel_ = new QLabel(tr("Open a checkpoint to quantize it."), this);
    estimateLabel_->setWordWrap(true);
    estimateLabel_->setTextFormat(Qt::RichText);
    start_ = new QPushButton(tr("Start"), this);
    start_->setObjectName(QStringLiteral("start"));
    cancel_ = new QPushButton(tr("Cancel"), this);
    cancel_->setEnabled(false);
    cancel_->setToolTip(tr("Stop the running job; nothing it has done is kept"));
    connect(start_, &QPushButton::clicked, this, &QuantizePanel::startRequested);
    connect(cancel_, &QPushButton::clicked, this, &QuantizePanel::cancelRequested);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(start_);
    buttons->addWidget(cancel_);
    auto* footer = new QVBoxLayout;
    footer->addWidget(estimateLabel_);
    footer->addLayout(buttons);
    return footer;
}

void QuantizePanel::setCheckpoint(const QString& path, const QString& refusal, const QString& forwardPassRefusal,
                                  bool hasExperts, const QString& sourceNote) {
    checkpoint_ = path;
    hasExperts_ = hasExperts;
    allExperts_->setVisible(hasExperts);
    forwardPassRefusal_ = refusal.isEmpty() ? forwardPassRefusal : QString();  // a quantized source is refused first
    refusal_ = !refusal.isEmpty() || forwardPassRefusal_.isEmpty()
                   ? refusal
                   : startRefusalWithoutForwardPass(forwardPassRefusal_);
    estimate_.reset();
    estimated_.reset();
    debounce_.stop();
    estimator_.cancel();
    allExperts_->setEnabled(refusal_.isEmpty());  // nothing to calibrate in an undecodable or unrunnable model
    sourceNote_->setText(sourceNote);
    sourceNote_->setToolTip(
        tr("Quantizing a quantized checkpoint adds the new rounding to its own: the KL shown is the new "
           "method's against this checkpoint, not against the model it was made from."));
    sourceNote_->setVisible(!sourceNote.isEmpty());
    showArchitectureSupport();
    updateStartButton();
    // Short: the whole reason is Start's tooltip (the footer never scrolls).
    if (!refusal.isEmpty())
        estimateLabel_->setText(QStringLiteral("<span style='color:#b03030'>%1</span>")
                                    .arg(tr("This checkpoint's quantized linears cannot be decoded, so there are no "
                                            "weights to quantize (Start's tooltip says why).")));
    else if (!forwardPassRefusal_.isEmpty())
        estimateLabel_->setText(QStringLiteral("<span style='color:#b03030'>%1</span>")
                                    .arg(tr("QuantScope cannot run this model, so no KL: weight-only methods from the "
                                            "command line only (Start's tooltip says how).")));
    scheduleEstimate();
}

// Without a forward pass, the rows of methods that read activations (or write GGUF) are off, each
// saying why; the weight-only rows stay, and the note above them says where they run.
void QuantizePanel::showArchitectureSupport() {
    for (MethodRow& row : rows_) {
        const QString why = forwardPassRefusal_.isEmpty() ? QString() : methodRefusalWithoutForwardPass(row.name());
        for (QWidget* control :
             {static_cast<QWidget*>(row.check), static_cast<QWidget*>(row.bits), static_cast<QWidget*>(row.group)})
            if (control) control->setEnabled(why.isEmpty());
        row.check->setToolTip(why.isEmpty() ? row.tooltip : tr("Not for this model: %1").arg(why));
    }
    architectureNote_->setVisible(!forwardPassRefusal_.isEmpty());
    architectureNote_->setText(
        tr("<b>No forward pass for this model</b>: %1. The methods that read its activations are off; the others "
           "quantize "
           "it from its weights alone with <tt>quantscope-cli quantize --weights-only</tt> (no KL; the panel has no "
           "weights-only run).")
            .arg(forwardPassRefusal_.toHtmlEscaped()));
}

QString QuantizePanel::sourceNote() const { return sourceNote_->isHidden() ? QString() : sourceNote_->text(); }

void QuantizePanel::setImatrix(const QString& path) {
    imatrix_ = path;
    useImatrix_->setVisible(!path.isEmpty());
    useImatrix_->setText(tr("GGUF methods weighed by %1").arg(QFileInfo(path).fileName()));
    useImatrix_->setToolTip(
        tr("The GGUF methods (q4_k_m, q6_k, ...) weigh each column's squared error by the open imatrix, %1, as "
           "llama-quantize --imatrix does; off, by the calibration text's Σx² (the other methods are not "
           "affected).")
            .arg(path));
    scheduleEstimate();
}

QuantizeSettings QuantizePanel::settings() const {
    QuantizeSettings s;
    for (const MethodRow& row : rows_) {
        if (!row.check->isChecked() || !row.check->isEnabled()) continue;  // off for this model: kept for the next
        s.methods.push_back({row.name(), row.group ? row.group->currentData().toInt() : 128});
    }
    s.calibrationFile = calibrationFile_->text().trimmed();
    s.samples = samples_->value();
    s.sequenceLength = sequenceLength_->value();
    s.evaluationFile = evaluationFile_->text().trimmed();
    s.evaluationSamples = evaluationSamples_->value();
    s.device = static_cast<pipeline::DeviceChoice>(device_->currentData().toInt());
    s.matmul = static_cast<pipeline::MatmulChoice>(matmul_->currentData().toInt());
    s.perLayerKl = perLayerKl_->isChecked();
    s.kvCacheFp8 = kvCacheFp8_->isChecked();
    s.rotate = rotate_->isChecked();
    if (!imatrix_.isEmpty() && useImatrix_->isChecked()) s.imatrixFile = imatrix_;
    s.moeCalibrateAllExperts =
        !hasExperts_ || allExperts_->isChecked();  // a dense model: the default, whatever is saved
    return s;
}

const QuantizePanel::MethodRow* QuantizePanel::rowNamed(const std::string& method) const {
    const auto it = std::find_if(rows_.begin(), rows_.end(), [&](const MethodRow& r) { return r.name() == method; });
    return it == rows_.end() ? nullptr : &*it;
}

bool QuantizePanel::methodAvailable(const std::string& method) const {
    const MethodRow* row = rowNamed(method);
    return row != nullptr && row->check->isEnabled();
}

QString QuantizePanel::methodToolTip(const std::string& method) const {
    const MethodRow* row = rowNamed(method);
    return row != nullptr ? row->check->toolTip() : QString();
}

bool QuantizePanel::selectMethods(const std::vector<std::string>& names) {
    std::size_t found = 0;
    for (MethodRow& row : rows_) {
        const bool wanted = std::find(names.begin(), names.end(), row.name()) != names.end();
        row.check->setChecked(wanted);
        found += wanted;
    }
    return found == names.size();
}

void QuantizePanel::setSampling(int samples, int sequenceLength, int evaluationSamples) {
    samples_->setValue(samples);
    sequenceLength_->setValue(sequenceLength);
    evaluationSamples_->setValue(evaluationSamples);
}

void QuantizePanel::setPerLayerKl(bool on) { perLayerKl_->setChecked(on); }

// The CUDA entry names the GPU and its free memory once the device has passed its start-up check
// against the CPU; otherwise it stays disabled and says why (Auto then runs on the CPU).
void QuantizePanel::showDevices(const DeviceReport& report) {
    if (!kCudaBackendLinked) return;
    QStandardItem* cuda = qobject_cast<QStandardItemModel*>(device_->model())->item(2);
    cuda->setText(report.cudaUsable ? report.cudaName : tr("CUDA (unavailable)"));
    cuda->setEnabled(report.cudaUsable);
    cuda->setToolTip(report.message);
    device_->setToolTip(report.message);
    if (cudaWanted_ && report.cudaUsable) device_->setCurrentIndex(2);  // as the last session left it
    cudaWanted_ = false;
}

bool QuantizePanel::cudaSelectable() const {
    const auto* model = qobject_cast<const QStandardItemModel*>(device_->model());
    return model->item(2)->isEnabled();
}

void QuantizePanel::setRunning(bool running) {
    running_ = running;
    cancel_->setEnabled(running);
    updateStartButton();
}

void QuantizePanel::updateStartButton() {
    const bool anyMethod = std::any_of(rows_.begin(), rows_.end(),
                                       [](const MethodRow& r) { return r.check->isChecked() && r.check->isEnabled(); });
    start_->setEnabled(!running_ && anyMethod && !checkpoint_.isEmpty() && refusal_.isEmpty());
    start_->setToolTip(refusal_.isEmpty()
                           ? tr("Quantize the open checkpoint with the ticked methods, then measure each one's KL "
                                "divergence from the original on the evaluation text")
                           : refusal_);
}

void QuantizePanel::scheduleEstimate() {
    if (checkpoint_.isEmpty() || !refusal_.isEmpty()) return;
    estimateLabel_->setText(tr("Estimating peak memory and time…"));
    debounce_.start();
}

// The estimate opens the checkpoint, tokenizes both texts and times a short GEMM: a worker's job.
void QuantizePanel::computeEstimate() {
    const QuantizeSettings of = settings();
    estimator_.start(
        [of, path = checkpoint_.toStdString()](const qs::CancelToken& token) { return estimateRun(of, path, token); },
        [this, of](pipeline::ResourceEstimate e) { showEstimate(e, of); },
        [this, of](const QString& message) { showEstimateError(message, of); });
}

void QuantizePanel::showEstimate(pipeline::ResourceEstimate estimate, QuantizeSettings of) {
    estimate_ = estimate;
    estimated_ = std::move(of);
    estimateLabel_->setText(estimateText());
}

void QuantizePanel::showEstimateError(const QString& message, QuantizeSettings of) {
    estimate_.reset();
    estimated_ = std::move(of);
    estimateLabel_->setText(QStringLiteral("<span style='color:#b03030'>%1</span>").arg(message.toHtmlEscaped()));
}

QString QuantizePanel::estimateText() const {
    if (!estimate_) return estimateLabel_->text();
    const pipeline::ResourceEstimate& e = *estimate_;
    QString text = tr("Predicted peak memory <b>%1</b> of %2 available, about <b>%3</b>.")
                       .arg(humanBytes(e.peakBytes), humanBytes(e.availableBytes), durationText(e.seconds));
    if (e.availableBytes > 0 && !e.fits())
        text += QStringLiteral(" <span style='color:#b03030'>%1</span>")
                    .arg(tr("It does not fit: use fewer methods, samples or tokens, or no per-layer KL."));
    return text;
}

}  // namespace qs::gui
