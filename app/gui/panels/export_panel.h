#pragma once
// The Export panel: one method's result of the last job, written as a checkpoint its consumers
// load. It shows the layout it will write (the method's default, or any other layout that accepts
// every linear; for a mix of methods ct-mixed, or any layout, refused with the core's reason when
// it cannot carry the mix), who loads it and the estimated size; refuses a destination in the source folder;
// reports progress; and offers to open what it wrote.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <QTimer>
#include <QWidget>
#include <nlohmann/json.hpp>

#include "qs/io/checkpoint_fingerprint.h"
#include "qs/io/checkpoint_writer.h"

#include "jobs/job_runner.h"
#include "jobs/quantize_job.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace qs::formats {
class LinearEncoder;
}

namespace qs::gui {

class ExportPanel : public QWidget {
    Q_OBJECT

public:
    explicit ExportPanel(QWidget* parent = nullptr);

    // The open checkpoint, which exports copy: only a result quantized from it (the same
    // fingerprint) can be exported.
    void setSource(const QString& checkpointPath, io::CheckpointFingerprint fingerprint);
    void setResult(JobResultPtr result);
    const JobResultPtr& result() const { return result_; }
    void setDestination(const QString& folder);
    bool selectMethod(const QString& label);  // a method's label, as in the results table
    bool selectFormat(const QString& name);   // an encoder's name ("ct-mixed", "gptq"), among those listed
    // The settings an export of a method's result records in quantscope_report.json (the Bit budget
    // tab's allocations record theirs); none by default.
    using SettingsProvider = std::function<nlohmann::json(const pipeline::MethodResult&)>;
    void setSettingsProvider(SettingsProvider provider) { settings_ = std::move(provider); }

    QString formatName() const;
    QString formatText() const;  // the encoder's description
    QString sizeText() const;
    QString sizeToolTip() const;
    // The chosen layout's size as the export writes it, once measured on the worker (pipeline::measureExport,
    // measureGgufResult: a GGUF file is all tensorFiles); nullopt until then, and for a layout that refuses
    // the result.
    std::optional<io::WrittenBytes> measuredSize() const;
    bool isMeasuring() const { return sizes_.isBusy(); }
    QString problem() const;    // why Export is not possible now; empty when it is
    QString note() const;       // what was just written there, or which folders Export creates
    QString shownText() const;  // what the panel shows under the destination (a problem or a note)
    bool isExporting() const { return runner_.isBusy(); }
    // A result on disk is checked on a worker (which layouts take it, the chosen one's refusal);
    // Export waits for it.
    bool isChecking() const { return checking_; }
    const QString& written() const { return written_; }
    void startExport();

signals:
    void openRequested(const QString& folder);
    void exported(const QString& folder);
    void failed(const QString& message);

private:
    const pipeline::MethodResult* method() const;
    const formats::LinearEncoder* encoder() const;
    bool ggufChosen() const;  // the GGUF file of a GGUF method's result
    void fillMethods();
    void fillFormats();
    void updateRefusal();
    void updateSize();
    void checkStoredResult(std::vector<const formats::LinearEncoder*> others);
    void finishCheck(const QString& refusal);
    QString checkingText() const;
    QString destinationProblem() const;  // what problem() says of the destination; empty when it is fine
    void updateState();
    void chooseDestination();
    void onExported(const QString& folder);
    bool showsWritten() const;  // the chosen method and layout are what was last written
    void leaveWrittenDestination();

    QString source_;
    io::CheckpointFingerprint sourceFingerprint_;
    JobResultPtr result_;
    QString written_;
    const pipeline::MethodResult* writtenMethod_ = nullptr;  // what written_ holds
    QString writtenFormat_;
    SettingsProvider settings_;
    QString refusal_;        // the core's reason the chosen format cannot hold the chosen result
    bool checking_ = false;  // refusal_ (and the layouts offered) are being found on checks_
    // A result on disk: each layout's refusal once found, so that choosing it again does not read the
    // whole result again (tens of gigabytes for a 70B). Cleared with the result.
    std::map<std::pair<const pipeline::MethodResult*, const formats::LinearEncoder*>, QString> storedRefusals_;
    JobRunner checks_;
    // Each (result, layout)'s measured size, and the worker measuring the chosen one.
    std::map<std::pair<const pipeline::MethodResult*, QString>, io::WrittenBytes> measured_;
    JobRunner sizes_;
    JobRunner runner_;
    std::shared_ptr<std::atomic<double>> fraction_ = std::make_shared<std::atomic<double>>(0.0);
    QTimer progressTimer_;

    QComboBox* method_;
    QComboBox* format_;
    QLabel* formatInfo_;
    QLabel* size_;
    QLineEdit* destination_;
    QLabel* problem_;
    QProgressBar* progress_;
    QPushButton* export_;
    QPushButton* open_;
};

}  // namespace qs::gui
