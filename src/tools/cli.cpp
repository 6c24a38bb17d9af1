// The ptk command line: `ptk info`, `ptk op`, `ptk bench`, ... (see `ptk --help`), run in this build's backend.
// A one-backend build's ptk (ptk.cpp) and a backend module (backend_module.cpp) both run it.
#include <Kokkos_Core.hpp>

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <unistd.h>

#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "exit_status.hpp"
#include "ptk/core/error.hpp"
#include "ptk/core/runtime.hpp"
#include "ptk/dist/comm.hpp"

namespace {

const char* const kUsage = R"(usage:
  ptk info [--verbose] [--model L,H,C,T,V[,B]] [--device host|default]
                                             Kokkos version, backends, devices, memory;
                                             --model: training memory of a GPT-2-style model
  ptk op NAME --in A.npy [--in B.npy ...] [--set key=value ...] --out Y.npy [--out Z.npy ...]
         [--device host|default]             run one op on .npy files (ptk op --help lists ops;
                                             --set dtype=bf16|f16: 16-bit .npy in and out)
  ptk bench [--quick] [--out DIR] [--filter REGEX] [--repetitions N] [--device host|default]
                                             benchmark sweeps, one process per implementation
                                             -> DIR/report.md, DIR/*.png, DIR/bench.json
  ptk train [--data FILE] [--steps N] [--batch B] [--block T] [--layers L] [--heads H] [--width C]
            [--arch gpt2|llama] [--kv-heads N] [--dtype f32|bf16|f16 (mixed precision)]
            [--lr LR] [--seed S] [--save CKPT] [--save-every N] [--load CKPT] [--weights-only]
            [--eval-every N] [--log FILE] [--eval-only [--dtype T]] [--sample N] [--device host|default]
            [--shard-optimizer] [--bucket-mb MB] [--overlap-comm]
                                             train a GPT-2 or (--arch llama, grouped-query with
                                             --kv-heads) Llama byte-level model (ptk train --help);
                                             --load CKPT continues a saved run bit for bit;
                                             mpirun -np N ptk train ...: data parallel over N ranks
  ptk generate --load CKPT [--prompt TEXT | --prompt-file F] [-n N] [--temperature T] [--top-k K]
               [--top-p P] [--seed S] [--dtype f32|bf16|f16|q8_0|q4_0] [--kv-dtype f32|bf16|f16]
               [--device host|default]
                                             stream text from a checkpoint (KV cache; ptk generate --help)
  ptk tokenize --tokenizer FILE|DIR (--text T | --file F) [--decode] [--no-bos] [--no-parse-special]
                                             ids of a text on one line, space-separated (--decode: the
                                             text of ids); tokenizer.model, tokenizer.json, vocab.json,
                                             a GGUF model's
  ptk convert SRC DST.gguf|DST.safetensors|DST_DIR [--dtype f32|f16|bf16|q8_0|q4_0] [--tokenizer T] [--add-bos]
                                             a checkpoint, Hugging Face directory or GGUF file as GGUF
                                             (llama.cpp), a ptk checkpoint or a Hugging Face directory
Every command takes --backend auto|cpu|cuda|hip (or PTK_BACKEND; default auto): an install runs the first
backend of cuda, hip, cpu that works here and says why it skipped the others (ptk info lists them).
Inputs must be regular files; outputs regular files or new names (not devices, directories or symbolic links).
Exit status: 0 on success; 2 on bad input, an unreadable or unwritable file, too little memory (one-line message
on stderr), also when standard output cannot be written (a full disk, /dev/full); 1 on an internal error.
)";

// The one line an error ends with, and its exit status, both from the kind's row of the table (exit_status.hpp).
// A collective error was found by every rank together: rank 0 says it, and all leave through MPI_Finalize. Any
// other error on a rank of a data-parallel job names the rank and ends the whole job (MPI_Abort): the other ranks
// may be waiting in a collective for this one, and must not hang.
int report(const ptk::Error& error) {
  const auto& rule = ptk::tools::exit_rule(error.error_kind());
  const std::string line = rule.prefix + error.line();
  auto& comm = ptk::dist::Comm::world();
  if (error.error_kind() == ptk::ErrorKind::collective) {
    if (comm.rank() == 0) std::cerr << "ptk: " << line << '\n';
    return rule.status;
  }
  if (comm.distributed()) {
    std::cerr << "ptk: rank " << comm.rank() << " of " << comm.size() << ": " << line << std::endl;
    comm.abort(rule.status);
  }
  std::cerr << "ptk: " << line << '\n';
  return rule.status;
}

// What a command printed must reach its destination: a write to standard output that failed (a full disk,
// /dev/full) turns a successful status into the io kind's (2), with one line. (After MPI has ended: no rank prefix, no abort.)
int flush_stdout(int status) {
  std::cout.flush();
  if ((std::fflush(stdout) == 0 && std::ferror(stdout) == 0 && std::cout) || status != 0) return status;
  const int err = errno;
  std::cerr << "ptk: cannot write to standard output: " << std::strerror(err != 0 ? err : EIO) << '\n';
  return ptk::tools::exit_rule(ptk::ErrorKind::io).status;
}

std::string executable_dir() {
  char buf[4096];
  const auto n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<std::size_t>(n));
  return path.substr(0, path.find_last_of('/'));
}

// Runs the command; cli_main then checks that its output was written.
int run_command(int argc, char** argv) {
  // Before Kokkos starts (no OMP_PROC_BIND warning); ptk bench's processes inherit the setting.
  ptk::runtime::set_openmp_defaults();
  ptk::runtime::keep_freed_memory();
  // A write beyond a file-size limit (ulimit -f) fails with EFBIG and is reported, instead of killing the
  // process in the middle of a checkpoint.
  std::signal(SIGXFSZ, SIG_IGN);

  const std::string command = argc > 1 ? argv[1] : "";
  if (command.empty() || command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return command.empty() ? ptk::tools::exit_rule(ptk::ErrorKind::usage).status : 0;
  }
  // Only --kokkos-* flags reach Kokkos: it would also take ptk's --device as its own legacy flag.
  ptk::tools::Args args;
  std::vector<char*> kokkos_argv{argv[0]};
  std::string backend;  // --backend: this build's own name or auto (an install's launcher has taken it out)
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--kokkos-", 0) == 0) kokkos_argv.push_back(argv[i]);
    else if (arg == "--backend" && i + 1 < argc) backend = argv[++i];
    else if (arg.rfind("--backend=", 0) == 0) backend = arg.substr(10);
    else args.push_back(arg);
  }
  if (!ptk::runtime::backend_choice_fits("ptk", backend)) return ptk::tools::exit_rule(ptk::ErrorKind::usage).status;
  int kokkos_argc = static_cast<int>(kokkos_argv.size());
  // MPI starts before Kokkos and ends after it; only `train` runs data parallel (mpirun -np N ptk train ...). Any
  // other command under mpirun -np N > 1 would run N times: every rank finds that together, rank 0 says it.
  std::optional<ptk::dist::Session> mpi;
  try {
    if (command != "bench") mpi.emplace(&argc, &argv);
    if (command != "train" && ptk::dist::Comm::world().distributed())
      throw ptk::dist::CollectiveError(command + " runs in one process, not one per rank of mpirun -np " +
                                       std::to_string(ptk::dist::Comm::world().size()) +
                                       " (only train runs data parallel): run it without mpirun");
    if (command == "tokenize") return ptk::tools::tokenize_command(args);  // no Kokkos
    if (command == "convert") return ptk::tools::convert_command(args);    // no Kokkos
    if (command == "bench") {  // runs its own processes, which start Kokkos
      if (const int status = ptk::runtime::check_can_initialize("ptk")) return status;
      return ptk::tools::bench_command(args, executable_dir());
    }
    if (command != "info" && command != "op" && command != "train" && command != "generate")
      throw ptk::UsageError("unknown command '" + command + "' (expected info, op, bench, train, generate, tokenize or convert)");
    // A GPU build on a machine without its GPU: Kokkos::initialize would abort (runtime.hpp), so
    // `info` reports without Kokkos and `op` refuses with one line, exit 2.
    if (ptk::runtime::gpu_build_without_gpu()) {
      if (command == "info") return ptk::tools::info_command(args, /*kokkos_started=*/false);
      const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h" ||
                                          (command == "op" && args[0] == "--list"));
      if (help && command == "op") return ptk::tools::op_command(args);  // no Kokkos
      if (help && command == "train") return ptk::tools::train_command(args);
      if (help && command == "generate") return ptk::tools::generate_command(args);
      return ptk::runtime::check_can_initialize("ptk");
    }
    // PTK_TUNING=gpu: the autograd and model run OpenMP with the GPU tuning (runtime.hpp). A bad value has been
    // reported in one line by tuning_from_env (shared with ptk_bench and the tests, which do not throw).
    if (ptk::runtime::tuning_from_env("ptk").empty()) return ptk::tools::exit_rule(ptk::ErrorKind::input).status;
    ptk::runtime::set_gpu_tuning_threads();
    Kokkos::ScopeGuard kokkos(kokkos_argc, kokkos_argv.data());
    if (command == "train") return ptk::tools::train_command(args);
    if (command == "generate") return ptk::tools::generate_command(args);
    return command == "info" ? ptk::tools::info_command(args, true) : ptk::tools::op_command(args);
  } catch (const ptk::Error& e) {
    return report(e);
  } catch (const std::bad_alloc& e) {  // an allocation outside ptk::allocate (a std::vector, a string)
    return report(ptk::OutOfMemory(std::string("out of memory (") + e.what() + ")"));
  } catch (const std::exception& e) {  // not thrown on purpose: ptk's own fault, one line of it
    const std::string what = e.what();
    return report(ptk::InternalError(what.substr(0, what.find('\n'))));
  }
}

}  // namespace

int ptk::tools::cli_main(int argc, char** argv) { return flush_stdout(run_command(argc, argv)); }
