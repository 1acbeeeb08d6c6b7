#include "core/byte_reader.h"

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(CheckedArithmeticTest, OverflowIsNullopt) {
  EXPECT_EQ(CheckedAdd(1, 2), 3u);
  EXPECT_EQ(CheckedAdd(kMax, 0), kMax);
  EXPECT_FALSE(CheckedAdd(kMax, 1).has_value());
  EXPECT_EQ(CheckedMul(1u << 20, 1u << 20), uint64_t{1} << 40);
  EXPECT_FALSE(CheckedMul(uint64_t{1} << 32, uint64_t{1} << 32).has_value());
  EXPECT_TRUE(RangeInside(0, 4, 4));
  EXPECT_TRUE(RangeInside(4, 0, 4));
  EXPECT_FALSE(RangeInside(5, 0, 4));
  EXPECT_FALSE(RangeInside(1, 4, 4));
  EXPECT_FALSE(RangeInside(2, kMax, 4));  // offset + length wraps to 1
}

TEST(ByteReaderTest, LittleEndianFieldsInsideTheView) {
  const std::string bytes("\x01\x02\x03\x04\x05\x06\x07\x08\xff\xff", 10);
  ByteReader reader(bytes);
  EXPECT_EQ(reader.size(), 10u);
  EXPECT_EQ(reader.U8(0), 0x01u);
  EXPECT_EQ(reader.U16(0), 0x0201u);
  EXPECT_EQ(reader.U32(0), 0x04030201u);
  EXPECT_EQ(reader.U64(0), 0x0807060504030201ull);
  EXPECT_EQ(reader.I16(8), -1);
  EXPECT_EQ(reader.I32(6), static_cast<int32_t>(0xffff0807u));
  EXPECT_EQ(reader.I64(2), static_cast<int64_t>(0xffff080706050403ull));
  EXPECT_EQ(reader.U16(8), 0xffffu);
}

TEST(ByteReaderTest, NothingIsReadPastTheEnd) {
  const std::string bytes("\x01\x02\x03\x04", 4);
  ByteReader reader(bytes);
  EXPECT_FALSE(reader.U8(4).has_value());
  EXPECT_FALSE(reader.U16(3).has_value());
  EXPECT_FALSE(reader.U32(1).has_value());
  EXPECT_FALSE(reader.U64(0).has_value());
  EXPECT_FALSE(reader.I64(0).has_value());
  EXPECT_FALSE(reader.U32(kMax - 1).has_value());
  EXPECT_FALSE(reader.Bytes(2, 3).has_value());
  EXPECT_EQ(reader.Bytes(2, 2), std::string_view("\x03\x04", 2));
  EXPECT_EQ(reader.Bytes(4, 0), std::string_view());
  EXPECT_FALSE(ByteReader().U8(0).has_value());
}

TEST(ByteReaderTest, SlicesCountFromTheirStart) {
  const std::string bytes("\x00\x00\xaa\xbb\xcc\xdd\xee", 7);
  ByteReader reader(bytes);
  auto slice = reader.Slice(2, 4);
  ASSERT_TRUE(slice.has_value());
  EXPECT_EQ(slice->size(), 4u);
  EXPECT_EQ(slice->U32(0), 0xddccbbaau);
  EXPECT_FALSE(slice->U8(4).has_value()) << "the byte after the slice is not part of it";
  EXPECT_FALSE(reader.Slice(5, 3).has_value());
  EXPECT_FALSE(reader.Slice(8, 0).has_value());
  EXPECT_EQ(reader.Slice(7, 0)->size(), 0u);
}

TEST(ByteReaderTest, CStrings) {
  const std::string bytes("ab\0cd", 5);
  ByteReader reader(bytes);
  EXPECT_EQ(reader.CString(0), "ab");
  EXPECT_EQ(reader.CString(2), "");
  EXPECT_FALSE(reader.CString(3).has_value()) << "no NUL before the end";
  EXPECT_FALSE(reader.CString(5).has_value());
}

}  // namespace
}  // namespace gputriage::core
