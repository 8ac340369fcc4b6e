// fingerprintOf: the same checkpoint however its path is spelled gives one fingerprint; a copy
// elsewhere, another header, another config.json or another file of the same folder gives another.
// Tensor data is not read (a checkpoint whose weights changed under the same headers keeps its hash);
// a GGUF is known by its file name, size and tensor table.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "qs/error.h"
#include "qs/io/checkpoint_fingerprint.h"

#include "io_test_util.h"

using namespace qs::io;
using qs::io::test::safetensorsImage;
using qs::io::test::TempDir;
using qs::io::test::writeBytes;
using qs::io::test::writeText;

namespace {

const std::string kHeader =
    R"({"model.layers.0.mlp.down_proj.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
const std::string kConfig = R"({"model_type":"llama","hidden_size":2})";

void writeCheckpoint(const std::filesystem::path& dir, const std::string& header = kHeader,
                     const std::string& config = kConfig) {
    std::filesystem::create_directories(dir);
    writeBytes(dir / "model.safetensors", safetensorsImage(header, 16));
    writeText(dir / "config.json", config);
}

CheckpointFingerprint fingerprintAt(const std::filesystem::path& path) { return fingerprintOf(Checkpoint::open(path)); }

TEST(CheckpointFingerprint, HeaderBytesAreTheFilesFirstBytes) {
    TempDir dir;
    writeCheckpoint(dir.path());
    const auto file = SafetensorsFile::open(dir / "model.safetensors");
    const auto bytes = file.headerBytes();
    ASSERT_EQ(bytes.size(), 8 + kHeader.size());
    EXPECT_EQ(static_cast<unsigned char>(bytes[0]), kHeader.size());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()) + 8, kHeader.size()), kHeader);
}

TEST(CheckpointFingerprint, OneCheckpointHowEverItsPathIsSpelled) {
    TempDir dir;
    writeCheckpoint(dir / "base");
    std::filesystem::create_directory_symlink(dir / "base", dir / "link");
    const CheckpointFingerprint direct = fingerprintAt(dir / "base");
    EXPECT_EQ(direct.path, std::filesystem::canonical(dir / "base"));
    EXPECT_NE(direct.headerHash, 0u);
    EXPECT_EQ(fingerprintAt(dir / "base" / ".." / "base"), direct);
    EXPECT_EQ(fingerprintAt(dir / "link"), direct);
    EXPECT_EQ(fingerprintAt(dir / "base" / "model.safetensors"), direct);  // the file or its folder
    EXPECT_NE(direct.describe().find((dir / "base").filename().string() + " (headers "), std::string::npos)
        << direct.describe();
}

TEST(CheckpointFingerprint, ACopyElsewhereHasTheSameHashAndAnotherPath) {
    TempDir dir;
    writeCheckpoint(dir / "base");
    writeCheckpoint(dir / "finetune");  // same headers and config, other weights in real life
    const CheckpointFingerprint base = fingerprintAt(dir / "base"), finetune = fingerprintAt(dir / "finetune");
    EXPECT_EQ(base.headerHash, finetune.headerHash);
    EXPECT_NE(base, finetune);
}

TEST(CheckpointFingerprint, AnotherHeaderOrConfigInPlaceChangesTheHash) {
    TempDir dir;
    writeCheckpoint(dir.path());
    const CheckpointFingerprint before = fingerprintAt(dir.path());
    // Other data under the same header: not seen (headers only, by design).
    std::vector<std::byte> image = safetensorsImage(kHeader, 16);
    image.back() = std::byte{0x7f};
    writeBytes(dir / "model.safetensors", image);
    EXPECT_EQ(fingerprintAt(dir.path()), before);

    std::string bf16 = kHeader;
    bf16.replace(bf16.find("F32"), 3, "I32");
    writeCheckpoint(dir.path(), bf16);
    const CheckpointFingerprint otherHeader = fingerprintAt(dir.path());
    EXPECT_EQ(otherHeader.path, before.path);
    EXPECT_NE(otherHeader.headerHash, before.headerHash);

    writeCheckpoint(dir.path(), kHeader, R"({"model_type":"llama","hidden_size":2,"_name_or_path":"finetune"})");
    EXPECT_NE(fingerprintAt(dir.path()).headerHash, before.headerHash);
    // The same config written with other spacing is the same config.
    writeCheckpoint(dir.path(), kHeader, R"({ "hidden_size": 2, "model_type": "llama" })");
    EXPECT_EQ(fingerprintAt(dir.path()), before);
}

