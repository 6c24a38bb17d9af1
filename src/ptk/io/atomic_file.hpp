#pragma once
// Files that are either wholly old or wholly new, whatever kills the process (checkpoints).
//
// write_file_atomically(path, bytes):
//   1. writes the bytes to a temporary file beside `path`, named ".<name>.tmp-<pid>-<n>" (unique per
//      process and call, created with O_EXCL, so two writers never share one),
//   2. fsyncs it, renames it over `path` (atomic on POSIX within one file system), then fsyncs the
//      directory so that the rename itself survives a power loss.
// Any failure (a full disk, EFBIG under a file-size limit, a read-only directory) removes the temporary
// file and throws io::FileError naming `path` and the system's reason; `path` keeps its old contents.
// A process killed mid-write (SIGKILL) cannot clean up: its temporary file is left, and the next write to
// the same path removes the temporaries of processes that no longer exist.
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ptk::io {

// what() is one line: "<path>: <problem>".
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void write_file_atomically(const std::string& path, const std::string& bytes);

// Throws FileError unless a file can be created at `path` (its directory exists and is writable, and
// `path` is not a directory): checked before hours of training rather than after.
void check_can_write(const std::string& path);

// Removes ".<name>.tmp-<pid>-<n>" files beside `path` whose process <pid> is gone; returns how many.
int remove_stale_temporaries(const std::string& path);
// The same in `dir` for every <name> that `is_target` accepts (a family of files, e.g. one per step).
int remove_stale_temporaries(const std::string& dir, const std::function<bool(const std::string&)>& is_target);

// Removes `path` if it exists; false (and no exception) when it could not be removed.
bool remove_file(const std::string& path);

// The names in a directory (not "." and ".."); empty when it cannot be read.
std::vector<std::string> list_directory(const std::string& dir);

// The directory part of path ("." when it has none) and the name part.
std::string directory_of(const std::string& path);
std::string file_name_of(const std::string& path);

}  // namespace ptk::io
