// The same softmax through ptk::runtime (ptk/rt/backend.hpp): no Kokkos in this program, and no build for one
// backend. The backend is chosen when it runs (PTK_BACKEND, else auto: a GPU when one works, else the CPU), so the
// same binary runs on a CPU-only machine and on a GPU machine whose install has the GPU's module.
#include <ptk/rt/backend.hpp>

#include <cstdio>
#include <vector>

#include "softmax_check.hpp"

int main() {
  try {
    const auto backend = ptk::rt::Backend::open();
    std::printf("ptk_consumer_rt: %s\n", backend.choice().c_str());
    const std::vector<float> x = {1, 2, 3, -1, 0, 1};
    const auto y = backend.run("softmax", {ptk::rt::Tensor::floats({2, 3}, x)})[0].values;
    if (softmax_mismatches("ptk_consumer_rt", x, y, 2, 3) > 0) return 1;
    std::printf("ptk_consumer_rt: softmax on the %s backend, chosen at run time: ok\n", backend.name().c_str());
    return 0;
  } catch (const ptk::rt::Error& e) {  // no backend can run here, or the op refused its input
    std::fprintf(stderr, "ptk_consumer_rt: %s\n", e.what());
    return e.status();
  }
}
