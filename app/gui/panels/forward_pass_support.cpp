#include "panels/forward_pass_support.h"

#include <QCoreApplication>

#include "qs/error.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/method_spec.h"
#include "qs/pipeline/weight_only_quantize.h"

namespace qs::gui {

QString forwardPassRefusal(const io::Checkpoint& checkpoint) {
    try {
        (void)model::ModelConfig::fromCheckpoint(checkpoint);
        return {};
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

QString methodRefusalWithoutForwardPass(const std::string& method) {
    try {
        return QString::fromStdString(pipeline::weightOnlyRefusal(pipeline::parseMethod(method)));
    } catch (const Error& e) {  // a row the method list cannot name: never offered without a forward pass
        return QString::fromStdString(e.what());
    }
}

QString startRefusalWithoutForwardPass(const QString& forwardPassRefusal) {
    return QCoreApplication::translate(
               "QuantizePanel",
               "QuantScope cannot run this model (%1), and the Quantize panel measures every method's KL with it. "
               "The weight-only methods (RTN, FP8, MXFP4, NVFP4, NF4, Trellis) quantize it without a forward pass, "
               "from the command line only: quantscope-cli quantize CHECKPOINT --weights-only --method rtn4 --out "
               "FOLDER")
        .arg(forwardPassRefusal);
}

}  // namespace qs::gui
