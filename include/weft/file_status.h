// Errors about files that carry the system's reason, for every reader and
// writer of files (graphs, models, .npy, configurations, traces), so that a
// user sees "No such file or directory", "Permission denied" or "Is a
// directory" rather than a bare "cannot open".
#ifndef WEFT_FILE_STATUS_H_
#define WEFT_FILE_STATUS_H_

#include <string>
#include <string_view>

#include "weft/status.h"

namespace weft {

// The Status for a system call that failed with `error_number` (errno):
// "<message>: <the system's words>", with kNotFound for ENOENT and
// ENOTDIR, kFailedPrecondition for EACCES and EPERM, kInvalidArgument for
// EISDIR, kResourceExhausted for ENOSPC and EDQUOT, kUnknown otherwise.
Status ErrnoToStatus(int error_number, std::string_view message);

// OK when `path` is a file this process can open for reading; else
// ErrnoToStatus(reason, message): "<message>: No such file or directory".
// A directory is EISDIR, which opening it alone would not report.
Status CheckReadableFile(const std::string& path, std::string_view message);

// The whole file at `path`, as bytes; errors as CheckReadableFile's, and a
// failed read as ErrnoToStatus(reason, message).
StatusOr<std::string> ReadFileBytes(const std::string& path,
                                    std::string_view message);

}  // namespace weft

#endif  // WEFT_FILE_STATUS_H_
