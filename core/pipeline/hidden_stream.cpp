#include "hidden_stream.h"

#include <system_error>

namespace qs::pipeline {
namespace fs = std::filesystem;

HiddenStream HiddenStream::spilled(const fs::path& file, SequenceShape shape) {
    HiddenStream stream;
    stream.file_.emplace(SequenceFile::open(file, std::move(shape)));
    return stream;
}

void HiddenStream::update(const std::function<void(MatrixF&)>& change, const CancelToken& cancel) {
    if (!file_) {
        for (MatrixF& h : resident_) {
            cancel.throwIfCancelled();
            change(h);
        }
        return;
    }
    const bool inPlace = !next_ || (fs::exists(*next_) && fs::equivalent(*next_, file_->path()));
    SequenceFile target = inPlace ? SequenceFile::open(file_->path(), file_->shape(), true)
                                  : SequenceFile::create(*next_, file_->shape());
    MatrixF h;
    for (std::size_t i = 0; i < size(); ++i) {
        cancel.throwIfCancelled();
        file_->read(i, h);
        change(h);
        target.write(i, h);
    }
    file_.emplace(std::move(target));
    next_.reset();
}

void HiddenStream::observe(const std::function<void(const MatrixF&)>& see, const CancelToken& cancel) const {
    MatrixF buffer;
    for (std::size_t i = 0; i < size(); ++i) {
        cancel.throwIfCancelled();
        see(sequence(i, buffer));
    }
}

const MatrixF& HiddenStream::sequence(std::size_t i, MatrixF& buffer) const {
    if (!file_) return resident_.at(i);
    file_->read(i, buffer);
    return buffer;
}

HiddenStream HiddenStream::copy(const std::optional<fs::path>& spillFile) const {
    if (!spillFile) return HiddenStream(inMemory());
    {
        SequenceFile out = SequenceFile::create(*spillFile, shape());
        std::size_t i = 0;
        observe([&](const MatrixF& h) { out.write(i++, h); }, CancelToken());
    }
    return spilled(*spillFile, shape());
}

Hidden HiddenStream::inMemory() const {
    if (!file_) return resident_;
    Hidden out(size());
    for (std::size_t i = 0; i < out.size(); ++i) file_->read(i, out[i]);
    return out;
}

void HiddenStream::movedTo(const fs::path& file) {
    if (!file_) return;
    SequenceShape shape = file_->shape();
    file_.emplace(SequenceFile::open(file, std::move(shape)));
}

void HiddenStream::saveTo(const fs::path& file) const {
    if (!file_) return SequenceFile::save(file, resident_);
    if (fs::exists(file) && fs::equivalent(file, file_->path())) return;
    std::error_code linkFailed;
    fs::create_hard_link(file_->path(), file, linkFailed);
    if (linkFailed) fs::copy_file(file_->path(), file, fs::copy_options::overwrite_existing);
}

}  // namespace qs::pipeline
