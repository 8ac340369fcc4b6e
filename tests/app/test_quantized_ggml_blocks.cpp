// The Quantized tab of a GGUF linear shows what its ggml blocks store: on the demo as quantscope-cli
// writes it in Q4_K_M and IQ4_XS, and on a copy whose q_proj / k_proj hold random IQ2_XS / Q4_0 blocks
// (every bit pattern is a block). The counts shown are checked against counts of the stored bits made
// here from the block layouts (docs/formats/gguf-types.md), and the bits per weight against the CLI's.
#include <cstring>
#include <map>
#include <random>

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include "qs/io/ggml_type.h"
#include "qs/io/gguf_file.h"
#include "qs/io/gguf_writer.h"

#include "pages/quantized_linear_page.h"
#include "plots/plot_view.h"
#include "qt_test_support.h"
#include "quantized_demo.h"
#include "recording_reporter.h"
#include "window/error_reporter.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

using Views = QuantizedLinearPage::Views;

std::uint64_t total(const std::vector<quant::CodeLevel>& usage) {
    std::uint64_t n = 0;
    for (const auto& l : usage) n += l.count;
    return n;
}

std::map<int, std::uint64_t> countsByCode(const std::vector<quant::CodeLevel>& usage) {
    std::map<int, std::uint64_t> counts;
    for (const auto& l : usage)
        if (l.count > 0) counts[l.code] = l.count;
    return counts;
}

// The stored bytes of a GGUF tensor.
std::vector<std::uint8_t> storedBytes(const QString& path, const std::string& ggufName) {
    const io::GgufFile file = io::GgufFile::open(path.toStdString());
    const auto bytes = file.tensor(ggufName).bytes();
    std::vector<std::uint8_t> out(bytes.size());
    std::memcpy(out.data(), bytes.data(), out.size());
    return out;
}

// The demo's GGUF with tensors replaced by random blocks of types whose F16 d comes first.
QString withRandomBlocks(const QString& source, const QString& dir,
                         const std::map<std::string, io::GgmlType>& replaced) {
    const io::GgufFile file = io::GgufFile::open(source.toStdString());
    const std::string path = QDir(dir).filePath(QStringLiteral("random-blocks.gguf")).toStdString();
    io::GgufWriter writer(path);
    for (const auto& [key, value] : file.metadata().entries()) writer.set(key, value);
    std::mt19937 rng(11);
    for (const io::TensorInfo& t : file.tensors()) {
        const auto it = replaced.find(t.name);
        if (it == replaced.end()) {
            writer.addTensor(t.name, *t.ggmlType, t.shape, file.view(t).bytes());
            continue;
        }
        std::vector<std::byte> bytes(static_cast<std::size_t>(t.shape[0]) * io::ggmlRowBytes(it->second, t.shape[1]));
        for (auto& b : bytes) b = static_cast<std::byte>(rng());
        // A finite F16 d (below 1) at the start of each block, as both replaced types keep it there: the
        // app refuses to decode NaN weights.
        const auto blockBytes = static_cast<std::size_t>(io::ggmlTypeTraits(it->second).blockBytes);
        for (std::size_t at = 1; at < bytes.size(); at += blockBytes) bytes[at] &= std::byte{0x3B};
        writer.addTensor(t.name, it->second, t.shape, bytes);
    }
    return QString::fromStdString(writer.finish().string());
}

// quantscope-cli inspect --json: the bits per weight it gives each ggml type of the file.
std::map<QString, double> cliBitsPerWeight(const QString& path) {
    QProcess cli;
    cli.start(QStringLiteral(QS_CLI_EXE), {QStringLiteral("inspect"), path, QStringLiteral("--json")});
    if (!cli.waitForFinished(120000) || cli.exitCode() != 0) return {};
    const QJsonObject types =
        QJsonDocument::fromJson(cli.readAllStandardOutput()).object()["gguf"].toObject()["tensor_types"].toObject();
    std::map<QString, double> bits;
    for (auto it = types.begin(); it != types.end(); ++it)
        bits[it.key()] = it.value().toObject()["bits_per_weight"].toDouble();
    return bits;
}

