#pragma once
// The ops `ptk op` runs, one registry entry each: name, inputs (which are integer index arrays),
// outputs (which may be left out), --set keys with defaults and descriptions, a summary, and the
// function that runs it. op_command.cpp reads only this for its listing, argument checks and
// dispatch. The ops, their order and summaries are the op table's (ptk/op_table.def); ctest op_table:*
// checks the docs, the benchmarks, ptk_gpu_launches and the umbrella header against the same table.
#include <Kokkos_Core.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/io/npy.hpp"

namespace ptk::tools {

struct OpInput {
  std::string name;
  bool index = false;  // int32 or int64 .npy (token ids, class targets); otherwise float32
};

struct OpOutput {
  std::string name;
  bool optional = false;  // a saved statistic added after the op's contract was set (attention's lse)
  bool fp32 = false;      // float32 whatever --set dtype says (a loss, a log-sum-exp)
};

struct OpKey {
  std::string name;
  std::string fallback;  // the default, as documented ("1/sqrt(D)", "max id + 1")
  std::string help;      // one line
};

struct OpEntry;

// The --set values of one run, parsed on demand; a malformed value is a UsageError naming op and key.
class Settings {
 public:
  Settings(const OpEntry& op, std::map<std::string, std::string> values);
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  float number(const std::string& key, float fallback) const;
  bool flag(const std::string& key) const;  // 0 or 1; unset: false
  std::string word(const std::string& key, const std::string& fallback) const;
  long long integer(const std::string& key, long long fallback, long long lo, long long hi) const;

 private:
  const OpEntry& op_;
  std::map<std::string, std::string> values_;
};

// The inputs as read: at position i, arrays[i] for a float input or ids[i] for an index input (the
// other slot empty); dtype: --set dtype, the type the float inputs and outputs are stored in (their values already
// rounded to it). The ops written over the element type run in it.
struct HostInputs {
  std::vector<io::NpyArray> arrays;
  std::vector<io::NpyIndexArray> ids;
  io::NpyDtype dtype = io::NpyDtype::f32;
};

using OpResults = std::vector<io::NpyArray>;  // one per output, in order, on the host
using OpRun = std::function<OpResults(const HostInputs&, const Settings&)>;

struct OpEntry {
  std::string name;
  std::vector<OpInput> inputs;
  std::vector<OpOutput> outputs;
  std::vector<OpKey> keys;
  std::string summary;  // one line for `ptk op --help`
  OpRun run_host;       // on Kokkos::DefaultHostExecutionSpace
  OpRun run_default;    // on Kokkos::DefaultExecutionSpace

  std::size_t required_outputs() const;
  const OpKey* key(const std::string& name) const;
};

// Every op, in the op table's order (`ptk op --help` lists them so).
const std::vector<OpEntry>& op_registry();

// An op run on float32 arrays in memory, on the default execution space (a backend module's library API,
// backend_module.cpp), after `ptk op`'s checks: the name, the input count, the keys and values ("key=value"),
// empty inputs, ids past an int. At position i, inputs.arrays[i] or inputs.ids[i] as in HostInputs. Throws
// UsageError (op_command.cpp).
OpResults run_in_memory(const std::string& name, HostInputs inputs, std::vector<std::string> sets);
const OpEntry* find_op(const std::string& name);

}  // namespace ptk::tools
