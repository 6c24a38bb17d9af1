// ptk bench [--quick] [--out DIR]: runs the sweep binary built beside ptk (progress on the
// terminal, JSON to DIR/bench.json), then the report script (DIR/report.md, DIR/*.png).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"

namespace ptk::tools {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

int run_process(const std::vector<std::string>& argv) {
  std::vector<char*> c_argv;
  for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execvp(c_argv[0], c_argv.data());
    std::perror(("ptk bench: cannot run " + argv[0]).c_str());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int bench_command(const Args& args, const std::string& self_dir) {
  bool quick = false;
  std::string out = self_dir + "/bench";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--quick") quick = true;
    else if (args[i] == "--out" && i + 1 < args.size()) out = args[++i];
    else throw UsageError{"bench: unexpected argument '" + args[i] + "' (expected --quick or --out DIR)"};
  }
  const std::string sweeps = self_dir + "/ptk_bench";
  if (!exists(sweeps)) throw UsageError{"bench: " + sweeps + " was not built (configure with PTK_BUILD_BENCHMARKS=ON)"};
  std::string script = PTK_SOURCE_DIR "/scripts/bench_report.py";
  if (!exists(script)) script = PTK_INSTALL_DATADIR "/bench_report.py";
  if (!exists(script)) throw UsageError{"bench: the report script bench_report.py is neither in the source tree nor installed"};
  if (run_process({"mkdir", "-p", out}) != 0) throw UsageError{"bench: cannot create " + out};

  std::vector<std::string> sweep_argv{sweeps, "--benchmark_out=" + out + "/bench.json", "--benchmark_out_format=json"};
  if (quick) sweep_argv.push_back("--quick");
  std::cout << "ptk bench: running " << (quick ? "the quick" : "the full") << " sweep (" << sweeps << ")\n" << std::flush;
  if (const int status = run_process(sweep_argv); status != 0) {
    std::cerr << "ptk bench: the sweep failed (exit " << status << ")\n";
    return 1;
  }
  // Debian's python3 carries matplotlib; a python3 earlier on PATH may not.
  const std::string python = exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  if (const int status = run_process({python, script, out + "/bench.json", "--out", out}); status != 0) {
    std::cerr << "ptk bench: the report script failed (exit " << status << ")\n";
    return 1;
  }
  std::cout << "ptk bench: report in " << out << "/report.md\n";
  return 0;
}

}  // namespace ptk::tools
