#include "weft/status.h"

#include <cstdio>
#include <cstdlib>

#include "weft/check.h"

namespace weft {

void CheckFailed(const char* file, int line, const char* condition,
                 std::string_view message) {
  std::fprintf(stderr, "weft: check failed: %s (%.*s) at %s:%d\n", condition,
               static_cast<int>(message.size()), message.data(), file, line);
  std::fflush(stderr);
  std::abort();
}

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kUnknown:
      return "Unknown";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kOutOfRange:
      return "OutOfRange";
    case StatusCode::kUnimplemented:
      return "Unimplemented";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

std::ostream& operator<<(std::ostream& os, const Status& status) {
  return os << status.ToString();
}

#define WEFT_DEFINE_ERROR_FACTORY_(Name, Code)           \
  Status Name(std::string message) {                     \
    return Status(StatusCode::Code, std::move(message)); \
  }
WEFT_DEFINE_ERROR_FACTORY_(CancelledError, kCancelled)
WEFT_DEFINE_ERROR_FACTORY_(UnknownError, kUnknown)
WEFT_DEFINE_ERROR_FACTORY_(InvalidArgumentError, kInvalidArgument)
WEFT_DEFINE_ERROR_FACTORY_(DeadlineExceededError, kDeadlineExceeded)
WEFT_DEFINE_ERROR_FACTORY_(NotFoundError, kNotFound)
WEFT_DEFINE_ERROR_FACTORY_(AlreadyExistsError, kAlreadyExists)
WEFT_DEFINE_ERROR_FACTORY_(ResourceExhaustedError, kResourceExhausted)
WEFT_DEFINE_ERROR_FACTORY_(FailedPreconditionError, kFailedPrecondition)
WEFT_DEFINE_ERROR_FACTORY_(OutOfRangeError, kOutOfRange)
WEFT_DEFINE_ERROR_FACTORY_(UnimplementedError, kUnimplemented)
WEFT_DEFINE_ERROR_FACTORY_(InternalError, kInternal)
#undef WEFT_DEFINE_ERROR_FACTORY_

}  // namespace weft
