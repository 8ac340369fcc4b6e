#include "qs/pipeline/model_checkpoint.h"

#include "qs/formats/config_check.h"
#include "qs/formats/detect.h"

namespace qs::pipeline {

io::Checkpoint openModelCheckpoint(const std::filesystem::path& path) {
    io::Checkpoint checkpoint = io::Checkpoint::open(path);
    formats::requireConfigMatchesTensors(checkpoint, formats::detect(checkpoint));
    return checkpoint;
}

}  // namespace qs::pipeline
