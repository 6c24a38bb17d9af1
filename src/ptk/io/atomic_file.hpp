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
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ptk/core/error.hpp"

namespace ptk::io {

// what() is one line: "<path>: <problem>".
class FileError : public IoError {
 public:
  using IoError::IoError;
};

// Refuses (check_output_file) a `path` that exists and is not a regular file before anything is written.
void write_file_atomically(const std::string& path, const std::string& bytes);

// The same for a file written in parts (a model of many GB, one tensor at a time): the temporary file is created by
// the constructor, filled by write(), and renamed over `path` by commit(); destroyed before commit (an error, an
// exception on the way), it removes the temporary and `path` keeps its old contents.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void write(std::string_view bytes);
  void commit();
  std::uint64_t written() const { return written_; }

 private:
  std::string path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
  std::uint64_t written_ = 0;
};

// --- What ptk reads and writes: one rule for every command (docs/design.md, "Files ptk reads and writes") ---
//
// Inputs are regular files (or symbolic links to one). A directory, a device (/dev/zero, /dev/urandom), a fifo or
// a socket is refused before it is opened, so nothing is read without bound and nothing waits for a writer.
// Outputs are regular files or new names. ptk writes an output as a new file renamed over its name, so an output
// that exists as anything else (a device such as /dev/null, a directory, a fifo) is refused, and so is a symbolic
// link, which the rename would replace rather than write through (give the link's target instead).

// Throws FileError "<path>: is a <kind>, not a regular file" when `path` exists (following symbolic links) and
// is not a regular file. A missing path passes: its reader says that it cannot open it. Opens nothing.
void require_regular_file(const std::string& path);

// The whole contents of the regular file at `path`: refused (FileError) when it is not one (require_regular_file,
// and again on the file as opened, non-blocking), cannot be opened or read, or holds more than max_bytes (checked
// before reading; a file that grows while read is cut off at max_bytes + 1 bytes and refused too).
std::string read_regular_file(const std::string& path,
                              std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

// Throws FileError when `path` is empty, is a symbolic link, or exists and is not a regular file. Opens nothing.
void check_output_file(const std::string& path);

// Throws FileError unless `path` may be written as an output: check_output_file, and a file can be created
// beside it (its directory exists and is writable). Checked before hours of training rather than after.
void check_can_write(const std::string& path);

// An output in use. While it lives, this process holds an exclusive lock (flock) on the file
// "<dir>/.<name>.lock" beside `path`, which holds its pid; it removes the file when it ends. A second ptk that
// asks for the same output while the first holds it gets FileError "<path>: in use by another ptk process (pid
// N)". The kernel releases the lock of a process that is killed; its lock file is then reused.
class OutputLock {
 public:
  explicit OutputLock(const std::string& path);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::string lock_path_;
  int fd_ = -1;
};

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
