#include "work_dir_options.h"

#include "qs/error.h"
#include "qs/pipeline/byte_size.h"
#include "qs/pipeline/work_folder.h"

namespace qs::cli {

void addWorkDirOptions(CLI::App& cmd, WorkDirOptions& options) {
    cmd.add_option("--work-dir", options.workDir,
                   "Keep the run's state after each layer in this new folder, so that a killed run can --resume; "
                   "the finished layers' codes stay there instead of in memory (a 70B model's would not fit); "
                   "removed when the run ends");
    cmd.add_option(
        "--resume", options.resume,
        "Continue a killed run from the last complete layer in its --work-dir (same checkpoint and settings)");
    cmd.add_option("--max-memory")
        ->type_name("SIZE")
        ->description(
            "The memory the run may use, e.g. 16G or 64GB (K/M/G/T: powers of 1024; KB/MB/GB/TB: of 1000); "
            "default: what is available. Hidden states that do not fit stream from the --work-dir")
        ->each([&options](const std::string& text) {
            try {
                options.maxMemory = pipeline::parseByteSize(text);
            } catch (const Error& e) {
                throw Error(std::string("--max-memory: ") + e.what());
            }
        });
}

void applyWorkDirOptions(const WorkDirOptions& options, pipeline::JobPlan& plan) {
    if (!options.workDir.empty() && !options.resume.empty() && options.workDir != options.resume)
        throw Error("--work-dir " + options.workDir + " and --resume " + options.resume + " name different folders");
    plan.maxMemory = options.maxMemory;
    plan.workDir = options.folder();
    plan.resume = !options.resume.empty();
    plan.resultsOnDisk = !plan.workDir.empty();  // read back by the export, which runs before the folder goes
}

void discardWorkDir(const WorkDirOptions& options) { pipeline::WorkFolder::discard(options.folder()); }

}  // namespace qs::cli
