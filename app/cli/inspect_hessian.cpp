#include "inspect_hessian.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/hessian_diagonals.h"
#include "qs/pipeline/run_text.h"

#include "human_format.h"
#include "progress_bar.h"
#include "sigint_cancel.h"
#include "text_table.h"

namespace qs::cli {
namespace {

constexpr std::size_t kFirstChannels = 8;  // of the act-order, listed per linear in the text report

// The channels in act-order (largest H_cc first), the first `count` of them.
std::vector<int> firstChannels(const pipeline::HessianDiagonal& d, std::size_t count) {
    std::vector<int> byRank(d.actOrderRank.size());
    for (std::size_t c = 0; c < d.actOrderRank.size(); ++c)
        byRank[static_cast<std::size_t>(d.actOrderRank[c])] = static_cast<int>(c);
    byRank.resize(std::min(count, byRank.size()));
    return byRank;
}

double median(std::vector<double> values) {
    const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    return *middle;
}

bool hasExperts(const pipeline::LayerHessianDiagonals& h) {
    return std::any_of(h.modules.begin(), h.modules.end(), [](const auto& m) { return m.second.routedTokens >= 0; });
}

std::string renderText(const pipeline::LayerHessianDiagonals& h, const std::string& header) {
    // A MoE layer: each expert's routed tokens too (its diagonal is over every token), blank for the rest.
    const bool experts = hasExperts(h);
    std::vector<TextTable::Column> columns{{"linear"},
                                           {"inputs", TextTable::Align::Right},
                                           {"min H_cc", TextTable::Align::Right},
                                           {"median", TextTable::Align::Right},
                                           {"max H_cc", TextTable::Align::Right},
                                           {"max/min", TextTable::Align::Right}};
    if (experts) columns.push_back({"routed", TextTable::Align::Right});
    columns.push_back({"act-order first"});
    TextTable table(std::move(columns));
    for (const auto& [module, d] : h.modules) {
        const auto [lo, hi] = std::minmax_element(d.diagonal.begin(), d.diagonal.end());
        std::string first;
        for (int c : firstChannels(d, kFirstChannels)) first += (first.empty() ? "" : " ") + std::to_string(c);
        std::vector<std::string> row{module,
                                     std::to_string(d.diagonal.size()),
                                     formatNumber(*lo),
                                     formatNumber(median(d.diagonal)),
                                     formatNumber(*hi),
                                     *lo > 0 ? formatNumber(*hi / *lo) : "inf"};
        if (experts) row.push_back(d.routedTokens >= 0 ? std::to_string(d.routedTokens) : "");
        row.push_back(first);
        table.addRow(std::move(row));
    }
    std::ostringstream out;
    out << header << '\n';
    table.print(out);
    return out.str();
}

nlohmann::json renderJson(const pipeline::LayerHessianDiagonals& h, const nlohmann::json& about) {
    nlohmann::json json = about;
    json["layer"] = h.layer;
    json["samples"] = h.samples;
    nlohmann::json modules = nlohmann::json::object();
    for (const auto& [module, d] : h.modules) {
        modules[module] = {{"diagonal", d.diagonal}, {"act_order", firstChannels(d, d.diagonal.size())}};
        if (d.routedTokens >= 0) modules[module]["routed_tokens"] = d.routedTokens;
    }
    json["modules"] = std::move(modules);
    return json;
}

}  // namespace

void runInspectHessian(const HessianOptions& o) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(o.path);
    const auto file = pipeline::resolveRunText(pipeline::TextRole::Calibration, o.calib, checkpoint);
    const auto tokenizer = model::Tokenizer::forCheckpoint(checkpoint);
    const pipeline::TokenSequences text =
        pipeline::tokenWindows(tokenizer, pipeline::loadTexts(file), o.samples, o.seqLen, file.string());
    const pipeline::BackendSelection selection = pipeline::selectBackend(pipeline::parseDeviceChoice(o.device));

    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("hessian");
    const pipeline::LayerHessianDiagonals h =
        pipeline::hessianDiagonals(checkpoint, o.layer, text, *selection.backend, bar.callback(), cancel);
    bar.finish(true);
    std::cerr << selection.message << '\n';  // after the work, so that an error stays the only line

    const std::string device = selection.backend->description();
    // Rendered completely before anything is written, so that a failure leaves stdout empty.
    const std::string output =
        o.json
            ? renderJson(h, {{"path", o.path},
                             {"device", device},
                             {"calibration", {{"file", file.string()}, {"samples", o.samples}, {"seq_len", o.seqLen}}}})
                      .dump(2) +
                  "\n"
            : renderText(h, "layer " + std::to_string(o.layer) + " of " + o.path + ": diag(H) = 2 Σ x² / n over " +
                                std::to_string(h.samples) + " calibration tokens of " + file.filename().string() +
                                ", on " + device);
    std::cout << output << std::flush;
}

}  // namespace qs::cli
