#include "ptk/io/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

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
int write_all(int fd, const std::string& bytes) {
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

void write_file_atomically(const std::string& path, const std::string& bytes) {
  remove_stale_temporaries(path);
  const std::string temp = temporary_name(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot create a file in " + directory_of(path), errno);
  int err = write_all(fd, bytes);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(temp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(temp.c_str());
    fail(path, "cannot write " + std::to_string(bytes.size()) + " bytes", err);
  }
  if ((err = sync_directory(directory_of(path))) != 0) fail(path, "written, but cannot sync its directory", err);
}

void check_can_write(const std::string& path) {
  if (path.empty()) throw FileError("(empty path): not a file name");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw FileError(path + ": is a directory, not a file name");
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &st) != 0) fail(path, "its directory " + dir + " is not there", errno);
  if (!S_ISDIR(st.st_mode)) throw FileError(path + ": " + dir + " is not a directory");
  const std::string probe = temporary_name(path);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot create a file in " + dir, errno);
  ::close(fd);
  ::unlink(probe.c_str());
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
