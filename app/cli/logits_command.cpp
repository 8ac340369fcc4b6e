#include "logits_command.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/formats/format_info.h"
#include "qs/model/model_config.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/model_checkpoint.h"

#include "checkpoint_warnings.h"
#include "human_format.h"
#include "text_table.h"

namespace qs::cli {
namespace {

struct LogitsOptions {
    std::string path;
    std::vector<model::TokenId> ids;
    std::string json;
    std::string device = "auto";
    bool allowNonFinite = false;
};

std::string formatLabel(const formats::FormatInfo& info) {
    std::string label(formats::formatName(info.format));
    if (!info.variant.empty()) label += " (" + info.variant + ")";
    return label;
}

// The whole matrix, one row of logits per position, each float exactly (nlohmann writes the double it
// widens to with enough digits to read it back bit for bit).
nlohmann::json reportJson(const LogitsOptions& o, const std::string& format, const model::ModelConfig& config,
                          const std::string& device, const MatrixF& logits) {
    nlohmann::json rows = nlohmann::json::array();
    for (Eigen::Index t = 0; t < logits.rows(); ++t) {
        const auto row = logits.row(t);
        rows.push_back(std::vector<float>(row.data(), row.data() + row.size()));
    }
    return {{"checkpoint", o.path},       {"format", format},         {"model_type", config.modelType},
            {"device", device},           {"token_ids", o.ids},       {"vocab_size", logits.cols()},
            {"positions", logits.rows()}, {"logits", std::move(rows)}};
}

// Per position: the id read there and the id the model ranks first for the next position.
std::string renderText(const LogitsOptions& o, const std::string& format, const model::ModelConfig& config,
                       const std::string& device, const MatrixF& logits) {
    std::ostringstream out;
    out << "next-token logits of " << o.path << " (" << format << ", " << config.modelType << ") at " << logits.rows()
        << " positions, vocabulary " << logits.cols() << ", on " << device << "\n\n";
    TextTable table({{"position", TextTable::Align::Right},
                     {"id", TextTable::Align::Right},
                     {"top next id", TextTable::Align::Right},
                     {"its logit", TextTable::Align::Right}});
    for (Eigen::Index t = 0; t < logits.rows(); ++t) {
        Eigen::Index top = 0;
        const float best = logits.row(t).maxCoeff(&top);
        table.addRow({std::to_string(t), std::to_string(o.ids[static_cast<std::size_t>(t)]), std::to_string(top),
                      formatNumber(best)});
    }
    table.print(out);
    return out.str();
}

void runLogits(const LogitsOptions& o) {
    io::Checkpoint checkpoint = pipeline::openModelCheckpoint(o.path, o.allowNonFinite);
    printCheckpointWarnings(checkpoint);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
    // Any format the eval command reads: quantized linears decode with the format's own dequantization.
    auto weights = std::make_shared<const pipeline::DecodedWeights>(
        std::move(checkpoint), config, formats::DecodeOptions{.allowNonFinite = o.allowNonFinite});
    const std::string format = formatLabel(weights->format());
    const pipeline::BackendSelection selection = pipeline::selectBackend(pipeline::parseDeviceChoice(o.device));

    model::Transformer transformer(config, weights);
    transformer.setLayerMath(selection.backend->layerMath());
    const MatrixF logits = transformer.forward(o.ids);
    std::cerr << selection.message << '\n';  // after the work, so that an error stays the only line

    const std::string device = selection.backend->description();
    if (!o.json.empty()) {
        std::ofstream out(o.json);
        if (!out) throw Error(o.json + ": cannot write the logits");
        out << reportJson(o, format, config, device, logits).dump() << '\n';
        if (!out.flush()) throw Error(o.json + ": cannot write the logits");
    }
    std::cout << renderText(o, format, config, device, logits) << std::flush;
}

}  // namespace

void registerLogits(CLI::App& app) {
    auto options = std::make_shared<LogitsOptions>();
    CLI::App* cmd = app.add_subcommand(
        "logits", "Next-token logits at every position of given token ids (to compare with another implementation)");
    cmd->add_option("path", options->path, "Checkpoint: .safetensors or .gguf file, or folder (any readable format)")
        ->required();
    cmd->add_option("--ids", options->ids, "Token ids, comma-separated (position 0 first)")
        ->required()
        ->delimiter(',')
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--json", options->json, "Write every position's logits as JSON to this file");
    cmd->add_option("--device", options->device, "Where the forward pass runs: cpu, cuda or auto")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    cmd->add_flag("--allow-nonfinite", options->allowNonFinite,
                  "Use linears whose weights are NaN or Inf instead of refusing them");
    cmd->callback([options] { runLogits(*options); });
}

}  // namespace qs::cli
