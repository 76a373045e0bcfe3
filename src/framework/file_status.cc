#include "weft/file_status.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace weft {

Status ErrnoToStatus(int error_number, std::string_view message) {
  std::string text(message);
  text += ": ";
  text += std::strerror(error_number);
  switch (error_number) {
    case ENOENT:
    case ENOTDIR:
      return NotFoundError(std::move(text));
    case EACCES:
    case EPERM:
      return FailedPreconditionError(std::move(text));
    case EISDIR:
      return InvalidArgumentError(std::move(text));
    case ENOSPC:
    case EDQUOT:
      return Status(StatusCode::kResourceExhausted, std::move(text));
    default:
      return UnknownError(std::move(text));
  }
}

Status CheckReadableFile(const std::string& path, std::string_view message) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return ErrnoToStatus(errno, message);
  if (S_ISDIR(info.st_mode)) return ErrnoToStatus(EISDIR, message);
  if (access(path.c_str(), R_OK) != 0) return ErrnoToStatus(errno, message);
  return Status::OK();
}

StatusOr<std::string> ReadFileBytes(const std::string& path,
                                    std::string_view message) {
  WEFT_RETURN_IF_ERROR(CheckReadableFile(path, message));
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return ErrnoToStatus(errno, message);
  // A regular file is read straight into a string of its size: a model of
  // 45 MB read by appending took several copies of it, each into fresh
  // memory (a third of loading ResNet-18, 2026-12-03). What is past that
  // size (a file still growing), or a file whose size stat cannot tell (a
  // pipe, /proc), is read in pieces.
  std::string bytes;
  struct stat info;
  size_t got = 0;
  if (fstat(fileno(file), &info) == 0 && S_ISREG(info.st_mode) &&
      info.st_size > 0) {
    bytes.resize(static_cast<size_t>(info.st_size));
    got = std::fread(bytes.data(), 1, bytes.size(), file);
    bytes.resize(got);
  }
  char buffer[1 << 16];
  while ((got = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    bytes.append(buffer, got);
  }
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return ErrnoToStatus(EIO, message);
  return bytes;
}

}  // namespace weft
