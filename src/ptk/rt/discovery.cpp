#include "ptk/rt/discovery.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "ptk/rt/module_files.hpp"

namespace ptk::rt {

using detail::find_file;
using detail::is_regular_file;
using detail::not_found;

const std::vector<std::string>& backend_order() {
  static const std::vector<std::string> order{"cuda", "hip", "cpu"};
  return order;
}

const char* skip_name(Skip skip) {
  switch (skip) {
    case Skip::none: return "usable";
    case Skip::not_built: return "not built";
    case Skip::library_missing: return "library missing";
    case Skip::driver_missing: return "driver missing";
    case Skip::no_device: return "no device";
    case Skip::init_failed: return "init failed";
    case Skip::too_little_memory: return "too little memory";
    case Skip::isa_missing: return "ISA missing";
  }
  return "?";
}

std::vector<std::string> module_dirs(const std::vector<std::string>& fallback) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PTK_BACKEND_PATH"); path && *path) {
    std::string rest = path;
    for (std::size_t at; !rest.empty(); rest = at == std::string::npos ? "" : rest.substr(at + 1)) {
      at = rest.find(':');
      if (const auto dir = rest.substr(0, at); !dir.empty()) dirs.push_back(dir);
    }
    return dirs;
  }
  for (const auto& dir : fallback) dirs.push_back(std::filesystem::path(dir).lexically_normal().string());
  return dirs;
}

namespace {

// What the probing child sends back: kLoaded once the module is loaded, then a tag byte and the probe
// (kProbe) or a Skip and a message (kError).
constexpr char kLoaded = 'L', kProbe = 'P', kError = 'E';

[[noreturn]] void child_fail(int fd, Skip skip, const std::string& message) {
  std::string record(1, kError);
  record += static_cast<char>(skip);
  record += message;
  (void)!write(fd, record.data(), record.size());
  _exit(0);
}

// The dynamic loader's words for a module that does not load, sorted into the reasons `ptk info` gives: the
// GPU driver's own library (libcuda) missing is a driver problem; anything else is the module or a library it
// needs (the CUDA or HIP runtime) missing or damaged.
Skip load_failure(const std::string& error) {
  return error.find("libcuda.so") != std::string::npos ? Skip::driver_missing : Skip::library_missing;
}

// In the child: load the module, check it, probe it, write the answer, leave without running any of the
// parent's exit handlers or flushing its buffers.
[[noreturn]] void probe_in_child(int fd, const std::string& module) {
  // Whatever a runtime prints while it starts must not land in `ptk info --json` or a command's output.
  if (const int null = open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) dup2(null, STDOUT_FILENO);
  void* handle = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    const std::string error = e ? e : "dlopen failed";
    child_fail(fd, load_failure(error), error);
  }
  (void)!write(fd, &kLoaded, 1);
  auto abi = reinterpret_cast<int (*)()>(dlsym(handle, "ptk_backend_abi"));
  auto probe = reinterpret_cast<int (*)(ptk_backend_info*)>(dlsym(handle, "ptk_backend_probe"));
  if (!abi || !probe || !dlsym(handle, "ptk_backend_main"))
    child_fail(fd, Skip::library_missing, "not a ptk backend module (no ptk_backend_abi, _probe or _main)");
  if (const int version = abi(); version != PTK_BACKEND_ABI_VERSION)
    child_fail(fd, Skip::library_missing, "backend ABI " + std::to_string(version) + ", this launcher speaks " +
                                              std::to_string(PTK_BACKEND_ABI_VERSION) + " (a module of another ptk version)");
  ptk_backend_info answer{};
  if (probe(&answer) != 0) child_fail(fd, Skip::init_failed, "the module's probe failed");
  std::string record(1, kProbe);
  record.append(reinterpret_cast<const char*>(&answer), sizeof answer);
  (void)!write(fd, record.data(), record.size());
  _exit(0);
}

double probe_timeout_s() {
  const char* t = std::getenv("PTK_BACKEND_PROBE_TIMEOUT");
  const double s = t && *t ? std::atof(t) : 60.0;  // a first CUDA context on a large GPU takes seconds
  return s > 0 ? s : 60.0;
}

// Reads the child's answer until it closes the pipe or the time is up (then it is killed).
std::string read_answer(int fd, pid_t child, bool& timed_out) {
  std::string data;
  const double limit_ms = probe_timeout_s() * 1000;
  double waited_ms = 0;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      waited_ms += 100;
      if (waited_ms >= limit_ms) {
        kill(child, SIGKILL);
        timed_out = true;
        return data;
      }
      continue;
    }
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return data;
    data.append(buf, static_cast<std::size_t>(n));
  }
}

