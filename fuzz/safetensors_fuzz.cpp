// safetensors files (io/safetensors.hpp): the header's JSON, the tensors' ranges, the CRC-32s. A file that parses is
// serialized again and must parse again to the same tensors.
#include "fuzz_main.hpp"
#include "ptk/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ptk::fuzz::run(data, size, [](const std::string& bytes) {
    const auto st = ptk::io::parse_safetensors(bytes, "fuzz.safetensors");
    const auto again = ptk::io::parse_safetensors(ptk::io::serialize_safetensors(st), "again.safetensors");
    if (again.tensors.size() != st.tensors.size()) std::abort();
  });
}
