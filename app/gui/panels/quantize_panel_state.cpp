// The Quantize panel's settings as a QVariantMap: kept between sessions in QSettings ("quantize/..."),
// and put back by "Restore defaults". Every row of the method list is keyed by what it runs, so rows
// added to the list later keep their own settings and older saved keys are simply ignored.
#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>

#include "panels/quantize_panel.h"

namespace qs::gui {
namespace {

const QString kGroup = QStringLiteral("quantize");

}  // namespace

QString QuantizePanel::rowKey(std::size_t row) const {
    const std::string kind = rows_[row].prefix + rows_[row].suffix;
    int before = 0;  // two Trellis rows differ only by their default bits: by position among alike rows
    for (std::size_t r = 0; r < row; ++r) before += rows_[r].prefix + rows_[r].suffix == kind;
    return QStringLiteral("methods/%1#%2").arg(QString::fromStdString(kind)).arg(before);
}

QVariantMap QuantizePanel::state() const {
    QVariantMap state;
    for (std::size_t r = 0; r < rows_.size(); ++r) {
        const QString key = rowKey(r);
        state[key + QStringLiteral("/checked")] = rows_[r].check->isChecked();
        if (rows_[r].bits) state[key + QStringLiteral("/bits")] = rows_[r].bits->value();
        if (rows_[r].group) state[key + QStringLiteral("/group")] = rows_[r].group->currentData();
    }
    state[QStringLiteral("calibrationFile")] = calibrationFile_->text();
    state[QStringLiteral("samples")] = samples_->value();
    state[QStringLiteral("sequenceLength")] = sequenceLength_->value();
    state[QStringLiteral("evaluationFile")] = evaluationFile_->text();
    state[QStringLiteral("evaluationSamples")] = evaluationSamples_->value();
    state[QStringLiteral("device")] = device_->currentData();
    state[QStringLiteral("matmul")] = matmul_->currentData();
    state[QStringLiteral("perLayerKl")] = perLayerKl_->isChecked();
    state[QStringLiteral("kvCacheFp8")] = kvCacheFp8_->isChecked();
    state[QStringLiteral("rotate")] = rotate_->isChecked();
    state[QStringLiteral("moeCalibrateAllExperts")] = allExperts_->isChecked();
    return state;
}

// Keys that are missing or hold nothing valid leave their control as it is.
void QuantizePanel::applyState(const QVariantMap& state) {
    const auto number = [&state](const QString& key, QSpinBox* box) {
        if (state.contains(key)) box->setValue(state.value(key).toInt());  // clamped to the box's range
    };
    for (std::size_t r = 0; r < rows_.size(); ++r) {
        const QString key = rowKey(r);
        if (state.contains(key + QStringLiteral("/checked")))
            rows_[r].check->setChecked(state.value(key + QStringLiteral("/checked")).toBool());
        if (rows_[r].bits) number(key + QStringLiteral("/bits"), rows_[r].bits);
        if (rows_[r].group && state.contains(key + QStringLiteral("/group"))) {
            const int at = rows_[r].group->findData(state.value(key + QStringLiteral("/group")).toInt());
            if (at >= 0) rows_[r].group->setCurrentIndex(at);
        }
    }
    if (state.contains(QStringLiteral("calibrationFile")))
        calibrationFile_->setText(state.value(QStringLiteral("calibrationFile")).toString());
    number(QStringLiteral("samples"), samples_);
    number(QStringLiteral("sequenceLength"), sequenceLength_);
    if (state.contains(QStringLiteral("evaluationFile")))
        evaluationFile_->setText(state.value(QStringLiteral("evaluationFile")).toString());
    number(QStringLiteral("evaluationSamples"), evaluationSamples_);
    if (state.contains(QStringLiteral("perLayerKl")))
        perLayerKl_->setChecked(state.value(QStringLiteral("perLayerKl")).toBool());
    if (state.contains(QStringLiteral("kvCacheFp8")))
        kvCacheFp8_->setChecked(state.value(QStringLiteral("kvCacheFp8")).toBool());
    if (state.contains(QStringLiteral("rotate"))) rotate_->setChecked(state.value(QStringLiteral("rotate")).toBool());
    if (state.contains(QStringLiteral("moeCalibrateAllExperts")))
        allExperts_->setChecked(state.value(QStringLiteral("moeCalibrateAllExperts")).toBool());
    if (const int at = matmul_->findData(state.value(QStringLiteral("matmul"), -1).toInt()); at >= 0)
        matmul_->setCurrentIndex(at);
    if (state.contains(QStringLiteral("device"))) {
        const int at = device_->findData(state.value(QStringLiteral("device")).toInt());
        // CUDA becomes selectable only when the device probe answers: chosen then (showDevices).
        cudaWanted_ = at == 2 && !cudaSelectable();
        if (at >= 0 && !cudaWanted_) device_->setCurrentIndex(at);
        if (cudaWanted_) device_->setCurrentIndex(0);
    }
}

void QuantizePanel::saveSettings(QSettings& settings) const {
    settings.beginGroup(kGroup);
    const QVariantMap values = state();
    for (auto it = values.begin(); it != values.end(); ++it) settings.setValue(it.key(), it.value());
    settings.endGroup();
}

void QuantizePanel::restoreSettings(QSettings& settings) {
    settings.beginGroup(kGroup);
    QVariantMap values;
    for (const QString& key : settings.allKeys()) values[key] = settings.value(key);
    settings.endGroup();
    applyState(values);
}

}  // namespace qs::gui