// Runs the probe of `module` in a child process: a driver that crashes or hangs in its initialization costs
// the child, and no GPU context or library stays behind in the launcher.
void probe_module(Candidate& b) {
  std::fflush(nullptr);
  int fds[2];
  if (pipe(fds) != 0) {
    b.skip = Skip::init_failed;
    b.reason = std::string("pipe: ") + std::strerror(errno);
    return;
  }
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    probe_in_child(fds[1], b.module);
  }
  close(fds[1]);
  if (child < 0) {
    close(fds[0]);
    b.skip = Skip::init_failed;
    b.reason = std::string("fork: ") + std::strerror(errno);
    return;
  }
  bool timed_out = false;
  std::string data = read_answer(fds[0], child, timed_out);
  const bool loaded = !data.empty() && data[0] == kLoaded;
  if (loaded) data.erase(0, 1);
  close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    b.skip = Skip::init_failed;
    b.reason = "the probe did not answer within " + std::to_string(static_cast<int>(probe_timeout_s())) +
               " s (PTK_BACKEND_PROBE_TIMEOUT)";
  } else if (WIFSIGNALED(status)) {  // a loader that died on a damaged file, or a driver in its initialization
    b.skip = loaded ? Skip::init_failed : Skip::library_missing;
    b.reason = std::string(loaded ? "the probe" : "loading the module") + " was killed by signal " +
               std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  } else if (data.size() >= 2 && data[0] == kError) {
    const int skip = static_cast<unsigned char>(data[1]);
    b.skip = skip <= static_cast<int>(Skip::isa_missing) ? static_cast<Skip>(skip) : Skip::init_failed;
    b.reason = data.substr(2);
  } else if (data.size() == 1 + sizeof(ptk_backend_info) && data[0] == kProbe) {
    std::memcpy(&b.probe, data.data() + 1, sizeof b.probe);
    b.probe.name[sizeof b.probe.name - 1] = b.probe.kokkos[sizeof b.probe.kokkos - 1] = '\0';
    b.probe.detail[sizeof b.probe.detail - 1] = '\0';
    b.probed = true;
  } else {
    b.skip = Skip::init_failed;
    b.reason = "the probe ended without an answer (exit status " +
               std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
  }
}

// The loader maps a module's segments without checking them against the file's size: a truncated module
// dies of SIGBUS inside dlopen. Its ELF header and load segments are checked first, against this file's size.
std::string elf_problem(const std::string& path) {
#if defined(__x86_64__)
  constexpr int machine = EM_X86_64;
#elif defined(__aarch64__)
  constexpr int machine = EM_AARCH64;
#else
  constexpr int machine = -1;  // not checked
#endif
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open: ") + std::strerror(errno);
  struct stat st {};
  Elf64_Ehdr h{};
  const bool read_header = fstat(fd, &st) == 0 && pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::string problem;
  if (!read_header || std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 || h.e_ident[EI_CLASS] != ELFCLASS64) {
    problem = "not a 64-bit ELF file";
  } else if (h.e_type != ET_DYN || (machine >= 0 && h.e_machine != machine)) {
    problem = "not a shared object for this machine";
  } else if (h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phoff > size ||
             static_cast<std::uint64_t>(h.e_phnum) * sizeof(Elf64_Phdr) > size - h.e_phoff ||
             (h.e_shnum > 0 && (h.e_shoff > size || static_cast<std::uint64_t>(h.e_shnum) * h.e_shentsize > size - h.e_shoff))) {
    problem = "truncated (" + std::to_string(size) + " bytes; its headers point past the end)";
  } else {
    for (unsigned i = 0; i < h.e_phnum && problem.empty(); ++i) {
      Elf64_Phdr ph{};
      if (pread(fd, &ph, sizeof ph, static_cast<off_t>(h.e_phoff + i * sizeof ph)) != static_cast<ssize_t>(sizeof ph) ||
          (ph.p_type == PT_LOAD && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)))
        problem = "truncated (" + std::to_string(size) + " bytes; segment " + std::to_string(i) + " ends at " +
                  std::to_string(ph.p_offset + ph.p_filesz) + ")";
    }
  }
  close(fd);
  return problem;
}

}  // namespace

namespace detail {

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string find_file(const std::string& file, const std::vector<std::string>& dirs) {
  for (const auto& dir : dirs)
    if (is_regular_file(dir + "/" + file)) return dir + "/" + file;
  return "";
}

std::string not_found(const std::string& file, const std::vector<std::string>& dirs) {
  std::string reason = "no " + file + " in";
  for (const auto& dir : dirs) reason += " " + dir;
  return reason;
}

}  // namespace detail

