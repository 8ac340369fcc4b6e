#pragma once
// GGUF file images built byte by byte from the layout of ggml's gguf.cpp, independent of QuantScope's
// writer, so that the reader can be checked on files made right and made wrong on purpose.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace qs::io::test {

class GgufBytes {
public:
    GgufBytes& raw(const std::string& s) {
        for (const char c : s) bytes_.push_back(static_cast<std::byte>(c));
        return *this;
    }
    template <typename T>
    GgufBytes& put(T value) {
        unsigned char b[sizeof(T)];
        std::memcpy(b, &value, sizeof(T));  // the test machines are little-endian, as GGUF is
        for (const unsigned char c : b) bytes_.push_back(static_cast<std::byte>(c));
        return *this;
    }
    GgufBytes& u32(std::uint32_t v) { return put(v); }
    GgufBytes& u64(std::uint64_t v) { return put(v); }
    GgufBytes& i64(std::int64_t v) { return put(v); }
    GgufBytes& str(const std::string& s) { return u64(s.size()).raw(s); }

    // "GGUF", version, tensor count, metadata count.
    GgufBytes& header(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
        return raw("GGUF").u32(version).u64(tensors).u64(kvs);
    }
    GgufBytes& kvU32(const std::string& key, std::uint32_t v) { return str(key).u32(4).u32(v); }
    GgufBytes& kvString(const std::string& key, const std::string& v) { return str(key).u32(8).str(v); }
    // One tensor info: name, dims innermost first, ggml type, offset in the data section.
    GgufBytes& tensor(const std::string& name, const std::vector<std::int64_t>& dims, std::uint32_t type,
                      std::uint64_t offset) {
        str(name).u32(static_cast<std::uint32_t>(dims.size()));
        for (const auto d : dims) i64(d);
        return u32(type).u64(offset);
    }
    GgufBytes& padTo(std::size_t alignment) {
        while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
        return *this;
    }
    GgufBytes& fill(std::size_t n, unsigned char value = 0) {
        bytes_.insert(bytes_.end(), n, std::byte{value});
        return *this;
    }
    std::size_t size() const { return bytes_.size(); }
    const std::vector<std::byte>& bytes() const { return bytes_; }

private:
    std::vector<std::byte> bytes_;
};

}  // namespace qs::io::test
