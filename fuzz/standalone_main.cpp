// Runs a libFuzzer target's LLVMFuzzerTestOneInput over files and folders of inputs without libFuzzer,
// built with the normal compiler: ctest feeds it the seed corpus and every input that once crashed a
// target (fuzz/regressions/<target>), so a fixed crash stays fixed. A missing folder is skipped (an
// empty regressions folder is not kept by git).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void runFile(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::fprintf(stderr, "running %s (%zu bytes)\n", path.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t count = 0;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path arg = argv[i];
        if (std::filesystem::is_directory(arg)) {
            std::vector<std::filesystem::path> files;
            for (const auto& e : std::filesystem::directory_iterator(arg))
                if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
            std::sort(files.begin(), files.end());
            for (const auto& f : files) runFile(f), ++count;
        } else if (std::filesystem::is_regular_file(arg)) {
            runFile(arg), ++count;
        }
    }
    std::printf("%zu inputs ran without a crash\n", count);
    return 0;
}
