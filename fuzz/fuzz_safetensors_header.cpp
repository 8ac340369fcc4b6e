// libFuzzer target for parseSafetensors: any input must either be rejected with qs::Error or give a
// header whose invariants hold (tensors tile the data buffer exactly, sizes match shapes), and whose
// tensors can be converted to f32 without reading outside the input.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "qs/io/safetensors_file.h"

#include "fuzz_support.h"

namespace {

using qs::fuzz::check;

void checkInvariants(const qs::io::SafetensorsHeader& h, std::span<const std::byte> file) {
    check(8 + h.headerLength + h.dataLength() == file.size());
    const auto data = file.subspan(8 + h.headerLength);
    std::uint64_t expectedBegin = 0;
    for (const auto& t : h.tensors) {
        check(t.begin == expectedBegin && t.end >= t.begin);
        check(t.byteSize() == static_cast<std::uint64_t>(t.numel()) * qs::io::dtypeSize(t.dtype));
        expectedBegin = t.end;
        const qs::io::TensorView view(t, data.subspan(t.begin, t.byteSize()));
        const std::vector<float> values = view.toF32();
        check(values.size() == static_cast<std::size_t>(t.numel()));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data), size);
    try {
        checkInvariants(qs::io::parseSafetensors(file, "fuzz.safetensors"), file);
    } catch (const qs::Error& e) {
        qs::fuzz::checkRefusal(e);
    }
    return 0;
}
