#pragma once
// Quantized copies of the bundled demo, made as a user makes them (`quantscope-cli quantize`), once
// per method per test process: the app's views of quantized checkpoints are tested on real exports.
#include <map>

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>

#include "qt_test_support.h"

namespace qs::gui::test {

// The demo quantized with `method` ("gptq4", "nvfp4", "fp8"; a GGUF file type such as "q4_k_m" or "iq4_xs" writes
// one .gguf file); empty (with a test failure) when the CLI could not make it.
inline QString quantizedDemo(const QString& method) {
    static QTemporaryDir root;  // removed at exit
    static std::map<QString, QString> made;
    if (const auto it = made.find(method); it != made.end()) return it->second;
    // llama.cpp's file types: q4_k_m, q8_0, iq4_xs, ...
    const bool gguf = method.startsWith(QLatin1Char('q')) || method.startsWith(QStringLiteral("iq"));
    const QString out = QDir(root.path()).filePath(gguf ? QStringLiteral("demo-%1.gguf").arg(method) : method);
    QProcess cli;
    cli.start(QStringLiteral(QS_CLI_EXE),
              {QStringLiteral("quantize"), kDemo, QStringLiteral("--method"), method, QStringLiteral("--samples"),
               QStringLiteral("8"), QStringLiteral("--seq-len"), QStringLiteral("64"), QStringLiteral("--out"), out});
    if (!cli.waitForFinished(180000) || cli.exitStatus() != QProcess::NormalExit || cli.exitCode() != 0) {
        ADD_FAILURE() << "quantscope-cli quantize --method " << method.toStdString() << ": "
                      << cli.readAllStandardError().toStdString();
        return {};
    }
    made[method] = out;
    return out;
}

}  // namespace qs::gui::test
