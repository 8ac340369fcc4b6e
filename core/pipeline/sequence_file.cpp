#include "qs/pipeline/sequence_file.h"

#include <cerrno>
#include <cstring>
#include <numeric>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include "qs/error.h"

namespace qs::pipeline {
namespace fs = std::filesystem;

namespace {

std::string failure(const fs::path& path, const char* what) {
    return path.string() + ": cannot " + what + " (" + std::strerror(errno) + ")";
}

// pread / pwrite until every byte is through (both may move fewer bytes than asked).
void readFully(int fd, const fs::path& path, char* data, std::uint64_t bytes, std::uint64_t offset) {
    while (bytes > 0) {
        const ssize_t n = ::pread(fd, data, bytes, off_t(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw Error(n == 0 ? path.string() + ": the file ends early (was it truncated?)" : failure(path, "read"));
        data += n, bytes -= std::uint64_t(n), offset += std::uint64_t(n);
    }
}

void writeFully(int fd, const fs::path& path, const char* data, std::uint64_t bytes, std::uint64_t offset) {
    while (bytes > 0) {
        const ssize_t n = ::pwrite(fd, data, bytes, off_t(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error(failure(path, "write"));
        data += n, bytes -= std::uint64_t(n), offset += std::uint64_t(n);
    }
}

}  // namespace

std::uint64_t SequenceShape::bytes() const { return offset(rows.size()); }

std::uint64_t SequenceShape::offset(std::size_t i) const {
    const std::uint64_t before =
        std::accumulate(rows.begin(), rows.begin() + std::ptrdiff_t(i), std::uint64_t{0},
                        [](std::uint64_t sum, std::int64_t r) { return sum + std::uint64_t(r); });
    return before * std::uint64_t(cols) * sizeof(float);
}

SequenceShape shapeOf(const std::vector<MatrixF>& sequences) {
    SequenceShape shape;
    for (const MatrixF& m : sequences) {
        shape.rows.push_back(m.rows());
        shape.cols = m.cols();
    }
    return shape;
}

SequenceFile SequenceFile::create(const fs::path& path, SequenceShape shape) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(failure(path, "create"));
    SequenceFile file(path, std::move(shape), fd);
    if (::ftruncate(fd, off_t(file.shape_.bytes())) != 0) throw Error(failure(path, "size"));
    return file;
}

SequenceFile SequenceFile::open(const fs::path& path, SequenceShape shape, bool writable) {
    const int fd = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) throw Error(failure(path, "open"));
    SequenceFile file(path, std::move(shape), fd);
    const off_t size = ::lseek(fd, 0, SEEK_END);
    if (size < 0 || std::uint64_t(size) != file.shape_.bytes())
        throw Error(path.string() + ": holds " + std::to_string(size) + " bytes of hidden states, " +
                    std::to_string(file.shape_.bytes()) + " were expected (the work folder is damaged)");
    return file;
}

SequenceFile::~SequenceFile() {
    if (fd_ >= 0) ::close(fd_);
}

SequenceFile::SequenceFile(SequenceFile&& other) noexcept
    : path_(std::move(other.path_)), shape_(std::move(other.shape_)), fd_(std::exchange(other.fd_, -1)) {}

SequenceFile& SequenceFile::operator=(SequenceFile&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        path_ = std::move(other.path_);
        shape_ = std::move(other.shape_);
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

void SequenceFile::read(std::size_t i, MatrixF& out) const {
    out.resize(shape_.rows.at(i), shape_.cols);
    readFully(fd_, path_, reinterpret_cast<char*>(out.data()), shape_.sequenceBytes(i), shape_.offset(i));
}

void SequenceFile::write(std::size_t i, const MatrixF& in) {
    if (in.rows() != shape_.rows.at(i) || in.cols() != shape_.cols)
        throw Error(path_.string() + ": sequence " + std::to_string(i) + " changed its shape");
    writeFully(fd_, path_, reinterpret_cast<const char*>(in.data()), shape_.sequenceBytes(i), shape_.offset(i));
}

void SequenceFile::save(const fs::path& path, const std::vector<MatrixF>& sequences) {
    SequenceFile file = create(path, shapeOf(sequences));
    for (std::size_t i = 0; i < sequences.size(); ++i) file.write(i, sequences[i]);
}

std::vector<MatrixF> SequenceFile::load(const fs::path& path, const SequenceShape& shape) {
    const SequenceFile file = open(path, shape);
    std::vector<MatrixF> sequences(shape.size());
    for (std::size_t i = 0; i < sequences.size(); ++i) file.read(i, sequences[i]);
    return sequences;
}

}  // namespace qs::pipeline
