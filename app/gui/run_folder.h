#pragma once
// Where a GUI run keeps its state after each finished layer (pipeline::WorkFolder), so that a run
// that was cancelled, crashed or lost its power can be resumed by starting it again: one folder per
// checkpoint and settings, in the user's cache folder, deleted when the run finishes.
#include <filesystem>
#include <optional>

#include "qs/io/checkpoint_fingerprint.h"
#include "quantize_settings.h"

namespace qs::gui {

struct RunFolder {
    std::filesystem::path path;
    bool resume = false;   // continue the interrupted run found there
};

// The folder a run of `settings` on the checkpoint uses (not created here).
std::filesystem::path runFolderFor(const QuantizeSettings& settings, const io::CheckpointFingerprint& checkpoint);

}  // namespace qs::gui
