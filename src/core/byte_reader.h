// A bounds-checked, little-endian reader over untrusted bytes (core-file notes, code objects,
// fatbin and bundle headers), and checked arithmetic for the offsets and sizes read from them.
// Every accessor returns nullopt instead of reading past the end; nothing here allocates.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace gputriage::core {

/// a + b, or nullopt when it overflows uint64_t.
inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

/// a * b, or nullopt when it overflows uint64_t.
inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

/// True when [offset, offset + length) lies inside [0, size). Never overflows.
inline bool RangeInside(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

/// Reads fixed-size little-endian fields at explicit offsets of a view it does not own (the
/// bytes must outlive the reader and what it returns). Offsets are relative to the view; a
/// Slice is a reader over part of it with offsets from the slice's start.
class ByteReader {
 public:
  ByteReader() = default;
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  size_t size() const { return bytes_.size(); }
  /// The whole view.
  std::string_view bytes() const { return bytes_; }

  /// The `length` bytes at `offset`, or nullopt when they are not all inside.
  std::optional<std::string_view> Bytes(uint64_t offset, uint64_t length) const {
    if (!RangeInside(offset, length, bytes_.size())) return std::nullopt;
    return bytes_.substr(offset, length);
  }

  /// A reader over the `length` bytes at `offset`, or nullopt when they are not all inside.
  std::optional<ByteReader> Slice(uint64_t offset, uint64_t length) const {
    auto bytes = Bytes(offset, length);
    if (!bytes) return std::nullopt;
    return ByteReader(*bytes);
  }

  std::optional<uint8_t> U8(uint64_t offset) const { return Read<uint8_t>(offset); }
  std::optional<uint16_t> U16(uint64_t offset) const { return Read<uint16_t>(offset); }
  std::optional<uint32_t> U32(uint64_t offset) const { return Read<uint32_t>(offset); }
  std::optional<uint64_t> U64(uint64_t offset) const { return Read<uint64_t>(offset); }
  std::optional<int16_t> I16(uint64_t offset) const { return Read<int16_t>(offset); }
  std::optional<int32_t> I32(uint64_t offset) const { return Read<int32_t>(offset); }
  std::optional<int64_t> I64(uint64_t offset) const { return Read<int64_t>(offset); }

  /// The NUL-terminated string starting at `offset` (without the NUL); nullopt when `offset`
  /// is outside or no NUL follows inside the view.
  std::optional<std::string_view> CString(uint64_t offset) const {
    if (offset >= bytes_.size()) return std::nullopt;
    size_t end = bytes_.find('\0', offset);
    if (end == std::string_view::npos) return std::nullopt;
    return bytes_.substr(offset, end - offset);
  }

 private:
  // Every format read here is little-endian (ELF cores and code objects are checked for
  // ELFDATA2LSB first; fatbins and bundles have no other encoding).
  template <typename T>
  std::optional<T> Read(uint64_t offset) const {
    static_assert(std::is_integral_v<T>);
    if (!RangeInside(offset, sizeof(T), bytes_.size())) return std::nullopt;
    unsigned char raw[sizeof(T)];
    std::memcpy(raw, bytes_.data() + offset, sizeof(T));
    if constexpr (std::endian::native != std::endian::little) {
      for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(raw[i], raw[sizeof(T) - 1 - i]);
    }
    T value;
    std::memcpy(&value, raw, sizeof(T));
    return value;
  }

  std::string_view bytes_;
};

}  // namespace gputriage::core
