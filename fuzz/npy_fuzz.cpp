// .npy files (io/npy.hpp): float arrays (f32, f16; bf16 when asked) and ids (int32, int64).
#include "fuzz_main.hpp"
#include "ptk/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ptk::fuzz::run(data, size, [](const std::string& bytes) {
    try {
      ptk::io::parse_npy(bytes, "fuzz.npy");
    } catch (const ptk::Error&) {
    }
    try {
      ptk::io::parse_npy(bytes, "fuzz.npy", ptk::io::NpyDtype::bf16);
    } catch (const ptk::Error&) {
    }
    ptk::io::parse_npy_ids(bytes, "fuzz.npy");
  });
}