class QuantizedGgmlBlocksTest : public QtAppTest {
protected:
    void SetUp() override {
        window.setErrorReporter(reporter);
        window.show();
    }
    void TearDown() override { EXPECT_TRUE(reporter->reports.isEmpty()) << reporter->reports.join('\n').toStdString(); }
    const Views* show(const QString& path, const std::string& tensor) {
        if (path.isEmpty() || !window.openPath(path)) return nullptr;
        window.showPage(QStringLiteral("quantized"));
        window.selectTensor(QString::fromStdString(tensor));
        QuantizedLinearPage& page = *window.quantizedLinearPage();
        if (!waitUntil([&] { return !page.isBusy() && page.views().has_value() && page.views()->linear.size() > 0; }))
            return nullptr;
        return &*page.views();
    }
    const Views* select(const std::string& tensor) {
        QuantizedLinearPage& page = *window.quantizedLinearPage();
        window.selectTensor(QString::fromStdString(tensor));
        const QString prefix = QString::fromStdString(tensor).section(QLatin1Char('.'), 0, -2);
        if (!waitUntil([&] { return !page.isBusy() && page.views() && page.views()->linear == prefix; }))
            return nullptr;
        return &*page.views();
    }
    QuantizedLinearPage& page() { return *window.quantizedLinearPage(); }

    std::shared_ptr<RecordingReporter> reporter = std::make_shared<RecordingReporter>();
    MainWindow window{MainWindow::Settings::Ignore};
};

constexpr std::uint64_t kQWeights = 256 * 256;  // the demo's q_proj [256, 256]

TEST_F(QuantizedGgmlBlocksTest, Q4_KShowsItsCodesScalesMinsAndSuperBlockScales) {
    const QString path = quantizedDemo(QStringLiteral("q4_k_m"));
    const Views* v = show(path, "model.layers.0.self_attn.q_proj.weight");
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->ggml.has_value());
    const auto& g = *v->ggml;
    EXPECT_EQ(g.type, QStringLiteral("q4_K"));
    EXPECT_EQ(g.bitsPerWeight, 4.5);
    EXPECT_EQ(cliBitsPerWeight(path)[QStringLiteral("q4_K")], g.bitsPerWeight);  // one figure, GUI and CLI

    // 16 code levels holding every weight, counted here from the nibbles of qs (bytes 16..143 of each block).
    ASSERT_EQ(v->usage.size(), 16u);
    EXPECT_EQ(total(v->usage), kQWeights);
    const auto bytes = storedBytes(path, "blk.0.attn_q.weight");
    ASSERT_EQ(bytes.size(), kQWeights / 256 * 144);
    std::map<int, std::uint64_t> nibbles;
    for (std::size_t b = 0; b < bytes.size(); b += 144)
        for (std::size_t j = 16; j < 144; ++j) {
            ++nibbles[bytes[b + j] & 0xF];
            ++nibbles[bytes[b + j] >> 4];
        }
    EXPECT_EQ(countsByCode(v->usage), nibbles);

    // 6-bit scales and mins: one per 32 weights; F16 d and dmin: one per 256.
    ASSERT_EQ(g.scales.levels.size(), 64u);
    EXPECT_EQ(total(g.scales.levels), kQWeights / 32);
    ASSERT_EQ(g.mins.levels.size(), 64u);
    EXPECT_EQ(total(g.mins.levels), kQWeights / 32);
    ASSERT_TRUE(g.d && g.dmin);
    EXPECT_EQ(g.d->count + g.d->nonFinite, kQWeights / 256);
    EXPECT_EQ(g.dmin->count + g.dmin->nonFinite, kQWeights / 256);
    // Scales and mins are stored as 6-bit multiples of d and dmin; bytes 4..7 of each block hold the low
    // 6 bits of scales 0..3 and mins 0..3.
    std::map<int, std::uint64_t> firstScales;
    for (std::size_t b = 0; b < bytes.size(); b += 144)
        for (int j = 0; j < 4; ++j) ++firstScales[bytes[b + 4 + j] & 63];
    const auto shown = countsByCode(g.scales.levels);
    for (const auto& [scale, count] : firstScales) EXPECT_GE(shown.count(scale) ? shown.at(scale) : 0, count);

    const QString caption = page().captionText();
    EXPECT_TRUE(caption.contains(QStringLiteral("4.5 bits per weight"))) << caption.toStdString();
    EXPECT_TRUE(caption.contains(QStringLiteral("6-bit sub-block scales and 6-bit sub-block mins, one per 32 weights")))
        << caption.toStdString();
    EXPECT_TRUE(caption.contains(QStringLiteral("f16 d and f16 dmin, one per 256 weights"))) << caption.toStdString();
    EXPECT_FALSE(caption.contains(QStringLiteral("stores no code"))) << caption.toStdString();
    EXPECT_EQ(page().codesPlot()->title(), QStringLiteral("Codes used: %1 of 16").arg(quant::codesUsed(v->usage)));
    EXPECT_EQ(page().scalesPlot()->title(), QStringLiteral("Scales per 32"));
    EXPECT_EQ(page().zerosPlot()->title(), QStringLiteral("Mins per 32"));
    EXPECT_FALSE(page().superMinsPlot()->isHidden());
    EXPECT_GT(page().scalesPlot()->plottableCount(), 0);

    // Layer 1's v_proj is Q6_K in Q4_K_M: 64 codes standing for -32..31, int8 scales per 16, no mins.
    v = select("model.layers.1.self_attn.v_proj.weight");
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->ggml.has_value());
    EXPECT_EQ(v->ggml->type, QStringLiteral("q6_K"));
    ASSERT_EQ(v->usage.size(), 64u);
    EXPECT_EQ(v->usage.front().level, -32.0f);
    EXPECT_EQ(total(v->usage), 128u * 256u);
    EXPECT_EQ(total(v->ggml->scales.levels), 128u * 256u / 16);
    EXPECT_TRUE(v->ggml->mins.empty());
    EXPECT_FALSE(v->ggml->dmin.has_value());
    EXPECT_TRUE(page().superMinsPlot()->isHidden());
    EXPECT_EQ(page().zerosPlot()->title(), QStringLiteral("No mins (symmetric)"));
}

