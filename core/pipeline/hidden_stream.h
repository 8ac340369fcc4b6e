#pragma once
// HiddenStream: the hidden states of a set of token sequences (one [T, hidden] f32 matrix each) as
// they travel through a model, either in memory or, when they do not fit the memory budget
// (JobPlan::maxMemory), in a SequenceFile in the work folder, read and written a sequence at a time.
// Both give the same bits: a spilled stream runs the same arithmetic on the same matrices, and the
// file holds their exact f32 bytes.
//
// A spilled stream never changes a complete file: before each layer the Job names where the layer's
// results go (writeNextTo: the work folder's next hidden-state folder, not yet in place); the update
// reads each sequence from the current file and writes it there. So a run killed in the middle of a
// layer resumes from the previous layer's files, which are intact.
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/matrix.h"
#include "qs/pipeline/sequence_file.h"

namespace qs::pipeline {

using Hidden = std::vector<MatrixF>;  // one [T, hidden] matrix per sequence, in memory

class HiddenStream {
public:
    HiddenStream() = default;  // no sequences
    explicit HiddenStream(Hidden resident) : resident_(std::move(resident)) {}
    // The sequences of the file at `file` (of `shape`), which the stream reads from now on.
    static HiddenStream spilled(const std::filesystem::path& file, SequenceShape shape);

    std::size_t size() const { return file_ ? file_->shape().size() : resident_.size(); }
    bool isSpilled() const { return file_.has_value(); }
    SequenceShape shape() const { return file_ ? file_->shape() : shapeOf(resident_); }
    std::uint64_t bytes() const { return shape().bytes(); }

    // Where the next update() writes a spilled stream (ignored for one in memory). Until then, and
    // when it names the current file (a layer updated twice), the update rewrites the current file.
    void writeNextTo(std::filesystem::path file) { next_ = std::move(file); }
    // Each sequence in turn, changed by `change`; `cancel` is polled before each.
    void update(const std::function<void(MatrixF&)>& change, const CancelToken& cancel);
    // Each sequence in turn, unchanged.
    void observe(const std::function<void(const MatrixF&)>& see, const CancelToken& cancel) const;
    // Sequence i: the stream's own matrix, or `buffer` read from the file.
    const MatrixF& sequence(std::size_t i, MatrixF& buffer) const;

    // A copy with the same bits: in memory, or spilled to a new file at `spillFile`.
    HiddenStream copy(const std::optional<std::filesystem::path>& spillFile) const;
    Hidden inMemory() const;  // every sequence, copied into memory
    // The stream's sequences at `file` (where a work folder keeps them): a stream in memory writes
    // them; a spilled one links its current file there (a copy where links fail) unless it is there.
    void saveTo(const std::filesystem::path& file) const;
    // A spilled stream's file is now at `file` (its folder was renamed into place): read from there.
    void movedTo(const std::filesystem::path& file);

private:
    Hidden resident_;
    std::optional<SequenceFile> file_;
    std::optional<std::filesystem::path> next_;
};

}  // namespace qs::pipeline
