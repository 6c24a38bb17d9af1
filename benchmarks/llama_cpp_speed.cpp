// llama.cpp's prefill and decode speed through its C API, for scripts/llama_cpp_sweep.sh: the libraries that the npm
// package @node-llama-cpp/linux-x64 ships (its best CPU variant loaded at run time, as llama.cpp's own tools do),
// compiled against the headers of the same release (the package's source bundle), so nothing runs between tokens
// but llama.cpp. Not part of the CMake build: the sweep compiles it into its cache (it needs the npm package).
//
// The prompt's ids are decoded in batches of llama.cpp's n_batch (its defaults: 2048, micro-batches of 512), the
// first new token is the argmax of the last position's logits (prefill ends there); N - 1 more tokens follow, one
// llama_decode each (decode). Greedy by argmax, lowest id on ties, as ptk generate --temperature 0.
// usage: llama_cpp_speed BACKEND_DIR MODEL.gguf THREADS N "ID ID ..."
// prints two lines: "prefill: P tokens in X ms (Y tokens/s); decode: N-1 tokens in X ms (Y tokens/s); peak resident
// memory M MiB" (as ptk generate ends), then the N new ids, space-separated (as ptk generate --ids).
#include <ggml-backend.h>
#include <llama.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "llama_cpp_speed: %s\n", what.c_str());
  std::exit(2);
}

llama_token argmax(const float* logits, int n) {
  return static_cast<llama_token>(std::max_element(logits, logits + n) - logits);  // first of equal maxima
}

std::string rate(std::size_t tokens, double seconds) {
  char line[128];
  std::snprintf(line, sizeof line, "%zu tokens in %.1f ms (%.2f tokens/s)", tokens, seconds * 1e3,
                tokens / seconds);
  return line;
}

void quiet(ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) fail("usage: llama_cpp_speed BACKEND_DIR MODEL.gguf THREADS N \"ID ID ...\"");
  const int threads = std::atoi(argv[3]), n = std::atoi(argv[4]);
  std::vector<llama_token> prompt;
  std::istringstream ids(argv[5]);
  for (llama_token id; ids >> id;) prompt.push_back(id);
  if (threads < 1 || n < 1 || prompt.empty()) fail("THREADS and N must be >= 1 and the prompt not empty");

  llama_log_set(quiet, nullptr);
  ggml_backend_load_all_from_path(argv[1]);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[2], llama_model_default_params());
  if (!model) fail(std::string("cannot load ") + argv[2]);
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_context_params params = llama_context_default_params();
  params.n_ctx = static_cast<uint32_t>(prompt.size() + n + 8);
  params.n_batch = std::min(params.n_batch, params.n_ctx);
  params.n_ubatch = std::min(params.n_ubatch, params.n_batch);
  params.n_threads = params.n_threads_batch = threads;
  llama_context* ctx = llama_init_from_model(model, params);
  if (!ctx) fail("cannot create a context");

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const std::size_t batch = llama_n_batch(ctx);
  for (std::size_t i = 0; i < prompt.size(); i += batch) {
    const auto count = static_cast<int32_t>(std::min(batch, prompt.size() - i));
    if (llama_decode(ctx, llama_batch_get_one(prompt.data() + i, count)) != 0) fail("llama_decode (prompt) failed");
  }
  std::vector<llama_token> out{argmax(llama_get_logits_ith(ctx, -1), vocab)};
  const auto first = clock::now();
  while (static_cast<int>(out.size()) < n) {
    llama_token token = out.back();
    if (llama_decode(ctx, llama_batch_get_one(&token, 1)) != 0) fail("llama_decode (token) failed");
    out.push_back(argmax(llama_get_logits_ith(ctx, -1), vocab));
  }
  const auto end = clock::now();
  const auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("prefill: %s; decode: %s; peak resident memory %.2f MiB\n",
              rate(prompt.size(), seconds(first - start)).c_str(), rate(out.size() - 1, seconds(end - first)).c_str(),
              usage.ru_maxrss / 1024.0);
  for (std::size_t i = 0; i < out.size(); ++i) std::printf(i ? " %d" : "%d", out[i]);
  std::printf("\n");
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
}
