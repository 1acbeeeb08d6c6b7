// Errors as values: Result<T> holds either a T or an Error with a message that names the
// object and the numbers (path, offset, errno). Libraries return these; only the CLI exits.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace gputriage::core {

/// What kind of failure an Error is, for callers that react to it (a missing file is expected,
/// a permission problem is worth a hint); the message stays the part meant for a human.
enum class ErrorCode {
  kUnknown,           ///< not classified (Error{"..."} and MakeError)
  kInvalidArgument,   ///< the caller asked for something unacceptable (a directory, a file too large)
  kNotFound,          ///< ENOENT, ENOTDIR, or a named thing that is not there
  kPermissionDenied,  ///< EACCES, EPERM
  kDataLoss,          ///< the input is truncated or corrupt
  kIo,                ///< any other system-call failure
  kUnsupported,       ///< a format, version or platform this build does not handle
  kInternal,          ///< a bug of ours
};

/// The ErrorCode of a failed system call's errno: ENOENT/ENOTDIR -> kNotFound, EACCES/EPERM ->
/// kPermissionDenied, anything else kIo.
inline ErrorCode ErrorCodeFromErrno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return ErrorCode::kNotFound;
    case EACCES:
    case EPERM:
      return ErrorCode::kPermissionDenied;
    default:
      return ErrorCode::kIo;
  }
}

/// A failure description meant for a human: it names the input (file, pid, library) and why.
/// `code` classifies it; `sys_errno` is the errno of the failed system call, 0 when none.
/// Error{"message"} stays valid (kUnknown, no errno).
struct Error {
  std::string message;
  ErrorCode code = ErrorCode::kUnknown;
  int sys_errno = 0;
};

/// Builds an Error (kUnknown) from a fmt format string.
template <typename... Args>
Error MakeError(fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...)};
}

/// Builds an Error of kind `code` from a fmt format string.
template <typename... Args>
Error MakeErrorCode(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...), code};
}

/// The Error of a failed system call: the formatted message, ": ", strerror(err); the code from
/// ErrorCodeFromErrno(err) and sys_errno = err. Pass errno saved right after the call.
template <typename... Args>
Error ErrnoError(int err, fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...) + ": " + std::strerror(err), ErrorCodeFromErrno(err),
               err};
}

/// Either a value or an Error. Accessing value() on an error is a programming bug (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(state_); }
  /// The value, or `fallback` when this holds an error.
  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> state_;
};

/// Result of an operation with no value.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace gputriage::core

/// Evaluates `expr` (a Result); on error returns the error from the enclosing function,
/// otherwise moves the value into a new variable `var`.
#define GT_TRY_CONCAT_INNER(a, b) a##b
#define GT_TRY_CONCAT(a, b) GT_TRY_CONCAT_INNER(a, b)
#define GT_ASSIGN_OR_RETURN(var, expr)                                                               \
  auto GT_TRY_CONCAT(gt_result_, __LINE__) = (expr);                                                 \
  if (!GT_TRY_CONCAT(gt_result_, __LINE__).ok()) return GT_TRY_CONCAT(gt_result_, __LINE__).error(); \
  var = std::move(GT_TRY_CONCAT(gt_result_, __LINE__)).value()

/// Evaluates `expr` (a Result<void> or a Result<T> whose value is not needed); on error returns
/// the error from the enclosing function, otherwise goes on.
#define GT_RETURN_IF_ERROR(expr)                     \
  do {                                               \
    auto&& gt_status_ = (expr);                      \
    if (!gt_status_.ok()) return gt_status_.error(); \
  } while (false)