TEST_F(QuantizedGgmlBlocksTest, Iq4_XsShowsItsTableCodesAndSignedScales) {
    const QString path = quantizedDemo(QStringLiteral("iq4_xs"));
    const Views* v = show(path, "model.layers.0.self_attn.q_proj.weight");
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->ggml.has_value());
    EXPECT_EQ(v->ggml->type, QStringLiteral("iq4_xs"));
    EXPECT_EQ(v->ggml->bitsPerWeight, 4.25);
    EXPECT_EQ(cliBitsPerWeight(path)[QStringLiteral("iq4_xs")], 4.25);
    // The 16 levels of the table, in increasing value, holding every weight.
    ASSERT_EQ(v->usage.size(), 16u);
    EXPECT_EQ(v->usage.front().level, -127.0f);
    EXPECT_EQ(v->usage.back().level, 113.0f);
    EXPECT_EQ(total(v->usage), kQWeights);
    // Nibbles of qs (bytes 8..135 of each 136-byte block).
    const auto bytes = storedBytes(path, "blk.0.attn_q.weight");
    std::map<int, std::uint64_t> nibbles;
    for (std::size_t b = 0; b < bytes.size(); b += 136)
        for (std::size_t j = 8; j < 136; ++j) {
            ++nibbles[bytes[b + j] & 0xF];
            ++nibbles[bytes[b + j] >> 4];
        }
    EXPECT_EQ(countsByCode(v->usage), nibbles);
    // 6-bit scales standing for -32..31, one per 32; one d per 256.
    ASSERT_EQ(v->ggml->scales.levels.size(), 64u);
    EXPECT_EQ(v->ggml->scales.levels.front().level, -32.0f);
    EXPECT_EQ(total(v->ggml->scales.levels), kQWeights / 32);
    ASSERT_TRUE(v->ggml->d.has_value());
    EXPECT_EQ(v->ggml->d->count, kQWeights / 256);
    EXPECT_TRUE(page().captionText().contains(QStringLiteral("4-bit codes into a 16-level table, one per weight")))
        << page().captionText().toStdString();
}

