// ptk bench [--quick] [--out DIR] [--filter REGEX] [--repetitions N] [--device host|default]: runs the sweep binary built
// beside ptk once per implementation, each in its own process (progress on the terminal, JSON to
// DIR/raw/<impl>.json), then the report script (DIR/bench.json merged, DIR/report.md, DIR/*.png).
//
// One process per implementation is what makes the ratios fair: after a Kokkos OpenMP region
// its threads spin for a while, and a library with its own thread pool (OpenBLAS) run in the
// same process loses up to half its speed to them (measured: 93 vs 168 GFLOP/s at n = 1024).
#include <CLI/CLI.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "ptk/io/atomic_file.hpp"

namespace ptk::tools {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// Runs argv; with `captured`, its stdout goes there instead of the terminal.
int run_process(const std::vector<std::string>& argv, std::string* captured = nullptr) {
  std::vector<char*> c_argv;
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  int fds[2] = {-1, -1};
  if (captured && pipe(fds) != 0) return 1;
  const pid_t pid = fork();
  if (pid == 0) {
    if (captured) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
    }
    execvp(c_argv[0], c_argv.data());
    std::perror(("ptk bench: cannot run " + argv[0]).c_str());
    _exit(127);
  }
  if (captured) {
    close(fds[1]);
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) captured->append(buf, static_cast<std::size_t>(n));
    close(fds[0]);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// --out DIR, before anything runs: the deepest part of it that exists must be a directory (DIR itself, or the
// parent its missing part is created in, writable), else one line. Nothing is created here.
void check_output_directory(const std::string& dir) {
  if (dir.empty()) throw UsageError{"bench: --out needs a directory name, got ''"};
  std::string at = dir;
  struct stat st {};
  while (::stat(at.c_str(), &st) != 0) {
    if (errno != ENOENT) throw UsageError{"bench: --out " + dir + ": " + std::strerror(errno)};
    const std::string parent = io::directory_of(at);
    if (parent == at) break;
    at = parent;
  }
  if (!S_ISDIR(st.st_mode))
    throw UsageError{"bench: --out " + dir + ": " + at + " is not a directory"};
  if (::access(at.c_str(), W_OK) != 0) throw UsageError{"bench: --out " + dir + ": " + at + ": " + std::strerror(errno)};
}

// Creates DIR/raw (and the parents); one line when it cannot.
void make_directories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UsageError{"bench: cannot create " + dir + ": " + ec.message()};
}

std::string regex_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (std::string(".+*?()[]{}|^$\\").find(ch) != std::string::npos) out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace

int bench_command(const Args& args, const std::string& self_dir) {
  bool quick = false;
  std::string out = self_dir + "/bench", filter, repetitions = "1", device;
  CLI::App app{"Benchmark sweeps, one process per implementation -> DIR/report.md, DIR/*.png, DIR/bench.json.",
               "ptk bench"};
  app.add_flag("--quick", quick, "a smaller, shorter sweep");
  app.add_option("--out", out, "the report's directory (created)")->capture_default_str()->type_name("DIR");
  app.add_option("--filter", filter, "only the benchmarks whose family/impl/shape name matches")->type_name("REGEX");
  app.add_option("--repetitions", repetitions, "runs of each benchmark")
      ->capture_default_str()->check(whole_number(1, 1000000));
  // Passed to the sweep processes as PTK_DEVICE.
  auto* device_option = app.add_option("--device", device, "host or default (the GPU in a GPU build)")
                            ->check(CLI::IsMember({"host", "default"}));
  if (parse_command_line(app, args, "bench")) return 0;
  if (device_option->count() > 0) setenv("PTK_DEVICE", device.c_str(), 1);
  check_output_directory(out);
  const std::string sweeps = self_dir + "/ptk_bench";
  if (!exists(sweeps)) throw UsageError{"bench: " + sweeps + " was not built (configure with PTK_BUILD_BENCHMARKS=ON)"};
  std::string script = PTK_SOURCE_DIR "/scripts/bench_report.py";
  if (!exists(script)) script = PTK_INSTALL_DATADIR "/bench_report.py";
  if (!exists(script)) throw UsageError{"bench: the report script bench_report.py is neither in the source tree nor installed"};
  make_directories(out + "/raw");

  std::vector<std::string> common{sweeps};
  if (quick) common.push_back("--quick");

  // Which benchmarks the filter selects, grouped by implementation (names are family/impl/shape).
  std::string listing;
  auto list_argv = common;
  list_argv.push_back("--benchmark_list_tests=true");
  if (!filter.empty()) list_argv.push_back("--benchmark_filter=" + filter);
  if (run_process(list_argv, &listing) != 0) {
    std::cerr << "ptk bench: listing the sweep failed\n";
    return 1;
  }
  std::vector<std::string> impls;
  std::map<std::string, std::vector<std::string>> names_by_impl;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find('/'), second = line.find('/', first + 1);
    if (first == std::string::npos || second == std::string::npos || line.find(' ') != std::string::npos) continue;
    const auto impl = line.substr(first + 1, second - first - 1);
    if (!names_by_impl.count(impl)) impls.push_back(impl);
    names_by_impl[impl].push_back(line);
  }
  if (impls.empty()) throw UsageError{"bench: no benchmark matches the filter '" + filter + "'"};

  std::cout << "ptk bench: " << (quick ? "quick" : "full") << " sweep, " << impls.size()
            << " implementations, each in its own process (" << sweeps << ")\n";
  std::vector<std::string> report_argv;
  for (std::size_t n = 0; n < impls.size(); ++n) {
    const auto& impl = impls[n];
    std::string names;
    for (const auto& name : names_by_impl[impl]) names += (names.empty() ? "" : "|") + regex_escape(name);
    std::cout << "\nptk bench: [" << n + 1 << '/' << impls.size() << "] " << impl << ": "
              << names_by_impl[impl].size() << " benchmarks\n"
              << std::flush;
    const auto json = out + "/raw/" + impl + ".json";
    auto run_argv = common;
    run_argv.insert(run_argv.end(), {"--benchmark_filter=^(" + names + ")$", "--benchmark_out=" + json,
                                     "--benchmark_out_format=json", "--benchmark_repetitions=" + repetitions});
    if (repetitions != "1") run_argv.push_back("--benchmark_report_aggregates_only=true");
    if (const int status = run_process(run_argv); status != 0) {
      std::cerr << "ptk bench: the " << impl << " sweep failed (exit " << status << ")\n";
      return 1;
    }
    report_argv.push_back(json);
  }
  // Debian's python3 carries matplotlib; a python3 earlier on PATH may not.
  const std::string python = exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  report_argv.insert(report_argv.begin(), {python, script});
  report_argv.insert(report_argv.end(), {"--merged", out + "/bench.json", "--out", out});
  if (const int status = run_process(report_argv); status != 0) {
    std::cerr << "ptk bench: the report script failed (exit " << status << ")\n";
    return 1;
  }
  std::cout << "ptk bench: report in " << out << "/report.md\n";
  return 0;
}

}  // namespace ptk::tools
