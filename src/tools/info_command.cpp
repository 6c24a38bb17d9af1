// ptk info [--verbose] [--model L,H,C,T,V[,B]|PATH [--arch gpt2|llama] [--kv-heads N]] [--device host|default]: what this build of ptk
// runs on. Devices are found per built backend through the CUDA/HIP runtime (ptk::runtime), so a
// GPU build on a machine without its GPU still reports, without starting Kokkos.
#include <Kokkos_Core.hpp>

#include <CLI/CLI.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
#include <omp.h>
#endif

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli_checks.hpp"
#include "build_facts.hpp"
#include "commands.hpp"
#include "ptk/core/cpu_features.hpp"
#include "ptk/core/runtime.hpp"
#include "ptk/core/vendor_blas.hpp"
#include "ptk/kernels/host_variant.hpp"
#include "ptk/nn/memory_estimate.hpp"
#include "ptk/nn/model_files.hpp"

namespace ptk::tools {

std::string kokkos_backends() {
  std::string s;
  const auto add = [&](const char* name) { s += (s.empty() ? "" : ", ") + std::string(name); };
#if defined(KOKKOS_ENABLE_CUDA)
  add("CUDA");
#endif
#if defined(KOKKOS_ENABLE_HIP)
  add("HIP");
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  add("OpenMP");
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  add("Threads");
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
  add("Serial");
#endif
  return s;
}

// The architectures Kokkos was configured for (the common ones; --verbose prints Kokkos' own list).
std::string kokkos_archs() {
  std::string s;
  const auto add = [&](const char* name) { s += (s.empty() ? "" : ", ") + std::string(name); };
#if defined(KOKKOS_ARCH_HOPPER90)
  add("HOPPER90 (sm_90)");
#endif
#if defined(KOKKOS_ARCH_ADA89)
  add("ADA89 (sm_89)");
#endif
#if defined(KOKKOS_ARCH_AMPERE86)
  add("AMPERE86 (sm_86)");
#endif
#if defined(KOKKOS_ARCH_AMPERE80)
  add("AMPERE80 (sm_80)");
#endif
#if defined(KOKKOS_ARCH_VOLTA70)
  add("VOLTA70 (sm_70)");
#endif
#if defined(KOKKOS_ARCH_AMD_GFX90A) || defined(KOKKOS_ARCH_VEGA90A)
  add("gfx90a");
#endif
#if defined(KOKKOS_ARCH_AMD_GFX908) || defined(KOKKOS_ARCH_VEGA908)
  add("gfx908");
#endif
#if defined(KOKKOS_ARCH_AMD_GFX942)
  add("gfx942");
#endif
#if defined(KOKKOS_ARCH_SKX)
  add("SKX");
#endif
#if defined(KOKKOS_ARCH_SPR)
  add("SPR");
#endif
  return s.empty() ? "none named (host code from the compiler flags)" : s;
}

template <bool on>
constexpr const char* yes_no() {
  return on ? "yes" : "no";
}

// The host kernels' ISA: their CPU variant (cpu_variants.def) and its vector width, or, in a build without variants,
// the widest vector ISA the compiler was allowed (-march), and whether the CPU running it has it: a binary carried to
// a CPU without it dies of SIGILL, not of a message.
std::string compiled_isa() {
  const std::string variant = ptk::kernels::host_variant();
  const int bits = ptk::kernels::host_vector_bits();
  const std::string width = bits > 0 ? ", " + std::to_string(bits) + "-bit vectors" : "";
  if (!variant.empty()) {
    std::string lacks = "not in cpu_variants.def";
    for (const auto& v : ptk::cpu::variants())
      if (variant == v.name) lacks = ptk::cpu::missing(v, ptk::cpu::features());
    return "variant " + variant + width + (lacks.empty() ? "" : " (this CPU lacks " + lacks + ")");
  }
#if defined(__AVX512F__)
  const char* isa = "AVX-512";
  const bool here = ptk::cpu::vector_isa().avx512f;
#elif defined(__AVX2__)
  const char* isa = "AVX2";
  const bool here = ptk::cpu::vector_isa().avx2;
#elif defined(__AVX__)
  const char* isa = "AVX";
  const bool here = ptk::cpu::vector_isa().avx;
#elif defined(__x86_64__)
  const char* isa = "SSE2 (baseline x86-64)";
  const bool here = true;
#elif defined(__ARM_NEON)
  const char* isa = "NEON";
  const bool here = true;
#else
  const char* isa = "generic";
  const bool here = true;
#endif
  return std::string(isa) + width + " (compiler flags)" + (here ? "" : " (this CPU lacks it)");
}

namespace {

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string grouped(std::int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

// A size or count of the estimate; one past the int64 limit (saturated) prints as "> <the limit>".
std::string gib_of(std::int64_t bytes) {
  return nn::MemoryEstimate::saturated(bytes) ? "> " + gib(static_cast<double>(bytes)) : gib(static_cast<double>(bytes));
}
std::string count_of(std::int64_t n) { return nn::MemoryEstimate::saturated(n) ? "> " + grouped(n) : grouped(n); }

// "yes: 1.00 GiB of 2.00 GiB (where)"; a saturated total never fits.
std::string fits(std::int64_t total, double available, const std::string& where) {
  const bool yes = !nn::MemoryEstimate::saturated(total) && static_cast<double>(total) <= available;
  return std::string(yes ? "yes" : "no") + ": " + gib_of(total) + " of " + gib(available) + " (" + where + ")";
}

void row(const std::string& key, const std::string& value) {
  std::cout << "  " << key << std::string(key.size() < 26 ? 26 - key.size() : 1, ' ') << value << '\n';
}

nn::ModelShape parse_model(const std::string& text) {
  std::vector<std::int64_t> v;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    std::size_t used = 0;
    long long x = 0;
    try {
      x = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size() || part.empty() || x < 1)
      throw UsageError{"info: --model needs positive integers L,H,C,T,V[,B], got '" + text + "'"};
    v.push_back(x);
  }
  if (v.size() != 5 && v.size() != 6)
    throw UsageError{"info: --model needs L,H,C,T,V[,B] (layers, heads, channels, context, vocabulary, batch), got '" +
                     text + "'"};
  if (v[2] % v[1] != 0) throw UsageError{"info: --model: channels C must be a multiple of heads H, got '" + text + "'"};
  return {v[0], v[1], v[2], v[3], v[4], v.size() == 6 ? v[5] : 1};
}

// What a model is held to: the first GPU's free memory for --device default in a build with a usable GPU, else the
// host's MemAvailable; and its name for the table.
std::pair<double, std::string> memory_budget(const std::string& device, const runtime::GpuProbe& probe) {
  if (device == "default" && probe.built && probe.count > 0)
    return {static_cast<double>(probe.devices.empty() ? 0 : probe.devices[0].free_bytes),
            std::string(runtime::gpu_backend()) + " 0 free memory"};
  return {static_cast<double>(runtime::host_available_bytes()), "host MemAvailable"};
}

// `ptk info --model`: the training and inference memory of the model against what the --device has free.
void print_memory_estimates(const nn::ModelShape& model_shape, const std::string& device,
                            const runtime::GpuProbe& probe) {
  const auto e = nn::estimate_training_memory(model_shape);
  const auto [available, where] = memory_budget(device, probe);
  std::cout << "\nTraining memory, " << (model_shape.arch == nn::Arch::llama ? "llama" : "GPT-2-style")
            << " model L=" << model_shape.layers << " H=" << model_shape.heads
            << (model_shape.arch == nn::Arch::llama
                    ? " kv_heads=" + std::to_string(model_shape.kv_heads > 0 ? model_shape.kv_heads : model_shape.heads)
                    : "")
            << " C=" << model_shape.channels << " T=" << model_shape.context << " V=" << model_shape.vocab
            << " B=" << model_shape.batch << " (float32, AdamW; formulas in src/ptk/nn/memory_estimate.hpp)\n";
  row("parameters", count_of(e.parameters) + " = " + gib_of(e.parameter_bytes));
  row("gradients", gib_of(e.gradient_bytes));
  row("AdamW state (m, v)", gib_of(e.optimizer_bytes));
  row("activations", count_of(e.activations) + " = " + gib_of(e.activation_bytes));
  row("activation gradients", gib_of(e.activation_gradient_bytes));
  row("total", gib_of(e.total_bytes()));
  row("fits", fits(e.total_bytes(), available, where));
  const auto mixed = nn::estimate_training_memory(model_shape, DType::bf16);
  row("--dtype bf16|f16 adds", gib_of(mixed.copy_bytes) + " (16-bit copies of the linear weights and inputs)");
  const auto g = nn::estimate_inference_memory(model_shape);
  std::cout << "\nInference memory (ptk generate, KV cache of B=" << model_shape.batch << " x T=" << model_shape.context
            << " positions)\n";
  row("weights", gib_of(g.parameter_bytes));
  row("KV cache", gib_of(g.kv_cache_bytes));
  row("workspace (prefill)", gib_of(g.workspace_bytes));
  row("total", gib_of(g.total_bytes()));
  row("fits", fits(g.total_bytes(), available, where));
}

// `ptk info --model PATH`: the model a file or directory holds, and its inference memory for each weight type
// against what the --device has free (the estimates ptk generate refuses by, at the model's whole context).
void print_model_file(const std::string& path, const std::string& device, const runtime::GpuProbe& probe) {
  const nn::ModelFiles files(path);
  const nn::DecoderConfig& c = files.config();
  std::cout << "\nModel " << path << "\n";
  row("form", files.description());
  row("shape", nn::to_string(c.arch) + " L=" + std::to_string(c.n_layer) + " H=" + std::to_string(c.n_head) +
                   " kv_heads=" + std::to_string(nn::kv_heads(c)) + " C=" + std::to_string(c.n_embd) + " F=" +
                   std::to_string(nn::mlp_hidden(c)) + " V=" + std::to_string(c.vocab_size) + " context=" +
                   std::to_string(c.block_size));
  if (!files.note().empty()) row("note", files.note());
  row("stored", std::string(dtype_name(files.stored_dtype())) + " matrices, " + gib(static_cast<double>(files.stored_bytes())));
  const auto [available, where] = memory_budget(device, probe);
  const nn::ModelShape m{c.n_layer, c.n_head, c.n_embd, c.block_size, c.vocab_size, 1, c.arch, nn::kv_heads(c),
                         nn::mlp_hidden(c)};
  std::cout << "\nInference memory by --dtype (ptk generate; bf16 KV cache of " << c.block_size
            << " positions; formulas in src/ptk/nn/memory_estimate.hpp)\n";
  std::cout << "  --dtype  weights      KV cache     workspace    total        fits\n";
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::q8_0, DType::q4_0}) {
    const auto e = nn::estimate_inference_memory(m, DType::bf16, files.format() == nn::ModelFormat::ptk ? DType::f32 : t);
    char line[160];
    std::snprintf(line, sizeof line, "  %-8s %-12s %-12s %-12s ", dtype_name(t), gib_of(e.parameter_bytes).c_str(),
                  gib_of(e.kv_cache_bytes).c_str(), gib_of(e.workspace_bytes + e.staging_bytes).c_str());
    std::cout << line << fits(e.total_bytes(), available, where) << '\n';
  }
}

