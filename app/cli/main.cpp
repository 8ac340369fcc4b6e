// quantscope-cli: the headless face of QuantScope. Each command lives in its own file and adds
// itself with a register function; this file only parses and maps failures to exit codes:
// 0 success (and --help, --version), 2 for any error (one line on stderr), 130 when cancelled.
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include <CLI/CLI.hpp>

#include "qs/error.h"
#include "qs/huge_pages.h"
#include "qs/thread_team.h"

#include "compare_command.h"
#include "dequantize_command.h"
#include "diff_command.h"
#include "eval_command.h"
#include "inspect_command.h"
#include "logits_command.h"
#include "quantize_command.h"
#if defined(QS_WITH_CUDA_BACKEND)
#include "qs/gpu/cuda_backend.h"
#endif

namespace {

constexpr int kExitError = 2;
constexpr int kExitCancelled = 130;  // as a shell reports a process ended by SIGINT

// Every message goes through sanitizeMessage (qs::Error's already has): one line, whatever it quotes.
int reportError(std::string_view message) {
    std::cerr << "quantscope-cli: error: " << qs::sanitizeMessage(message) << '\n';
    return kExitError;
}

// What the command was working on, for failures that do not say it themselves.
std::string commandLine(int argc, char** argv) {
    std::string line;
    for (int i = 1; i < argc; ++i) line += (line.empty() ? "" : " ") + std::string(argv[i]);
    return line;
}

int run(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);  // runs the chosen command's callback
        return 0;
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : kExitError;  // --help and --version exit 0
    } catch (const qs::Cancelled&) {
        std::cerr << "quantscope-cli: cancelled\n";
        return kExitCancelled;
    } catch (const qs::Error& e) {
        return reportError(e.what());
    } catch (const std::bad_alloc&) {
        return reportError("out of memory running '" + commandLine(argc, argv) + "'");
    } catch (const std::exception& e) {
        // Filesystem failures name their paths; anything else at least names the command.
        return reportError(std::string(e.what()) + " (running '" + commandLine(argc, argv) + "')");
    }
}

}  // namespace

int main(int argc, char** argv) {
    qs::restartWithHugePages(argv);  // before any work: glibc reads the tunable only at start
    // One OpenMP team (which OpenBLAS shares) of as many threads as there are free cores; a team
    // larger than that waits at every barrier for a thread the scheduler parked. OMP_NUM_THREADS wins.
    qs::sizeThreadTeamToFreeCores();
    CLI::App app{"Inspect, quantize and compare LLM checkpoints", "quantscope-cli"};
    app.set_version_flag("--version", "quantscope-cli " QS_VERSION);
    app.require_subcommand(1);
#if defined(QS_WITH_CUDA_BACKEND)
    qs::gpu::registerCudaBackend();  // every command's device "auto" may then pick the GPU
#endif
    qs::cli::registerInspect(app);
    qs::cli::registerCompare(app);
    qs::cli::registerQuantize(app);
    qs::cli::registerDequantize(app);
    qs::cli::registerEval(app);
    qs::cli::registerLogits(app);
    qs::cli::registerDiff(app);
    return run(app, argc, argv);
}
