#pragma once
// SequenceFile: a set of [T_i, cols] f32 matrices (one per token sequence) in one file, raw row-major
// floats, sequence after sequence, so that any one of them is read or rewritten in place without
// touching the others: how hidden states that do not fit in memory live in a work folder. The bits
// written are the bits read back.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "qs/matrix.h"

namespace qs::pipeline {

// The rows of each sequence and the common width: what a SequenceFile holds (and a stream's size).
struct SequenceShape {
    std::vector<std::int64_t> rows;
    std::int64_t cols = 0;

    std::size_t size() const { return rows.size(); }
    std::uint64_t bytes() const;                // of every sequence
    std::uint64_t offset(std::size_t i) const;  // where sequence i starts in the file
    std::uint64_t sequenceBytes(std::size_t i) const {
        return std::uint64_t(rows[i]) * std::uint64_t(cols) * sizeof(float);
    }
};

SequenceShape shapeOf(const std::vector<MatrixF>& sequences);

class SequenceFile {
public:
    // A new file of `shape`'s size (replacing any), to be filled by write().
    static SequenceFile create(const std::filesystem::path& path, SequenceShape shape);
    // An existing file; refuses one whose size is not `shape`'s.
    static SequenceFile open(const std::filesystem::path& path, SequenceShape shape, bool writable = false);
    ~SequenceFile();
    SequenceFile(SequenceFile&& other) noexcept;
    SequenceFile& operator=(SequenceFile&& other) noexcept;
    SequenceFile(const SequenceFile&) = delete;
    SequenceFile& operator=(const SequenceFile&) = delete;

    const SequenceShape& shape() const { return shape_; }
    const std::filesystem::path& path() const { return path_; }
    // Sequence i into `out` (resized to its shape).
    void read(std::size_t i, MatrixF& out) const;
    // Sequence i from `in`, which must have its shape.
    void write(std::size_t i, const MatrixF& in);

    // Every sequence of `sequences` into a new file at `path`.
    static void save(const std::filesystem::path& path, const std::vector<MatrixF>& sequences);
    // Every sequence of the file at `path` (of `shape`) into memory.
    static std::vector<MatrixF> load(const std::filesystem::path& path, const SequenceShape& shape);

private:
    SequenceFile(std::filesystem::path path, SequenceShape shape, int fd)
        : path_(std::move(path)), shape_(std::move(shape)), fd_(fd) {}
    std::filesystem::path path_;
    SequenceShape shape_;
    int fd_ = -1;
};

}  // namespace qs::pipeline
