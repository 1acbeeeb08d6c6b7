#include "core/result.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

TEST(ErrorTest, PlainErrorsAreUnknownWithoutErrno) {
  Error plain{"plain"};
  EXPECT_EQ(plain.message, "plain");
  EXPECT_EQ(plain.code, ErrorCode::kUnknown);
  EXPECT_EQ(plain.sys_errno, 0);
  Error made = MakeError("{}: {} bytes", "core.1", 12);
  EXPECT_EQ(made.message, "core.1: 12 bytes");
  EXPECT_EQ(made.code, ErrorCode::kUnknown);
  EXPECT_EQ(made.sys_errno, 0);
}

TEST(ErrorTest, MakeErrorCodeKeepsTheCode) {
  Error error = MakeErrorCode(ErrorCode::kDataLoss, "{}: note at offset {:#x} truncated", "core", 0x40);
  EXPECT_EQ(error.message, "core: note at offset 0x40 truncated");
  EXPECT_EQ(error.code, ErrorCode::kDataLoss);
  EXPECT_EQ(error.sys_errno, 0);
}

TEST(ErrorTest, ErrnoErrorAppendsStrerrorAndClassifies) {
  Error missing = ErrnoError(ENOENT, "{}", "/nope");
  EXPECT_EQ(missing.message, std::string("/nope: ") + std::strerror(ENOENT));
  EXPECT_EQ(missing.code, ErrorCode::kNotFound);
  EXPECT_EQ(missing.sys_errno, ENOENT);
  EXPECT_EQ(ErrnoError(ENOTDIR, "x").code, ErrorCode::kNotFound);
  EXPECT_EQ(ErrnoError(EACCES, "x").code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError(EPERM, "x").code, ErrorCode::kPermissionDenied);
  Error io = ErrnoError(EIO, "{}: read failed after {} bytes", "/dev/x", 3);
  EXPECT_EQ(io.message, std::string("/dev/x: read failed after 3 bytes: ") + std::strerror(EIO));
  EXPECT_EQ(io.code, ErrorCode::kIo);
  EXPECT_EQ(io.sys_errno, EIO);
  EXPECT_EQ(ErrnoError(EISDIR, "x").code, ErrorCode::kIo);
}

Result<int> Parse(bool ok) {
  if (!ok) return MakeErrorCode(ErrorCode::kInvalidArgument, "not a number");
  return 7;
}

Result<void> Check(bool ok) {
  if (!ok) return ErrnoError(EACCES, "check");
  return {};
}

// GT_RETURN_IF_ERROR on a Result<void> and on a Result<T>, in functions returning either.
Result<void> Both(bool parse_ok, bool check_ok, int* steps) {
  GT_RETURN_IF_ERROR(Parse(parse_ok));
  ++*steps;
  GT_RETURN_IF_ERROR(Check(check_ok));
  ++*steps;
  return {};
}

Result<std::string> Describe(bool check_ok) {
  GT_RETURN_IF_ERROR(Check(check_ok));
  GT_ASSIGN_OR_RETURN(int n, Parse(true));
  return std::to_string(n);
}

TEST(ResultTest, ReturnIfErrorPropagatesTheWholeError) {
  int steps = 0;
  EXPECT_TRUE(Both(true, true, &steps).ok());
  EXPECT_EQ(steps, 2);

  steps = 0;
  Result<void> parse_failed = Both(false, true, &steps);
  ASSERT_FALSE(parse_failed.ok());
  EXPECT_EQ(steps, 0);
  EXPECT_EQ(parse_failed.error().message, "not a number");
  EXPECT_EQ(parse_failed.error().code, ErrorCode::kInvalidArgument);

  steps = 0;
  Result<void> check_failed = Both(true, false, &steps);
  ASSERT_FALSE(check_failed.ok());
  EXPECT_EQ(steps, 1);
  EXPECT_EQ(check_failed.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(check_failed.error().sys_errno, EACCES);

  Result<std::string> described = Describe(true);
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(*described, "7");
  Result<std::string> refused = Describe(false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, std::string("check: ") + std::strerror(EACCES));
}

TEST(ResultTest, ValueOrAndOk) {
  Result<int> good = 3;
  Result<int> bad = MakeError("bad");
  EXPECT_TRUE(good.ok());
  EXPECT_FALSE(bad);
  EXPECT_EQ(good.value_or(9), 3);
  EXPECT_EQ(bad.value_or(9), 9);
}

}  // namespace
}  // namespace gputriage::core
