// Status and StatusOr: how every fallible weft call reports an error. No
// exception crosses the public API. A message names the node, field or value
// at fault.
#ifndef WEFT_STATUS_H_
#define WEFT_STATUS_H_

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "weft/check.h"

namespace weft {

// Codes follow absl::StatusCode / TensorFlow's error codes.
enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK.
  Status(StatusCode code, std::string message)
      : code_(code),
        message_(code == StatusCode::kOk ? "" : std::move(message)) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "InvalidArgument: node 'y': ..." or "OK".
  std::string ToString() const;

  // A copy with `context + ": "` put before the message; OK stays OK.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

Status CancelledError(std::string message);
Status UnknownError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);

// Either a value or a non-OK Status.
template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) {
      status_ = InternalError("StatusOr constructed from an OK Status");
    }
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok(). Aborts with the status otherwise.
  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T& value() & {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  void CheckOk() const {
    WEFT_CHECK(status_.ok(),
               "StatusOr::value() on error: " + status_.ToString());
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace weft

#define WEFT_STATUS_CONCAT_INNER_(a, b) a##b
#define WEFT_STATUS_CONCAT_(a, b) WEFT_STATUS_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function if it is not OK.
#define WEFT_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::weft::Status weft_status_ = (expr);        \
    if (!weft_status_.ok()) return weft_status_; \
  } while (0)

// `lhs = value of expr`, or returns its Status from the enclosing function.
#define WEFT_ASSIGN_OR_RETURN(lhs, expr)                                     \
  WEFT_ASSIGN_OR_RETURN_IMPL_(WEFT_STATUS_CONCAT_(weft_statusor_, __LINE__), \
                              lhs, expr)
// `statusor` is a name and `lhs` may be a declaration ("int n"): neither
// can be parenthesised, so clang-tidy's macro-parentheses check is off here.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define WEFT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                \
  if (!statusor.ok()) return statusor.status();          \
  lhs = std::move(statusor).value()
// NOLINTEND(bugprone-macro-parentheses)

#endif  // WEFT_STATUS_H_