Candidate examine(const std::string& name, const std::vector<std::string>& dirs) {
  Candidate b;
  b.name = name;
  if (name == "cpu") {
    const auto cpu = cpu_module(dirs);
    b.module = cpu.file;
    b.variant = cpu.variant;
    b.variant_choice = cpu.how;
    if (b.module.empty()) {
      b.skip = cpu.skip;
      b.reason = cpu.how;
      return b;
    }
  } else {
    b.module = find_file("libptk_backend_" + name + ".so", dirs);
    if (b.module.empty()) {
      b.reason = not_found("libptk_backend_" + name + ".so", dirs);
      return b;
    }
  }
  if (const auto problem = elf_problem(b.module); !problem.empty()) {
    b.skip = Skip::library_missing;
    b.reason = b.module + ": " + problem;
    return b;
  }
  probe_module(b);
  if (!b.probed) return b;
  if (std::string(b.probe.name) != name) {
    b.skip = Skip::library_missing;
    b.reason = b.module + " is the " + b.probe.name + " backend";
    return b;
  }
  const auto state = b.probe.state;
  b.skip = state == PTK_BACKEND_USABLE           ? Skip::none
           : state == PTK_BACKEND_NO_DEVICE      ? Skip::no_device
           : state == PTK_BACKEND_DRIVER_MISSING ? Skip::driver_missing
                                                 : Skip::init_failed;
  b.reason = b.probe.detail;
  if (b.skip == Skip::none && b.probe.device_count == 0) {
    b.skip = Skip::no_device;
    b.reason = "the module reports no device";
  }
  return b;
}

std::uint64_t memory_need(const std::string& cpu_module, const std::vector<std::string>& command_line) {
  if (cpu_module.empty() || command_line.empty() || !elf_problem(cpu_module).empty()) return 0;
  std::fflush(nullptr);
  int fds[2];
  if (pipe(fds) != 0) return 0;
  const pid_t child = fork();
  if (child == 0) {  // the command runs as far as its memory check here, its output silenced by the module
    close(fds[0]);
    std::uint64_t bytes = 0;
    void* handle = dlopen(cpu_module.c_str(), RTLD_NOW | RTLD_LOCAL);
    auto need = handle ? reinterpret_cast<decltype(&ptk_backend_need)>(dlsym(handle, "ptk_backend_need")) : nullptr;
    if (need) {
      std::vector<std::string> words{"ptk"};
      words.insert(words.end(), command_line.begin(), command_line.end());
      std::vector<char*> argv;
      for (auto& w : words) argv.push_back(w.data());
      argv.push_back(nullptr);
      need(static_cast<int>(words.size()), argv.data(), &bytes);
    }
    (void)!write(fds[1], &bytes, sizeof bytes);
    _exit(0);
  }
  close(fds[1]);
  if (child < 0) {
    close(fds[0]);
    return 0;
  }
  bool timed_out = false;
  const std::string data = read_answer(fds[0], child, timed_out);
  close(fds[0]);
  while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  std::uint64_t bytes = 0;
  if (!timed_out && data.size() == sizeof bytes) std::memcpy(&bytes, data.data(), sizeof bytes);
  return bytes;
}

Selection select(const std::string& wanted, const std::vector<std::string>& dirs, bool every,
                 const std::vector<std::string>& command_line) {
  Selection s;
  s.seen.reserve(backend_order().size());  // `chosen` points into it
  for (const auto& name : backend_order())
    if (every || wanted == "auto" || wanted == name) s.seen.push_back(examine(name, dirs));
  bool estimated = false;
  for (auto& c : s.seen) {
    if (c.skip != Skip::none || (wanted != "auto" && wanted != c.name)) continue;
    if (c.name != "cpu" && !command_line.empty()) {  // a GPU: does the run fit its memory?
      if (!estimated) {
        s.need_bytes = memory_need(cpu_module(dirs).file, command_line);
        estimated = true;
      }
      if (s.need_bytes > 0 && c.probe.devices[0].free_bytes < s.need_bytes) {
        c.skip = Skip::too_little_memory;
        c.reason = "device 0 has " + std::to_string(c.probe.devices[0].free_bytes >> 20) +
                   " MiB free, the run needs about " + std::to_string(s.need_bytes >> 20) + " MiB";
        continue;
      }
    }
    s.chosen = &c;
    break;
  }
  return s;
}

}  // namespace ptk::rt
