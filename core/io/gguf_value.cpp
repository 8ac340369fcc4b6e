// GGUF metadata values and the ordered key -> value table.
#include "qs/io/gguf_value.h"

#include <limits>
#include <sstream>

namespace qs::io {

std::string ggufValueTypeName(GgufValueType type) {
    switch (type) {
        case GgufValueType::U8: return "u8";
        case GgufValueType::I8: return "i8";
        case GgufValueType::U16: return "u16";
        case GgufValueType::I16: return "i16";
        case GgufValueType::U32: return "u32";
        case GgufValueType::I32: return "i32";
        case GgufValueType::F32: return "f32";
        case GgufValueType::Bool: return "bool";
        case GgufValueType::String: return "string";
        case GgufValueType::Array: return "array";
        case GgufValueType::U64: return "u64";
        case GgufValueType::I64: return "i64";
        case GgufValueType::F64: return "f64";
    }
    return "type " + std::to_string(static_cast<std::uint32_t>(type));
}

std::size_t ggufValueTypeSize(GgufValueType type) {
    switch (type) {
        case GgufValueType::U8:
        case GgufValueType::I8:
        case GgufValueType::Bool: return 1;
        case GgufValueType::U16:
        case GgufValueType::I16: return 2;
        case GgufValueType::U32:
        case GgufValueType::I32:
        case GgufValueType::F32: return 4;
        case GgufValueType::U64:
        case GgufValueType::I64:
        case GgufValueType::F64: return 8;
        case GgufValueType::String:
        case GgufValueType::Array: return 0;
    }
    return 0;
}

GgufValue GgufValue::strings(std::vector<std::string> v) {
    GgufArray a{GgufValueType::String, {}};
    a.items.reserve(v.size());
    for (auto& s : v) a.items.push_back(string(std::move(s)));
    return array(std::move(a));
}

GgufValue GgufValue::f32s(const std::vector<float>& v) {
    GgufArray a{GgufValueType::F32, {}};
    a.items.reserve(v.size());
    for (const float x : v) a.items.push_back(f32(x));
    return array(std::move(a));
}

GgufValue GgufValue::i32s(const std::vector<std::int32_t>& v) {
    GgufArray a{GgufValueType::I32, {}};
    a.items.reserve(v.size());
    for (const std::int32_t x : v) a.items.push_back(i32(x));
    return array(std::move(a));
}

bool GgufValue::isInteger() const {
    return std::holds_alternative<std::uint64_t>(value_) || std::holds_alternative<std::int64_t>(value_);
}

bool GgufValue::isNumber() const { return isInteger() || std::holds_alternative<double>(value_); }

std::optional<std::int64_t> GgufValue::asInteger() const {
    if (const auto* u = std::get_if<std::uint64_t>(&value_)) {
        if (*u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
        return static_cast<std::int64_t>(*u);
    }
    if (const auto* i = std::get_if<std::int64_t>(&value_)) return *i;
    return std::nullopt;
}

std::optional<std::uint64_t> GgufValue::asUnsigned() const {
    if (const auto* u = std::get_if<std::uint64_t>(&value_)) return *u;
    if (const auto* i = std::get_if<std::int64_t>(&value_); i && *i >= 0) return static_cast<std::uint64_t>(*i);
    return std::nullopt;
}

std::optional<double> GgufValue::asNumber() const {
    if (const auto* d = std::get_if<double>(&value_)) return *d;
    if (const auto* u = std::get_if<std::uint64_t>(&value_)) return static_cast<double>(*u);
    if (const auto* i = std::get_if<std::int64_t>(&value_)) return static_cast<double>(*i);
    return std::nullopt;
}

std::optional<bool> GgufValue::asBool() const {
    if (const auto* b = std::get_if<bool>(&value_)) return *b;
    return std::nullopt;
}

const std::string* GgufValue::asString() const { return std::get_if<std::string>(&value_); }
const GgufArray* GgufValue::asArray() const { return std::get_if<GgufArray>(&value_); }

std::string GgufValue::summary() const {
    if (const auto* a = asArray())
        return "[" + ggufValueTypeName(a->elementType) + " x " + std::to_string(a->items.size()) + "]";
    if (const auto* s = asString()) return *s;
    if (const auto b = asBool()) return *b ? "true" : "false";
    if (type_ == GgufValueType::F32 || type_ == GgufValueType::F64) {
        std::ostringstream out;
        out.precision(type_ == GgufValueType::F32 ? 9 : 17);
        out << std::get<double>(value_);
        return out.str();
    }
    if (const auto* u = std::get_if<std::uint64_t>(&value_)) return std::to_string(*u);
    if (const auto* i = std::get_if<std::int64_t>(&value_)) return std::to_string(*i);
    return "";
}

const GgufValue* GgufMetadata::find(std::string_view key) const {
    const auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void GgufMetadata::set(std::string key, GgufValue value) {
    if (const auto it = index_.find(key); it != index_.end()) {
        entries_[it->second].second = std::move(value);
        return;
    }
    add(std::move(key), std::move(value));
}

bool GgufMetadata::add(std::string key, GgufValue value) {
    if (index_.contains(key)) return false;
    index_.emplace(key, entries_.size());
    entries_.emplace_back(std::move(key), std::move(value));
    return true;
}

std::optional<std::int64_t> GgufMetadata::integer(std::string_view key) const {
    const GgufValue* v = find(key);
    return v ? v->asInteger() : std::nullopt;
}

std::optional<double> GgufMetadata::number(std::string_view key) const {
    const GgufValue* v = find(key);
    return v ? v->asNumber() : std::nullopt;
}

std::optional<bool> GgufMetadata::boolean(std::string_view key) const {
    const GgufValue* v = find(key);
    return v ? v->asBool() : std::nullopt;
}

const std::string* GgufMetadata::string(std::string_view key) const {
    const GgufValue* v = find(key);
    return v ? v->asString() : nullptr;
}

const GgufArray* GgufMetadata::array(std::string_view key) const {
    const GgufValue* v = find(key);
    return v ? v->asArray() : nullptr;
}

}  // namespace qs::io
