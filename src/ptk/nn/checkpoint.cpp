#include "ptk/nn/checkpoint.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <sys/stat.h>

#include "ptk/io/atomic_file.hpp"
#include "ptk/io/safetensors.hpp"

namespace ptk::nn {

namespace {

using io::SafetensorsError;

SafetensorsError foreign(const std::string& path, const std::string& what) {
  return SafetensorsError(SafetensorsError::Kind::foreign, path + ": not a ptk model checkpoint: " + what);
}

// io checks the CRC-32s a file has; ptk writes both into every file it saves, so a file that carries ptk's
// metadata without one of them was edited to pass unchecked.
void require_checksums(const std::map<std::string, std::string>& meta, const std::string& path) {
  for (const char* key : {io::kChecksumKey, io::kHeaderChecksumKey})
    if (meta.count(key) == 0)
      throw SafetensorsError(SafetensorsError::Kind::corrupted,
                             path + ": has ptk's metadata but no '" + key + "' checksum (ptk writes both; the file was edited)");
}

// How many tensors a model of this config has, without listing them: n_layer may be hostile (2^30), and the list
// of its names would be gigabytes.
std::int64_t tensor_count(DecoderConfig c) {
  const std::int64_t layers = c.n_layer;
  c.n_layer = 1;
  const auto one = static_cast<std::int64_t>(parameter_shapes(c).size());
  c.n_layer = 2;
  const auto per_layer = static_cast<std::int64_t>(parameter_shapes(c).size()) - one;
  return one - per_layer + per_layer * layers;
}

// A weight that is NaN or infinite makes every logit NaN; ptk never saves one.
void require_finite(const std::vector<std::pair<std::string, std::vector<float>>>& parameters, const std::string& path) {
  for (const auto& [name, values] : parameters)
    for (std::size_t i = 0; i < values.size(); ++i)
      if (!std::isfinite(values[i]))
        throw SafetensorsError(SafetensorsError::Kind::corrupted,
                               path + ": tensor '" + name + "' holds " + (std::isnan(values[i]) ? "NaN" : "an infinity") +
                                   " at element " + std::to_string(i) + ": not a usable model");
}

std::string join(const std::string& dir, const std::string& name) { return dir == "." ? name : dir + "/" + name; }

std::string vocab_to_string(const Vocab& vocab) {
  std::string s;
  for (unsigned char b : vocab.bytes()) s += (s.empty() ? "" : ",") + std::to_string(static_cast<int>(b));
  return s;
}

const std::string& metadata_text(const std::map<std::string, std::string>& meta, const std::string& path,
                                 const std::string& key) {
  const auto it = meta.find(key);
  if (it == meta.end()) throw foreign(path, "__metadata__ has no '" + key + "'");
  return it->second;
}

std::uint64_t metadata_u64(const std::map<std::string, std::string>& meta, const std::string& path, const std::string& key,
                           std::uint64_t max) {
  const std::string& text = metadata_text(meta, path, key);
  try {
    std::size_t used = 0;
    const unsigned long long value = std::stoull(text, &used);
    if (used == text.size() && !text.empty() && text[0] != '-' && value <= max) return value;
  } catch (const std::exception&) {
  }
  throw foreign(path, "__metadata__ '" + key + "' is '" + text + "', not an integer in [0, " + std::to_string(max) + "]");
}

int metadata_int(const std::map<std::string, std::string>& meta, const std::string& path, const std::string& key) {
  return static_cast<int>(metadata_u64(meta, path, key, std::uint64_t{1} << 30));
}

float metadata_float(const std::map<std::string, std::string>& meta, const std::string& path, const std::string& key) {
  const std::string& text = metadata_text(meta, path, key);
  char* end = nullptr;
  const float value = std::strtof(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value < 0)
    throw foreign(path, "__metadata__ '" + key + "' is '" + text + "', not a finite non-negative number");
  return value;
}

// Nine significant digits: every float prints to a text that reads back to the same float.
std::string exact(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
  return buf;
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

std::map<std::string, std::string> model_metadata(const DecoderConfig& c, const Vocab& vocab, int step) {
  require(vocab.size() == c.vocab_size, "checkpoint: the vocabulary has ", vocab.size(), " ids, the model ",
          c.vocab_size);
  std::map<std::string, std::string> m = {{"arch", to_string(c.arch)},
          {"n_layer", std::to_string(c.n_layer)},
          {"n_head", std::to_string(c.n_head)},
          {"n_kv_head", std::to_string(kv_heads(c))},
          {"n_embd", std::to_string(c.n_embd)},
          {"ffn_hidden", std::to_string(mlp_hidden(c))},
          {"block_size", std::to_string(c.block_size)},
          {"vocab_size", std::to_string(c.vocab_size)},
          {"rope_base", exact(c.rope_base)},
          {"norm_eps", exact(c.norm_eps)},
          {"step", std::to_string(step)}};
  // A byte model lists its bytes; a model trained on a tokenizer's ids names the tokenizer (its fingerprint).
  if (vocab.tokenizer().empty()) m["vocab"] = vocab_to_string(vocab);
  else m["tokenizer"] = vocab.tokenizer();
  return m;
}

std::map<std::string, std::string> run_metadata(const RunState& r, int optimizer_steps) {
  return {{"run_id", r.id},
          {"step", std::to_string(r.step)},
          {"optimizer_steps", std::to_string(optimizer_steps)},
          {"lr", exact(r.schedule.lr)},
          {"min_lr", exact(r.schedule.min_lr)},
          {"warmup", std::to_string(r.schedule.warmup)},
          {"steps", std::to_string(r.schedule.steps)},
          {"batch", std::to_string(r.batch)},
          {"seed", std::to_string(r.seed)},
          {"sampler_draws", std::to_string(r.sampler_draws)},
          {"data_path", r.data_path},
          {"data_bytes", std::to_string(r.data_bytes)},
          {"data_crc32", r.data_crc32},
          {"dtype", dtype_name(r.precision.dtype)},
          {"loss_scale", exact(r.precision.loss_scale)},
          {"loss_scale_good_steps", std::to_string(r.precision.good_steps)}};
}

RunState parse_run(const std::map<std::string, std::string>& m, const std::string& path) {
  RunState r;
  r.id = metadata_text(m, path, "run_id");
  r.step = metadata_int(m, path, "step");
  r.schedule.lr = metadata_float(m, path, "lr");
  r.schedule.min_lr = metadata_float(m, path, "min_lr");
  r.schedule.warmup = metadata_int(m, path, "warmup");
  r.schedule.steps = metadata_int(m, path, "steps");
  r.batch = metadata_int(m, path, "batch");
  r.seed = metadata_u64(m, path, "seed", ~std::uint64_t{0} - 2);
  r.sampler_draws = metadata_u64(m, path, "sampler_draws", ~std::uint64_t{0});
  r.data_path = metadata_text(m, path, "data_path");
  r.data_bytes = static_cast<std::int64_t>(metadata_u64(m, path, "data_bytes", std::uint64_t{1} << 62));
  r.data_crc32 = metadata_text(m, path, "data_crc32");
  if (m.count("dtype")) {  // absent from the states of runs saved before mixed precision: f32
    const std::string& dtype = metadata_text(m, path, "dtype");
    if (!parse_dtype(dtype, r.precision.dtype) || !(r.precision.dtype == DType::f32 || r.precision.dtype == DType::bf16 ||
                                                    r.precision.dtype == DType::f16))
      throw foreign(path, "__metadata__ 'dtype' is '" + dtype + "', not f32, bf16 or f16");
    r.precision.loss_scale = metadata_float(m, path, "loss_scale");
    if (!(r.precision.loss_scale > 0))
      throw foreign(path, "__metadata__ 'loss_scale' is 0; a loss scale is positive");
    r.precision.good_steps = metadata_int(m, path, "loss_scale_good_steps");
  }
  return r;
}

// After a save: removes every training state of this checkpoint path (state_path(path, N) for any N) but
// `kept`, and the temporaries of killed writers of any of them. They belong to no checkpoint any more: the
// state the replaced model file named, and those of saves that a kill cut off between writing the state and
// renaming the model file.
void remove_other_states(const std::string& path, const std::string& kept) {
  const std::string dir = io::directory_of(path), name = io::file_name_of(state_path(path, 0));
  const std::string prefix = name.substr(0, name.size() - std::string("0.safetensors").size()), suffix = ".safetensors";
  const auto is_state = [&](const std::string& file) {
    if (file.size() <= prefix.size() + suffix.size() || file.compare(0, prefix.size(), prefix) != 0 ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
      return false;
    const std::string step = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
    return step.find_first_not_of("0123456789") == std::string::npos;
  };
  for (const auto& file : io::list_directory(dir))
    if (file != kept && is_state(file)) io::remove_file(join(dir, file));
  io::remove_stale_temporaries(dir, is_state);
}

}  // namespace

std::string state_path(const std::string& checkpoint_path, int step) {
  const std::string ext = ".safetensors", suffix = ".state-" + std::to_string(step) + ext;
  if (checkpoint_path.size() > ext.size() &&
      checkpoint_path.compare(checkpoint_path.size() - ext.size(), ext.size(), ext) == 0)
    return checkpoint_path.substr(0, checkpoint_path.size() - ext.size()) + suffix;
  return checkpoint_path + suffix;
}

void save_model(const std::string& path, const Decoder& model, const Vocab& vocab, int step) {
  io::Safetensors st = to_safetensors(model.parameters());
  st.metadata = model_metadata(model.config(), vocab, step);
  io::write_safetensors(path, st);
  remove_other_states(path, "");
}

void save_model(const std::string& path, const DecoderConfig& config, io::Safetensors tensors, const Vocab& vocab,
                int step) {
  for (const auto& [name, shape] : parameter_shapes(config)) {
    const auto it = tensors.tensors.find(name);
    require(it != tensors.tensors.end() && it->second.shape == shape, "checkpoint: parameter ", name,
            " is missing or not of shape ", to_string(Shape(shape)));
  }
  require(tensors.tensors.size() == parameter_shapes(config).size(), "checkpoint: tensors that are not parameters");
  tensors.metadata = model_metadata(config, vocab, step);
  io::write_safetensors(path, tensors);
  remove_other_states(path, "");
}

void save_checkpoint(const std::string& path, const Decoder& model, const Vocab& vocab, const Adamw& optimizer,
                     const RunState& run) {
  save_checkpoint(path, model, vocab, optimizer.state(), optimizer.steps_taken(), run);
}

void save_checkpoint(const std::string& path, const Decoder& model, const Vocab& vocab, const NamedParameters& moments,
                     int optimizer_steps, const RunState& run) {
  const std::string state_file = state_path(path, run.step);
  io::Safetensors state = to_safetensors(moments);
  state.metadata = run_metadata(run, optimizer_steps);
  const std::string state_crc = io::write_safetensors(state_file, state);

  io::Safetensors st = to_safetensors(model.parameters());
  st.metadata = model_metadata(model.config(), vocab, run.step);
  st.metadata["run_id"] = run.id;
  st.metadata["state_file"] = io::file_name_of(state_file);
  st.metadata["state_crc32"] = state_crc;
  io::write_safetensors(path, st);
  remove_other_states(path, io::file_name_of(state_file));
}

namespace {

SafetensorsError unpaired(const std::string& path, const std::string& what) {
  return SafetensorsError(SafetensorsError::Kind::unpaired, path + ": " + what);
}

// The training state the model file names, checked against it: its fingerprint, run and step, and a moment of
// every parameter's shape.
TrainingState load_training_state(const std::string& path, const Checkpoint& ck, const std::string& run_id,
                                  const std::string& crc) {
  TrainingState state;
  state.path = join(io::directory_of(path), ck.state_file);
  struct stat st_file {};
  if (::stat(state.path.c_str(), &st_file) != 0)
    throw unpaired(path, "its training state " + state.path +
                             " is missing (moved, or removed by hand); --weights-only starts a new run from the weights");
  const io::Safetensors st = io::read_safetensors(state.path);
  require_checksums(st.metadata, state.path);
  const auto got = st.metadata.find(io::kHeaderChecksumKey);
  state.run = parse_run(st.metadata, state.path);
  if (got == st.metadata.end() || got->second != crc || state.run.id != run_id || state.run.step != ck.step)
    throw unpaired(path, "its training state " + state.path + " is from run " + state.run.id + " step " +
                             std::to_string(state.run.step) + ", not this model's run " + run_id + " step " +
                             std::to_string(ck.step) + " (or was rewritten); --weights-only starts a new run");
  state.optimizer_steps = metadata_int(st.metadata, state.path, "optimizer_steps");
  for (const auto& np : parameter_shapes(ck.config))
    for (const std::string moment : {"m.", "v."}) {
      const std::string name = moment + np.first;
      const auto it = st.tensors.find(name);
      if (it == st.tensors.end()) throw foreign(state.path, "no tensor '" + name + "'");
      if (it->second.shape != np.second)
        throw foreign(state.path, "tensor '" + name + "' has shape " + to_string(it->second.shape) +
                                      ", the model's is " + to_string(np.second));
      state.moments.emplace_back(name, it->second.data);
    }
  if (st.tensors.size() != state.moments.size())
    throw foreign(state.path, std::to_string(st.tensors.size()) + " tensors, expected " +
                                  std::to_string(state.moments.size()) + " (m and v of every parameter)");
  return state;
}

}  // namespace

Checkpoint load_checkpoint(const std::string& path, bool with_training_state) {
  const io::Safetensors st = io::read_safetensors(path);
  const auto& meta = st.metadata;
  if (meta.count("n_layer") || meta.count("vocab") || meta.count("tokenizer")) require_checksums(meta, path);
  Checkpoint ck;
  // A file without "arch" predates the Llama decoder: it is gpt2, and its absent keys take gpt2's defaults.
  if (meta.count("arch")) {
    try {
      ck.config.arch = parse_arch(meta.at("arch"));
    } catch (const Error& e) {
      throw foreign(path, std::string("__metadata__ 'arch': ") + e.what());
    }
  }
  if (meta.count("n_kv_head")) ck.config.n_kv_head = metadata_int(meta, path, "n_kv_head");
  if (meta.count("ffn_hidden")) ck.config.ffn_hidden = metadata_int(meta, path, "ffn_hidden");
  if (meta.count("rope_base")) ck.config.rope_base = metadata_float(meta, path, "rope_base");
  if (meta.count("norm_eps")) ck.config.norm_eps = metadata_float(meta, path, "norm_eps");
  ck.config.n_layer = metadata_int(meta, path, "n_layer");
  ck.config.n_head = metadata_int(meta, path, "n_head");
  ck.config.n_embd = metadata_int(meta, path, "n_embd");
  ck.config.block_size = metadata_int(meta, path, "block_size");
  ck.config.vocab_size = metadata_int(meta, path, "vocab_size");
  ck.step = metadata_int(meta, path, "step");
  if (meta.count("tokenizer") && !meta.count("vocab")) {
    try {
      ck.vocab = Vocab::of_tokenizer(ck.config.vocab_size, meta.at("tokenizer"));
    } catch (const Error& e) {
      throw foreign(path, std::string("__metadata__ 'tokenizer': ") + e.what());
    }
  } else {
    ck.vocab = parse_vocab(metadata_text(meta, path, "vocab"), path);
  }
  if (ck.vocab.size() != ck.config.vocab_size)
    throw foreign(path, "vocab lists " + std::to_string(ck.vocab.size()) + " bytes but vocab_size is " +
                            std::to_string(ck.config.vocab_size));
  try {
    check_config(ck.config);
  } catch (const Error& e) {
    throw foreign(path, e.what());
  }
  // The count first: a config of 10^7 layers is refused here, before its names are listed.
  const std::int64_t expected = tensor_count(ck.config);
  if (static_cast<std::int64_t>(st.tensors.size()) != expected)
    throw foreign(path, "it holds " + std::to_string(st.tensors.size()) + " tensors, but a " + to_string(ck.config.arch) +
                            " model of n_layer " + std::to_string(ck.config.n_layer) + " has " + std::to_string(expected));
  // As many tensors as the model's, each of them found: no other tensor is left.
  for (const auto& np : parameter_shapes(ck.config)) {
    const auto it = st.tensors.find(np.first);
    if (it == st.tensors.end()) throw foreign(path, "no tensor '" + np.first + "'");
    if (it->second.shape != np.second)
      throw foreign(path, "tensor '" + np.first + "' has shape " + to_string(it->second.shape) + ", the model's is " +
                              to_string(np.second));
    ck.parameters.emplace_back(np.first, it->second.data);
  }
  require_finite(ck.parameters, path);
  const auto state_file = meta.find("state_file");
  if (state_file != meta.end()) {
    ck.state_file = state_file->second;
    if (ck.state_file.empty() || ck.state_file.find('/') != std::string::npos)
      throw foreign(path, "__metadata__ 'state_file' is '" + ck.state_file + "', not a file name");
    if (with_training_state)
      ck.training = load_training_state(path, ck, metadata_text(meta, path, "run_id"), metadata_text(meta, path, "state_crc32"));
  }
  return ck;
}

void assign_parameters(const Decoder& model, const Checkpoint& checkpoint) {
  for (const auto& p : checkpoint.parameters) model.parameter(p.first).assign(p.second);
}

namespace {
template <class Optimizer>
void restore(Optimizer& optimizer, const TrainingState& state) {
  try {
    optimizer.load_state(state.moments, state.optimizer_steps);
  } catch (const Error& e) {
    throw SafetensorsError(SafetensorsError::Kind::foreign, state.path + ": " + e.what());
  }
}
}  // namespace

void restore_optimizer(Adamw& optimizer, const TrainingState& state) { restore(optimizer, state); }
void restore_optimizer(DataParallelAdamw& optimizer, const TrainingState& state) { restore(optimizer, state); }

}  // namespace ptk::nn
