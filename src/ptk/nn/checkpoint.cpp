#include "ptk/nn/checkpoint.hpp"

#include <fstream>
#include <map>
#include <sstream>

#include "ptk/io/safetensors.hpp"

namespace ptk::nn {

namespace {

using io::SafetensorsError;

SafetensorsError foreign(const std::string& path, const std::string& what) {
  return SafetensorsError(SafetensorsError::Kind::foreign, path + ": not a ptk model checkpoint: " + what);
}

std::string vocab_to_string(const Vocab& vocab) {
  std::string s;
  for (unsigned char b : vocab.bytes()) s += (s.empty() ? "" : ",") + std::to_string(static_cast<int>(b));
  return s;
}

int metadata_int(const io::Safetensors& st, const std::string& path, const std::string& key) {
  const auto it = st.metadata.find(key);
  if (it == st.metadata.end()) throw foreign(path, "__metadata__ has no '" + key + "'");
  try {
    std::size_t used = 0;
    const long value = std::stol(it->second, &used);
    if (used == it->second.size() && value >= 0 && value <= 1L << 30) return static_cast<int>(value);
  } catch (const std::exception&) {
  }
  throw foreign(path, "__metadata__ '" + key + "' is '" + it->second + "', not a non-negative integer");
}

Vocab parse_vocab(const std::string& text, const std::string& path) {
  std::string bytes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    int b = -1;
    try {
      std::size_t used = 0;
      b = std::stoi(item, &used);
      if (used != item.size()) b = -1;
    } catch (const std::exception&) {
    }
    if (b < 0 || b > 255) throw foreign(path, "__metadata__ 'vocab' holds '" + item + "', not a byte value");
    bytes += static_cast<char>(b);
  }
  try {
    return Vocab::from_bytes(bytes);
  } catch (const Error& e) {
    throw foreign(path, std::string("__metadata__ 'vocab': ") + e.what());
  }
}

io::Safetensors to_safetensors(const NamedParameters& params) {
  io::Safetensors st;
  for (const auto& np : params) st.tensors[np.first] = io::SafetensorsTensor{np.second.shape(), np.second.values()};
  return st;
}

}  // namespace

std::string optimizer_path(const std::string& checkpoint_path) {
  const std::string ext = ".safetensors";
  if (checkpoint_path.size() > ext.size() &&
      checkpoint_path.compare(checkpoint_path.size() - ext.size(), ext.size(), ext) == 0)
    return checkpoint_path.substr(0, checkpoint_path.size() - ext.size()) + ".optim" + ext;
  return checkpoint_path + ".optim" + ext;
}

void save_checkpoint(const std::string& path, const Gpt& model, const Vocab& vocab, int step, const Adamw* optimizer) {
  const auto& c = model.config();
  require(vocab.size() == c.vocab_size, "checkpoint: the vocabulary has ", vocab.size(), " bytes, the model ",
          c.vocab_size);
  io::Safetensors st = to_safetensors(model.parameters());
  st.metadata = {{"n_layer", std::to_string(c.n_layer)},       {"n_head", std::to_string(c.n_head)},
                 {"n_embd", std::to_string(c.n_embd)},         {"block_size", std::to_string(c.block_size)},
                 {"vocab_size", std::to_string(c.vocab_size)}, {"vocab", vocab_to_string(vocab)},
                 {"step", std::to_string(step)}};
  io::write_safetensors(path, st);
  if (optimizer) {
    io::Safetensors state = to_safetensors(optimizer->state());
    state.metadata = {{"step", std::to_string(optimizer->steps_taken())}};
    io::write_safetensors(optimizer_path(path), state);
  }
}

Checkpoint load_checkpoint(const std::string& path) {
  const io::Safetensors st = io::read_safetensors(path);
  Checkpoint ck;
  ck.config.n_layer = metadata_int(st, path, "n_layer");
  ck.config.n_head = metadata_int(st, path, "n_head");
  ck.config.n_embd = metadata_int(st, path, "n_embd");
  ck.config.block_size = metadata_int(st, path, "block_size");
  ck.config.vocab_size = metadata_int(st, path, "vocab_size");
  ck.step = metadata_int(st, path, "step");
  const auto vocab = st.metadata.find("vocab");
  if (vocab == st.metadata.end()) throw foreign(path, "__metadata__ has no 'vocab'");
  ck.vocab = parse_vocab(vocab->second, path);
  if (ck.vocab.size() != ck.config.vocab_size)
    throw foreign(path, "vocab lists " + std::to_string(ck.vocab.size()) + " bytes but vocab_size is " +
                            std::to_string(ck.config.vocab_size));
  try {
    check_config(ck.config);
  } catch (const Error& e) {
    throw foreign(path, e.what());
  }
  for (const auto& np : parameter_shapes(ck.config)) {
    const auto it = st.tensors.find(np.first);
    if (it == st.tensors.end()) throw foreign(path, "no tensor '" + np.first + "'");
    if (it->second.shape != np.second)
      throw foreign(path, "tensor '" + np.first + "' has shape " + to_string(it->second.shape) + ", the model's is " +
                              to_string(np.second));
    ck.parameters.emplace_back(np.first, it->second.data);
  }
  if (st.tensors.size() != ck.parameters.size())
    for (const auto& t : st.tensors) {
      bool known = false;
      for (const auto& p : ck.parameters) known = known || p.first == t.first;
      if (!known) throw foreign(path, "unexpected tensor '" + t.first + "'");
    }
  return ck;
}

void assign_parameters(const Gpt& model, const Checkpoint& checkpoint) {
  for (const auto& p : checkpoint.parameters) model.parameter(p.first).assign(p.second);
}

bool load_optimizer_state(const std::string& path, Adamw& optimizer, int step) {
  const std::string file = optimizer_path(path);
  if (!std::ifstream(file).good()) return false;
  const io::Safetensors st = io::read_safetensors(file);
  std::vector<std::pair<std::string, std::vector<float>>> tensors;
  for (const auto& t : st.tensors) tensors.emplace_back(t.first, t.second.data);
  try {
    optimizer.load_state(tensors, step);
  } catch (const Error& e) {
    throw SafetensorsError(SafetensorsError::Kind::foreign, file + ": " + e.what());
  }
  return true;
}

}  // namespace ptk::nn
