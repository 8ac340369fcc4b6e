#include "models/gguf_metadata_model.h"

#include <QFont>

#include "qs/io/gguf_bits_per_weight.h"
#include "qs/io/llama_ftype.h"
#include "qs/message_text.h"

#include "text/gguf_bits_text.h"

namespace qs::gui {
namespace {

constexpr std::size_t kMaxValueBytes = 400;  // a long string (a chat template) is cut, its tooltip longer
constexpr std::size_t kMaxItemBytes = 40;    // one array element

QString oneLine(const std::string& text, std::size_t maxBytes) {
    return QString::fromStdString(sanitizeMessage(text, maxBytes));
}

}  // namespace

QString ggufValueText(const io::GgufValue& value) {
    const io::GgufArray* array = value.asArray();
    if (!array) return oneLine(value.summary(), kMaxValueBytes);
    QString text = QObject::tr("[array of %1 %2]")
                       .arg(array->items.size())
                       .arg(QString::fromStdString(io::ggufValueTypeName(array->elementType)));
    QStringList first;
    const std::size_t shown = std::min<std::size_t>(array->items.size(), GgufMetadataModel::kArrayValuesShown);
    for (std::size_t i = 0; i < shown; ++i) first << oneLine(array->items[i].summary(), kMaxItemBytes);
    if (!first.isEmpty()) text += QLatin1Char(' ') + first.join(QStringLiteral(", "));
    if (array->items.size() > shown) text += QStringLiteral(", …");
    return text;
}

void GgufMetadataModel::setCheckpoint(const io::Checkpoint* checkpoint) {
    beginResetModel();
    rows_.clear();
    if (const io::GgufFile* file = checkpoint ? checkpoint->gguf() : nullptr) {
        const io::GgufHeader& h = file->header();
        const auto headerRow = [this](const QString& key, const QString& value, const QString& toolTip) {
            rows_.push_back({key, value, toolTip, true});
        };
        headerRow(tr("GGUF version"), QString::number(h.version), {});
        if (const auto type = file->metadata().integer("general.file_type"))
            headerRow(tr("File type"), QString::fromStdString(io::llamaFtypeName(*type)),
                      tr("general.file_type = %1 (llama.cpp's llama_ftype)").arg(*type));
        headerRow(tr("Alignment"), tr("%1 bytes").arg(h.alignment), {});
        headerRow(tr("Tensors"), QString::number(h.tensors.size()), tr("Tensors stored in the file"));
        const io::GgufBitsPerWeight bits = io::ggufBitsPerWeight(*checkpoint);
        headerRow(tr("Bits per weight"), ggufBitsText(bits), ggufBitsToolTip());
        for (const auto& [key, value] : file->metadata().entries()) {
            const QString text = ggufValueText(value);
            rows_.push_back({oneLine(key, 200), text, value.asArray() ? QString() : oneLine(value.summary(), 4000)});
        }
    }
    endResetModel();
}

QString GgufMetadataModel::value(const QString& key) const {
    for (const Row& row : rows_)
        if (row.key == key) return row.value;
    return {};
}

int GgufMetadataModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int GgufMetadataModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant GgufMetadataModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const Row& row = rows_[static_cast<std::size_t>(index.row())];
    switch (role) {
        case Qt::DisplayRole: return index.column() == KeyColumn ? row.key : row.value;
        case Qt::ToolTipRole: return index.column() == ValueColumn && !row.toolTip.isEmpty() ? row.toolTip : QVariant();
        case Qt::FontRole:
            if (row.header) {
                QFont bold;
                bold.setBold(true);
                return bold;
            }
            return {};
        default: return {};
    }
}

QVariant GgufMetadataModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    return section == KeyColumn ? tr("Key") : tr("Value");
}

}  // namespace qs::gui