bool is_path(const std::string& text) {
  struct stat st {};
  return ::stat(text.c_str(), &st) == 0;
}

}  // namespace

int info_command(const Args& args, bool kokkos_started) {
  bool verbose = false;
  std::string model, device = "default", arch = "gpt2";
  std::int64_t kv_heads = 0;
  CLI::App app{"What this build of ptk runs on: Kokkos configuration, backends, devices, memory.", "ptk info"};
  app.add_flag("--verbose", verbose, "also print Kokkos' own configuration");
  auto* model_option = app.add_option("--model", model, "training and inference memory of a model: layers, heads, "
                                                        "channels, context, vocabulary[, batch]; or a model's path "
                                                        "(a ptk checkpoint, a Hugging Face directory, a GGUF file)")
                           ->type_name("L,H,C,T,V[,B]|PATH");
  app.add_option("--arch", arch, "the model's architecture")->capture_default_str()->check(CLI::IsMember({"gpt2", "llama"}));
  auto* kv_option = app.add_option("--kv-heads", kv_heads, "llama's key/value heads (a divisor of H; default H)")
                        ->check(whole_number(1, 1 << 30));
  app.add_option("--device", device, "host or default (the GPU in a GPU build): whose free memory --model is held to")
      ->capture_default_str()->check(CLI::IsMember({"host", "default"}));
  if (parse_command_line(app, args, "info")) return 0;
  const bool model_path = model_option->count() > 0 && is_path(model);
  auto model_shape = model_option->count() == 0 || model_path ? nn::ModelShape{} : parse_model(model);
  model_shape.arch = arch == "llama" ? nn::Arch::llama : nn::Arch::gpt2;
  if (kv_option->count() > 0) {
    if (arch != "llama") throw UsageError{"info: --kv-heads is for --arch llama"};
    if (model_shape.heads > 0 && model_shape.heads % kv_heads != 0)
      throw UsageError{"info: --kv-heads must be a positive divisor of the heads H, got '" + std::to_string(kv_heads) + "'"};
    model_shape.kv_heads = kv_heads;
  }
  if (model_shape.arch == nn::Arch::llama && model_shape.heads > 0 && model_shape.channels / model_shape.heads % 2 != 0)
    throw UsageError{"info: --model: llama's head dim C/H must be even (rope rotates pairs), got '" + model + "'"};

  const auto probe = runtime::probe_gpus(/*details=*/true);
  const bool gpu_usable = probe.built && probe.count > 0;
  const int host_threads = kokkos_started ? Kokkos::DefaultHostExecutionSpace().concurrency()
#if defined(KOKKOS_ENABLE_OPENMP)
                                          : omp_get_max_threads();
#else
                                          : 1;
#endif

  std::cout << "ptk " PTK_VERSION << "\n\nKokkos configuration\n";
  row("version", std::to_string(KOKKOS_VERSION / 10000) + '.' + std::to_string(KOKKOS_VERSION / 100 % 100) + '.' +
                     std::to_string(KOKKOS_VERSION % 100));
  row("backends", kokkos_backends());
  row("architectures", kokkos_archs());
  row("host ISA compiled for", compiled_isa());
#if defined(KOKKOS_ENABLE_DEBUG_BOUNDS_CHECK)
  row("bounds checks", "yes");
#else
  row("bounds checks", "no");
#endif
#if defined(KOKKOS_ENABLE_DEBUG)
  row("debug", "yes");
#else
  row("debug", "no");
#endif
  row("default execution space", std::string(Kokkos::DefaultExecutionSpace::name()) + " (--device default)" +
                                     (probe.built && !gpu_usable ? ": unusable here, no device" : ""));
  row("host execution space", std::string(Kokkos::DefaultHostExecutionSpace::name()) + " (--device host), " +
                                  std::to_string(host_threads) + " threads");
  // Looked up only where it can run: loading cuBLAS (about 600 MB with cublasLt) is for a machine with the GPU.
  row("16-bit GEMM (default)",
      !probe.built || gpu_usable ? vendor::gemm16_route() : std::string("portable: no device"));

  std::cout << "\nDevices\n";
  row("host", std::to_string(std::thread::hardware_concurrency()) + " CPUs, " + gib(runtime::host_total_bytes()) +
                  " total, " + gib(runtime::host_available_bytes()) + " available");
  if (probe.built) {
    if (!gpu_usable) {
      row(runtime::gpu_backend(), "none found (" + probe.error + ")");
      std::cout << "  This " << runtime::gpu_backend()
                << " build cannot run kernels on this machine: Kokkos cannot start a GPU build without its GPU,\n"
                   "  so `ptk op`, `ptk bench` and the tests exit 2 here. Use the cpu build (cmake --preset cpu).\n";
    }
    for (const auto& d : probe.devices) {
      row(std::string(runtime::gpu_backend()) + " " + std::to_string(d.id), d.name);
      row("  architecture", d.arch);
      row("  memory", gib(static_cast<double>(d.total_bytes)) + " total, " + gib(static_cast<double>(d.free_bytes)) + " free");
      row("  multiprocessors", std::to_string(d.multiprocessors));
    }
  }

  if (model_path) print_model_file(model, device, probe);
  else if (model_option->count() > 0) print_memory_estimates(model_shape, device, probe);

  if (verbose) {
    std::cout << "\nKokkos::print_configuration (verbose)\n";
    if (kokkos_started) Kokkos::print_configuration(std::cout, true);
    else std::cout << "  (not available: Kokkos was not started, see above)\n";
  }
  return 0;
}

}  // namespace ptk::tools
