#pragma once
// The metadata of a GGUF file: typed values (GGUF's 13 value types, arrays of any of them, arrays of
// arrays included) under string keys, in file order. docs/formats/gguf.md describes the layout.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace qs::io {

// Numbered as GGUF stores them (gguf_type in ggml's gguf.h).
enum class GgufValueType : std::uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

// "u32", "string", "array", ...; "type N" for a number that is no type.
std::string ggufValueTypeName(GgufValueType type);
// Bytes one value of a fixed-size type occupies (0 for String and Array, whose size varies).
std::size_t ggufValueTypeSize(GgufValueType type);

class GgufValue;

struct GgufArray {
    GgufValueType elementType = GgufValueType::U8;
    std::vector<GgufValue> items;
};

class GgufValue {
public:
    GgufValue() = default;  // the u8 value 0
    // The integer types keep their exact value; F32 values are stored widened to double.
    static GgufValue unsignedInteger(GgufValueType type, std::uint64_t v) { return GgufValue(type, v); }
    static GgufValue signedInteger(GgufValueType type, std::int64_t v) { return GgufValue(type, v); }
    static GgufValue floating(GgufValueType type, double v) { return GgufValue(type, v); }
    static GgufValue boolean(bool v) { return GgufValue(GgufValueType::Bool, v); }
    static GgufValue string(std::string v) { return GgufValue(GgufValueType::String, std::move(v)); }
    static GgufValue array(GgufArray v) { return GgufValue(GgufValueType::Array, std::move(v)); }
    // Shorthands for what the writer stores most: u32, i32, f32, string, arrays of strings/f32/i32.
    static GgufValue u32(std::uint32_t v) { return unsignedInteger(GgufValueType::U32, v); }
    static GgufValue i32(std::int32_t v) { return signedInteger(GgufValueType::I32, v); }
    static GgufValue f32(float v) { return floating(GgufValueType::F32, v); }
    static GgufValue strings(std::vector<std::string> v);
    static GgufValue f32s(const std::vector<float>& v);
    static GgufValue i32s(const std::vector<std::int32_t>& v);

    GgufValueType type() const { return type_; }
    bool isInteger() const;  // U8..I64
    bool isNumber() const;   // an integer or F32/F64
    bool isString() const { return type_ == GgufValueType::String; }

    // Checked reads: nullopt when the value is not of that kind (or an integer does not fit).
    std::optional<std::int64_t> asInteger() const;
    std::optional<std::uint64_t> asUnsigned() const;  // a non-negative integer
    std::optional<double> asNumber() const;
    std::optional<bool> asBool() const;
    const std::string* asString() const;
    const GgufArray* asArray() const;

    // For messages and `inspect`: the value as text, arrays shortened to their type and length.
    std::string summary() const;

private:
    using Storage = std::variant<std::uint64_t, std::int64_t, double, bool, std::string, GgufArray>;
    GgufValue(GgufValueType type, Storage value) : type_(type), value_(std::move(value)) {}

    GgufValueType type_ = GgufValueType::U8;
    Storage value_ = std::uint64_t{0};  // a default value is the u8 0
};

// Key -> value in file order (GGUF keys are unique).
class GgufMetadata {
public:
    const std::vector<std::pair<std::string, GgufValue>>& entries() const { return entries_; }
    std::size_t size() const { return entries_.size(); }
    bool contains(std::string_view key) const { return find(key) != nullptr; }
    const GgufValue* find(std::string_view key) const;

    // Replaces the value of an existing key in place, else appends it.
    void set(std::string key, GgufValue value);
    // Appends; returns false (and changes nothing) when the key is already there.
    bool add(std::string key, GgufValue value);

    // Typed reads of optional keys: nullopt/nullptr when absent or of another kind.
    std::optional<std::int64_t> integer(std::string_view key) const;
    std::optional<double> number(std::string_view key) const;
    std::optional<bool> boolean(std::string_view key) const;
    const std::string* string(std::string_view key) const;
    const GgufArray* array(std::string_view key) const;

private:
    std::vector<std::pair<std::string, GgufValue>> entries_;
    std::map<std::string, std::size_t, std::less<>> index_;
};

}  // namespace qs::io
