// GGUF files (io/gguf.hpp). A file that parses is written again from its metadata and tensors, and the copy must
// parse to the same keys and tensors (the writer accepts whatever the reader accepted).
#include "fuzz_main.hpp"
#include "ptk/io/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ptk::fuzz::run(data, size, [](const std::string& bytes) {
    const auto g = ptk::io::parse_gguf(bytes, "fuzz.gguf");
    std::vector<ptk::io::GgufTensorData> tensors;
    for (const auto& t : g.tensors)
      tensors.push_back({t.name, t.shape, t.dtype, std::string_view(bytes).substr(t.offset, t.bytes)});
    const auto again = ptk::io::parse_gguf(ptk::io::serialize_gguf(g.metadata, tensors, g.alignment), "again.gguf");
    // general.alignment is written from the alignment (and left out at the default, 32): compare the other keys.
    const auto keys = [](const ptk::io::Gguf& f) {
      std::size_t n = 0;
      for (const auto& kv : f.metadata) n += kv.first != "general.alignment";
      return n;
    };
    if (keys(again) != keys(g) || again.alignment != g.alignment || again.tensors.size() != g.tensors.size()) std::abort();
    for (std::size_t i = 0; i < g.tensors.size(); ++i)
      if (again.tensors[i].shape != g.tensors[i].shape || again.tensors[i].dtype != g.tensors[i].dtype) std::abort();
  });
}