TEST(CheckpointFingerprint, TwoFilesOfOneFolderDiffer) {
    TempDir dir;
    writeBytes(dir / "a.safetensors", safetensorsImage(kHeader, 16));
    writeBytes(dir / "b.safetensors", safetensorsImage(kHeader, 16));
    const CheckpointFingerprint a = fingerprintAt(dir / "a.safetensors"), b = fingerprintAt(dir / "b.safetensors");
    EXPECT_NE(a, b);
    // Each names its own file: the folder refuses to choose between them, so it would not open again.
    EXPECT_EQ(a.path.parent_path(), b.path.parent_path());
    EXPECT_EQ(a.path.filename(), "a.safetensors");
    EXPECT_EQ(b.path.filename(), "b.safetensors");
    EXPECT_THROW(Checkpoint::open(dir.path()), qs::Error);
    EXPECT_EQ(fingerprintAt(a.path), a);
    EXPECT_EQ(fingerprintAt(b.path), b);
}

TEST(CheckpointFingerprint, AFileBesideModelSafetensorsNamesItself) {
    TempDir dir;
    writeCheckpoint(dir.path());
    writeBytes(dir / "other.safetensors", safetensorsImage(kHeader, 16));
    const CheckpointFingerprint model = fingerprintAt(dir / "model.safetensors"),
                                other = fingerprintAt(dir / "other.safetensors");
    EXPECT_EQ(model.path, std::filesystem::canonical(dir.path()));  // the folder opens model.safetensors
    EXPECT_EQ(other.path, std::filesystem::canonical(dir / "other.safetensors"));
    EXPECT_NE(model, other);
    EXPECT_EQ(fingerprintAt(other.path), other);
}

// Two GGUF files of one model in one folder (model-Q4_K_M.gguf beside model-Q8_0.gguf share their
// metadata, so their synthesized configs are equal): the file and its tensor table tell them apart.
TEST(CheckpointFingerprint, TwoGgufFilesOfOneFolderDiffer) {
    const std::filesystem::path& tiny = qs::io::test::kTinyLlamaGguf;
    TempDir dir;
    std::filesystem::copy_file(tiny, dir / "a.gguf");
    std::filesystem::copy_file(tiny, dir / "b.gguf");
    const CheckpointFingerprint a = fingerprintAt(dir / "a.gguf"), b = fingerprintAt(dir / "b.gguf");
    // Each names its own file (the folder alone would not open again as either).
    EXPECT_EQ(a.path.parent_path(), b.path.parent_path());
    EXPECT_EQ(a.path.filename(), "a.gguf");
    EXPECT_EQ(b.path.filename(), "b.gguf");
    EXPECT_NE(a, b);
    // The same file, moved into another folder, keeps its hash.
    TempDir other;
    std::filesystem::copy_file(tiny, other / "a.gguf");
    EXPECT_EQ(fingerprintAt(other / "a.gguf").headerHash, a.headerHash);
    // Another file under the same name (here: longer by 32 bytes) does not.
    std::vector<char> bytes((std::istreambuf_iterator<char>(std::ifstream(tiny, std::ios::binary).rdbuf())), {});
    bytes.insert(bytes.end(), 32, '\0');  // a longer file: its size is part of the identity
    std::ofstream(other / "a.gguf", std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_NE(fingerprintAt(other / "a.gguf").headerHash, a.headerHash);
}

}  // namespace
