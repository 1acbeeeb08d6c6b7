// A bounds-checked, little-endian reader over untrusted bytes (note descriptors of a core file),
// and checked arithmetic for offsets and sizes read from them. Every accessor returns nullopt
// instead of reading past the end; nothing here allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>

namespace gputriage::corefile {

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

/// True when [offset, offset + length) lies inside [0, size).
inline bool RangeInside(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

/// Reads fixed-size little-endian fields at explicit offsets of a view it does not own.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  size_t size() const { return bytes_.size(); }

  /// The `length` bytes at `offset`, or nullopt when they are not all inside.
  std::optional<std::string_view> Bytes(uint64_t offset, uint64_t length) const {
    if (!RangeInside(offset, length, bytes_.size())) return std::nullopt;
    return bytes_.substr(offset, length);
  }

  std::optional<uint64_t> U64(uint64_t offset) const { return Read<uint64_t>(offset); }
  std::optional<uint32_t> U32(uint64_t offset) const { return Read<uint32_t>(offset); }
  std::optional<int32_t> I32(uint64_t offset) const { return Read<int32_t>(offset); }
  std::optional<int16_t> I16(uint64_t offset) const { return Read<int16_t>(offset); }

  /// The NUL-terminated string starting at `offset` (without the NUL); nullopt when `offset`
  /// is outside or no NUL follows inside the view.
  std::optional<std::string_view> CString(uint64_t offset) const {
    if (offset >= bytes_.size()) return std::nullopt;
    size_t end = bytes_.find('\0', offset);
    if (end == std::string_view::npos) return std::nullopt;
    return bytes_.substr(offset, end - offset);
  }

 private:
  // Only little-endian cores are accepted (checked before any note is read), and both
  // supported hosts are little-endian, so a memcpy is the decoding.
  template <typename T>
  std::optional<T> Read(uint64_t offset) const {
    static_assert(std::is_integral_v<T>);
    if (!RangeInside(offset, sizeof(T), bytes_.size())) return std::nullopt;
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }

  std::string_view bytes_;
};

}  // namespace gputriage::corefile
