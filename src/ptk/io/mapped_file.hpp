#pragma once
// A regular file mapped read-only into memory: a model's weights are read where they lie (the page cache), not copied
// into a second buffer (GGUF, safetensors shards). The mapping lives as long as the object.
#include <string>
#include <string_view>

namespace ptk::io {

class MappedFile {
 public:
  // Refuses (FileError, one line) what is not a regular file (io::require_regular_file's rule, checked again on the
  // file as opened) and what cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  // Drops `part` (a range of bytes()) from this process's resident pages once it has been read (a weight copied
  // into its tensor): the kernel keeps it in the page cache, so a later read costs no disk, but the process's
  // resident size stays what it holds. False when `part` is not in this file.
  bool release(std::string_view part) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ptk::io
