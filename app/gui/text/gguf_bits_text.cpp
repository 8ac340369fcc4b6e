#include "text/gguf_bits_text.h"

#include <QObject>

namespace qs::gui {

QString ggufBitsText(const io::GgufBitsPerWeight& bits) {
    return QObject::tr("%1 (decoder linears) · %2 (all tensors)")
        .arg(bits.decoderLinears.bitsPerWeight(), 0, 'f', 2)
        .arg(bits.allTensors.bitsPerWeight(), 0, 'f', 2);
}

QString ggufBitsToolTip() {
    return QObject::tr(
        "The bits the decoder's linear weights store per weight, block scales included, as "
        "quantscope-cli inspect gives it; beside it the same over every tensor (embeddings, output, "
        "norms).");
}

}  // namespace qs::gui
