#include "ptk/io/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

namespace ptk::io {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw FileError(path + ": " + what + ": " + std::strerror(err));
}

std::string temporary_prefix(const std::string& path) { return "." + file_name_of(path) + ".tmp-"; }  // + "<pid>-<n>"

std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  return dir + temporary_prefix(path) + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// Writes all of bytes to fd, retrying short writes and EINTR; returns 0 or the errno.
int write_all(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

// "a directory", "a character device", ... for a file that is not a regular one.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a fifo (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a file of an unknown kind";
}

[[noreturn]] void not_regular(const std::string& path, mode_t mode) {
  throw FileError(path + ": is " + kind_of(mode) + ", not a regular file");
}

// Reads fd to its end, at most max_bytes + 1 bytes (so that a file beyond max_bytes is seen to be).
std::string read_to_end(int fd, const std::string& path, std::uint64_t size_hint, std::uint64_t max_bytes) {
  std::string bytes;
  try {
    bytes.reserve(static_cast<std::size_t>(std::min(size_hint, max_bytes)));
    char buf[1 << 16];
    while (bytes.size() <= max_bytes) {
      const std::uint64_t room = max_bytes - bytes.size();  // one byte more is read to see a file beyond it
      const std::size_t want = room >= sizeof buf ? sizeof buf : static_cast<std::size_t>(room) + 1;
      const ssize_t n = ::read(fd, buf, want);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(path, "cannot read file", errno);
      if (n == 0) break;
      bytes.append(buf, static_cast<std::size_t>(n));
    }
  } catch (const std::bad_alloc&) {
    throw FileError(path + ": out of memory reading it (" + std::to_string(bytes.size()) + " bytes read)");
  } catch (const std::length_error&) {
    throw FileError(path + ": too large to read into memory");
  }
  return bytes;
}

int sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  // Some file systems (and /proc-like ones) refuse fsync on a directory; the rename has still happened.
  return err == EINVAL || err == EROFS ? 0 : err;
}

}  // namespace

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string file_name_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<std::string> list_directory(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

bool remove_file(const std::string& path) { return ::unlink(path.c_str()) == 0 || errno == ENOENT; }

void require_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) not_regular(path, st.st_mode);
}

std::string read_regular_file(const std::string& path, std::uint64_t max_bytes) {
  require_regular_file(path);
  // Non-blocking: were the path swapped for a fifo after the check, the open would not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open file", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t mode = st.st_mode;
    ::close(fd);
    not_regular(path, mode);
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    throw FileError(path + ": " + std::to_string(size) + " bytes, more than the limit of " + std::to_string(max_bytes) + " bytes");
  }
  std::string bytes;
  try {
    bytes = read_to_end(fd, path, size, max_bytes);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (bytes.size() > max_bytes)
    throw FileError(path + ": grew beyond the limit of " + std::to_string(max_bytes) + " bytes while it was read");
  return bytes;
}

void check_output_file(const std::string& path) {
  if (path.empty()) throw FileError("(empty path): not a file name");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // a new file
  if (S_ISLNK(st.st_mode))
    throw FileError(path + ": is a symbolic link; ptk replaces an output by renaming a new file over its name, which "
                           "would replace the link, not write its target: name the target instead");
  if (S_ISDIR(st.st_mode)) throw FileError(path + ": is a directory, not a file name");
  if (!S_ISREG(st.st_mode))
    throw FileError(path + ": is " + kind_of(st.st_mode) + ", not a regular file (ptk would replace it with one)");
}

AtomicFileWriter::AtomicFileWriter(const std::string& path) : path_(path) {
  check_output_file(path);
  remove_stale_temporaries(path);
  temp_ = temporary_name(path);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path, "cannot create a file in " + directory_of(path), errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFileWriter::write(std::string_view bytes) {
  require(fd_ >= 0 && !committed_, "AtomicFileWriter: write after commit");
  if (const int err = write_all(fd_, bytes); err != 0) {
    ::close(fd_);
    fd_ = -1;
    fail(path_, "cannot write " + std::to_string(written_ + bytes.size()) + " bytes", err);
  }
  written_ += bytes.size();
}

void AtomicFileWriter::commit() {
  require(fd_ >= 0 && !committed_, "AtomicFileWriter: commit twice");
  int err = ::fsync(fd_) != 0 ? errno : 0;
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err == 0 && ::rename(temp_.c_str(), path_.c_str()) != 0) err = errno;
  if (err != 0) fail(path_, "cannot write " + std::to_string(written_) + " bytes", err);
  committed_ = true;
  if ((err = sync_directory(directory_of(path_))) != 0) fail(path_, "written, but cannot sync its directory", err);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  AtomicFileWriter out(path);
  out.write(bytes);
  out.commit();
}

void check_can_write(const std::string& path) {
  check_output_file(path);
  struct stat st {};
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &st) != 0) fail(path, "its directory " + dir + " is not there", errno);
  if (!S_ISDIR(st.st_mode)) throw FileError(path + ": " + dir + " is not a directory");
  const std::string probe = temporary_name(path);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot create a file in " + dir, errno);
  ::close(fd);
  ::unlink(probe.c_str());
}

OutputLock::OutputLock(const std::string& path)
    : lock_path_(directory_of(path) + "/." + file_name_of(path) + ".lock") {
  // The holder removes the lock file before it unlocks: a process that opened the old file and locked it after
  // that finds its name gone (or another file under it) and tries again with the new one.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) fail(path, "cannot create its lock file " + lock_path_, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char pid[24] = {};
      const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
      std::string holder = n > 0 ? std::string(pid, static_cast<std::size_t>(n)) : "";
      holder = holder.substr(0, holder.find_first_not_of("0123456789"));
      ::close(fd);
      if (err != EWOULDBLOCK) fail(path, "cannot lock " + lock_path_, err);
      throw FileError(path + ": in use by another ptk process" + (holder.empty() ? "" : " (pid " + holder + ")") +
                      " that writes it (its lock is " + lock_path_ + ")");
    }
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
        // The lock holds without the pid; a refused process then names no pid.
      }
      fd_ = fd;
      return;
    }
    ::close(fd);
  }
  throw FileError(path + ": cannot take its lock " + lock_path_ + " (it keeps being replaced)");
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());
  ::close(fd_);
}

int remove_stale_temporaries(const std::string& dir, const std::function<bool(const std::string&)>& is_target) {
  int removed = 0;
  for (const auto& name : list_directory(dir)) {
    const auto mark = name.rfind(".tmp-");
    if (name.empty() || name[0] != '.' || mark == std::string::npos || !is_target(name.substr(1, mark - 1))) continue;
    const std::string rest = name.substr(mark + 5);  // "<pid>-<n>"
    const auto dash = rest.find('-');
    if (dash == std::string::npos || dash == 0 || rest.find_first_not_of("0123456789-") != std::string::npos) continue;
    const long pid = std::strtol(rest.substr(0, dash).c_str(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // its writer may still be running
    if (::unlink((dir + "/" + name).c_str()) == 0) ++removed;
  }
  return removed;
}

int remove_stale_temporaries(const std::string& path) {
  const std::string target = file_name_of(path);
  return remove_stale_temporaries(directory_of(path), [&](const std::string& name) { return name == target; });
}

}  // namespace ptk::io
