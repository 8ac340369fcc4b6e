#pragma once
// How a GGUF's bits per weight reads wherever the app shows it (the summary, the GGUF tab): the one
// figure `inspect` gives, over the decoder's linears, with the figure over every tensor beside it.
#include <QString>

#include "qs/io/gguf_bits_per_weight.h"

namespace qs::gui {

QString ggufBitsText(const io::GgufBitsPerWeight& bits);  // "4.80 (decoder linears) · 4.91 (all tensors)"
QString ggufBitsToolTip();                                // the definition

}  // namespace qs::gui
