#pragma once
// ptk train's command line: the options, which of the run settings were given (a resumed run keeps the ones that
// were not), and the number formats of its output.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace ptk::tools {

struct Options {
  std::string data, save, load, log, tokenizer, device = "default", arch = "gpt2", dtype = "f32";
  int steps = 1500, batch = 16, block = 64, layers = 4, heads = 4, kv_heads = 0, width = 128, sample = 0,
      save_every = 0, eval_every = 0;
  float lr = 2e-3f, bucket_mb = 25.0f;
  std::uint64_t seed = 1337;
  bool eval_only = false, weights_only = false, shard_optimizer = false, overlap_comm = false;
};

// The run settings a user may give again on resume; each remembers whether it was given.
struct Given {
  CLI::Option *steps, *batch, *lr, *seed, *block, *layers, *heads, *width, *arch, *kv_heads, *dtype;
};

Given add_options(CLI::App& app, Options& o);
// The combinations refused before anything is read: --weights-only without --load, --save-every without --save,
// --dtype q8_0 or q4_0 without --eval-only, --dtype other than f32 with --eval-only and --save.
void check_combinations(const Options& o);

std::string fixed(double x, int digits);  // "1.2346"
std::string scientific(double x);         // "2.00e-03"
std::string megabytes(double bytes);      // "6.49 MB"

}  // namespace ptk::tools
