// quantscope-cli: the headless face of QuantScope. Each command lives in its own file and adds
// itself with a register function; this file only parses and maps failures to exit codes:
// 0 success (and --help, --version), 2 for any error (one line on stderr), 130 when cancelled.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "compare_command.h"
#include "dequantize_command.h"
#include "eval_command.h"
#include "inspect_command.h"
#include "quantize_command.h"
#include "qs/error.h"
#include "qs/thread_team.h"
#if defined(QS_WITH_CUDA_BACKEND)
#include "qs/gpu/cuda_backend.h"
#endif

namespace {

constexpr int kExitError = 2;
constexpr int kExitCancelled = 130;   // as a shell reports a process ended by SIGINT

int reportError(const char* message) {
    std::cerr << "quantscope-cli: error: " << message << '\n';
    return kExitError;
}

int run(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);   // runs the chosen command's callback
        return 0;
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : kExitError;   // --help and --version exit 0
    } catch (const qs::Cancelled&) {
        std::cerr << "quantscope-cli: cancelled\n";
        return kExitCancelled;
    } catch (const qs::Error& e) {
        return reportError(e.what());
    } catch (const std::exception& e) {
        // Filesystem and allocation failures are the user's input too (a path, a file too large).
        return reportError(e.what());
    }
}

}  // namespace

int main(int argc, char** argv) {
    // One OpenMP team (which OpenBLAS shares) of as many threads as there are free cores; a team
    // larger than that waits at every barrier for a thread the scheduler parked. OMP_NUM_THREADS wins.
    qs::sizeThreadTeamToFreeCores();
    CLI::App app{"Inspect, quantize and compare LLM checkpoints", "quantscope-cli"};
    app.set_version_flag("--version", "quantscope-cli " QS_VERSION);
    app.require_subcommand(1);
#if defined(QS_WITH_CUDA_BACKEND)
    qs::gpu::registerCudaBackend();   // every command's device "auto" may then pick the GPU
#endif
    qs::cli::registerInspect(app);
    qs::cli::registerCompare(app);
    qs::cli::registerQuantize(app);
    qs::cli::registerDequantize(app);
    qs::cli::registerEval(app);
    return run(app, argc, argv);
}
