#include "ptk/io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "ptk/io/atomic_file.hpp"

namespace ptk::io {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  require_regular_file(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw FileError(path + ": cannot open file (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FileError(path + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) {
      const int err = errno;
      data_ = nullptr;
      ::close(fd);
      throw FileError(path + ": cannot map " + std::to_string(size_) + " bytes (" + std::strerror(err) + ")");
    }
  }
  ::close(fd);  // the mapping keeps the file
}

bool MappedFile::release(std::string_view part) const {
  const auto* base = static_cast<const char*>(data_);
  if (data_ == nullptr || part.data() < base || part.data() + part.size() > base + size_) return false;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(part.data()) / page * page;
  const auto end = reinterpret_cast<std::uintptr_t>(part.data() + part.size());
  // (Pages shared with a neighbour are read again from the page cache if the neighbour needs them.)
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  return true;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace ptk::io
