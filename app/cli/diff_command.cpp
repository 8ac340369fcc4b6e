#include "diff_command.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qs/formats/quantization_diff.h"
#include "qs/io/checkpoint.h"

#include "checkpoint_warnings.h"
#include "human_format.h"
#include "progress_bar.h"
#include "sigint_cancel.h"
#include "text_table.h"

namespace qs::cli {
namespace {

struct DiffOptions {
    std::string a;
    std::string b;
    std::string original;
    bool onlyDiffering = false;
    bool json = false;
};

std::string bitsText(double bits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", bits);
    return text;
}

std::string errorText(const std::optional<double>& rms) { return rms ? formatNumber(*rms) : "-"; }

bool listed(const formats::LinearDiff& d, const DiffOptions& o) { return d.differs || !o.onlyDiffering; }

// The error columns only with an original: without one they would be a column of dashes each.
std::string renderTable(const formats::QuantizationDiff& diff, const DiffOptions& o) {
    const bool errors = diff.withOriginal;
    std::vector<TextTable::Column> columns{{"linear"}, {"A type"}, {"A bpw", TextTable::Align::Right}};
    if (errors) columns.push_back({"A error", TextTable::Align::Right});
    columns.insert(columns.end(), {{"B type"}, {"B bpw", TextTable::Align::Right}});
    if (errors) columns.push_back({"B error", TextTable::Align::Right});
    columns.insert(columns.end(), {{"RMS A-B", TextTable::Align::Right}, {"differs"}});
    TextTable table(std::move(columns));
    for (const formats::LinearDiff& d : diff.linears) {
        if (!listed(d, o)) continue;
        std::vector<std::string> row{d.ref.prefix, d.typeA, bitsText(d.bitsA)};
        if (errors) row.push_back(errorText(d.errorA));
        row.insert(row.end(), {d.typeB, bitsText(d.bitsB)});
        if (errors) row.push_back(errorText(d.errorB));
        row.insert(row.end(), {formatNumber(d.rmsAMinusB), d.differs ? "yes" : "no"});
        table.addRow(std::move(row));
    }
    std::ostringstream out;
    table.print(out);
    return out.str();
}

// "3 of 14 linears differ; bits per weight A 4.156, B 4.875; mean RMS error A 0.0012, B 0.0011"
std::string renderSummary(const formats::QuantizationDiffSummary& s) {
    std::string line = std::to_string(s.differing) + " of " + std::to_string(s.linears) +
                       " linears differ; bits per weight A " + bitsText(s.a.bitsPerWeight) + ", B " +
                       bitsText(s.b.bitsPerWeight);
    if (s.a.meanError && s.b.meanError)
        line += "; mean RMS error A " + formatNumber(*s.a.meanError) + ", B " + formatNumber(*s.b.meanError);
    return line + '\n';
}

std::string renderText(const formats::QuantizationDiff& diff, const DiffOptions& o) {
    std::string text = "A: " + o.a + "\nB: " + o.b + '\n';
    if (!o.original.empty()) text += "original: " + o.original + '\n';
    return text + '\n' + renderTable(diff, o) + '\n' + renderSummary(formats::summarizeDiff(diff));
}

nlohmann::json errorJson(const std::optional<double>& rms) { return rms ? nlohmann::json(*rms) : nlohmann::json(); }

nlohmann::json sideJson(const std::string& type, bool quantized, double bits, const std::optional<double>& error) {
    return {{"type", type}, {"quantized", quantized}, {"bits_per_weight", bits}, {"rms_error", errorJson(error)}};
}

nlohmann::json summarySideJson(const formats::DiffSideSummary& s) {
    return {{"quantized_linears", s.quantizedLinears},
            {"bits_per_weight", s.bitsPerWeight},
            {"mean_rms_error", errorJson(s.meanError)}};
}

nlohmann::json renderJson(const formats::QuantizationDiff& diff, const DiffOptions& o) {
    nlohmann::json linears = nlohmann::json::array();
    for (const formats::LinearDiff& d : diff.linears) {
        if (!listed(d, o)) continue;
        linears.push_back({{"name", d.ref.prefix},
                           {"rows", d.rows},
                           {"cols", d.cols},
                           {"a", sideJson(d.typeA, d.quantizedA, d.bitsA, d.errorA)},
                           {"b", sideJson(d.typeB, d.quantizedB, d.bitsB, d.errorB)},
                           {"rms_a_minus_b", d.rmsAMinusB},
                           {"differs", d.differs}});
    }
    const formats::QuantizationDiffSummary s = formats::summarizeDiff(diff);
    return {{"a", o.a},
            {"b", o.b},
            {"original", o.original.empty() ? nlohmann::json() : nlohmann::json(o.original)},
            {"only_differing", o.onlyDiffering},
            {"linears", std::move(linears)},
            {"summary",
             {{"linears", s.linears},
              {"differing", s.differing},
              {"a", summarySideJson(s.a)},
              {"b", summarySideJson(s.b)}}}};
}

void runDiff(const DiffOptions& o) {
    const io::Checkpoint a = io::Checkpoint::open(o.a);
    const io::Checkpoint b = io::Checkpoint::open(o.b);
    const std::optional<io::Checkpoint> original =
        o.original.empty() ? std::nullopt : std::optional<io::Checkpoint>(io::Checkpoint::open(o.original));
    const formats::LinearReader readerA(a), readerB(b);
    std::optional<formats::LinearReader> readerOriginal;
    if (original) readerOriginal.emplace(*original);
    formats::checkSameModel(readerA, readerB);  // another model is refused before any warning or decoding
    printCheckpointWarnings(a);
    printCheckpointWarnings(b);
    if (original) printCheckpointWarnings(*original);

    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("diff");
    const formats::QuantizationDiff diff = formats::diffQuantizations(
        readerA, readerB, readerOriginal ? &*readerOriginal : nullptr, bar.callback(), cancel);
    bar.finish(true);
    // Rendered completely before anything is written (as inspect): a failure leaves stdout empty.
    const std::string output =
        o.json ? renderJson(diff, o).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
               : renderText(diff, o);
    std::cout << output << std::flush;
}

}  // namespace

void registerDiff(CLI::App& app) {
    auto options = std::make_shared<DiffOptions>();
    CLI::App* cmd = app.add_subcommand(
        "diff", "Two quantizations of one model side by side: per linear type, bits, error, RMS of A - B");
    cmd->add_option("a", options->a, "Quantization A: a checkpoint folder, .safetensors or .gguf file")->required();
    cmd->add_option("b", options->b, "Quantization B of the same model")->required();
    cmd->add_option("--original", options->original,
                    "The original checkpoint: adds each one's RMS error against its decoded weights");
    cmd->add_flag("--only-differing", options->onlyDiffering,
                  "List only the linears whose decoded weights differ (the summary still counts all)");
    cmd->add_flag("--json", options->json, "Print the comparison as JSON");
    cmd->callback([options] { runDiff(*options); });
}

}  // namespace qs::cli