TEST_F(QuantizedGgmlBlocksTest, CodebookTypesCountTheirEntriesAndLegacyTypesTheirScales) {
    QTemporaryDir dir;
    const QString path =
        withRandomBlocks(quantizedDemo(QStringLiteral("q4_k_m")), dir.path(),
                         {{"blk.0.attn_q.weight", io::GgmlType::IQ2_XS}, {"blk.0.attn_k.weight", io::GgmlType::Q4_0}});
    const Views* v = show(path, "model.layers.0.self_attn.q_proj.weight");
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->ggml.has_value());
    EXPECT_EQ(v->ggml->type, QStringLiteral("iq2_xs"));
    EXPECT_EQ(v->ggml->bitsPerWeight, 2.3125);
    // 512 codebook entries, one per 8 weights: the low 9 bits of the 32 u16 after d in each 74-byte block.
    ASSERT_EQ(v->usage.size(), 512u);
    EXPECT_EQ(v->ggml->weightsPerCode, 8);
    EXPECT_EQ(total(v->usage), kQWeights / 8);
    const auto bytes = storedBytes(path, "blk.0.attn_q.weight");
    std::map<int, std::uint64_t> entries;
    for (std::size_t b = 0; b < bytes.size(); b += 74)
        for (std::size_t k = 0; k < 32; ++k) ++entries[(bytes[b + 2 + 2 * k] | (bytes[b + 3 + 2 * k] << 8)) & 511];
    EXPECT_EQ(countsByCode(v->usage), entries);
    EXPECT_EQ(total(v->ggml->scales.levels), kQWeights / 16);
    EXPECT_TRUE(page().codesPlot()->title().startsWith(QStringLiteral("Entries used: ")))
        << page().codesPlot()->title().toStdString();
    EXPECT_TRUE(page().captionText().contains(QStringLiteral("negated by their sign bits")))
        << page().captionText().toStdString();

    // Q4_0: codes standing for -8..7 and one f16 d per 32, drawn as a histogram of its values.
    v = select("model.layers.0.self_attn.k_proj.weight");
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->ggml.has_value());
    EXPECT_EQ(v->ggml->type, QStringLiteral("q4_0"));
    ASSERT_EQ(v->usage.size(), 16u);
    EXPECT_EQ(v->usage.front().level, -8.0f);
    EXPECT_EQ(total(v->usage), 128u * 256u);
    ASSERT_TRUE(v->ggml->scales.values.has_value());
    EXPECT_EQ(v->ggml->scales.values->count, 128u * 256u / 32);
    EXPECT_FALSE(v->ggml->d.has_value());
    EXPECT_EQ(page().scalesPlot()->title(), QStringLiteral("d per 32 (f16)"));
}

// The plots a GGUF linear relabelled (bars per stored scale, d beside dmin) are the scales, zeros and
// g_idx plots again for the next checkpoint.
TEST_F(QuantizedGgmlBlocksTest, AfterAGgufLinearAGptqOneHasItsOwnPlots) {
    ASSERT_NE(show(quantizedDemo(QStringLiteral("q4_k_m")), "model.layers.0.self_attn.q_proj.weight"), nullptr);
    EXPECT_FALSE(page().superMinsPlot()->isHidden());
    const Views* v = show(quantizedDemo(QStringLiteral("gptq4-act")), "model.layers.0.self_attn.q_proj.qweight");
    ASSERT_NE(v, nullptr);
    EXPECT_FALSE(v->ggml.has_value());
    EXPECT_TRUE(page().superMinsPlot()->isHidden());
    EXPECT_EQ(page().scalesPlot()->title(), QStringLiteral("Scales per group"));
    EXPECT_EQ(page().scalesPlot()->xAxis->label(), QStringLiteral("scale"));
    EXPECT_TRUE(page().scalesPlot()->xAxis->ticker().dynamicCast<QCPAxisTickerText>().isNull());
    EXPECT_EQ(page().zerosPlot()->xAxis->label(), QStringLiteral("zero point"));
    EXPECT_EQ(page().gIdxPlot()->xAxis->label(), QStringLiteral("input column"));
    EXPECT_TRUE(page().errorPlot()->title().startsWith(QStringLiteral("Rounding error")));
}

}  // namespace
}  // namespace qs::gui::test
