// Runs one ptk op (softmax) through an installed ptk and checks the result on the host, and encodes and decodes a
// text with a byte-level BPE tokenizer built in memory (ptk::text, which links PCRE2 and SentencePiece).
#include <ptk/core/runtime.hpp>
#include <ptk/ptk.hpp>
#include <ptk/text/byte_level_bpe.hpp>

#include <cstdio>
#include <vector>

#include "softmax_check.hpp"

int main(int argc, char** argv) {
  ptk::runtime::set_openmp_defaults();  // before Kokkos starts: no OMP_PROC_BIND warning
  if (const int status = ptk::runtime::check_can_initialize("ptk_consumer")) return status;
  Kokkos::ScopeGuard kokkos(argc, argv);

  using Space = Kokkos::DefaultExecutionSpace;
  const std::vector<float> x = {1, 2, 3, -1, 0, 1};
  const auto y = ptk::ops::softmax(ptk::Tensor<Space>::from_host({2, 3}, x)).to_vector();

  const int bad = softmax_mismatches("ptk_consumer", x, y, 2, 3);
  if (bad) return 1;
  std::printf("ptk_consumer: softmax through the installed ptk on %s: ok\n", Space::name());

  ptk::text::BpeSpec spec;  // the 256 byte tokens and one merge, "t" + "h"
  spec.origin = "in memory";
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(ptk::text::byte_alphabet()[b]);
  spec.tokens.push_back("th");
  spec.merges.emplace_back("t", "h");
  const ptk::text::ByteLevelBpe tokenizer(spec);
  const auto ids = tokenizer.encode("the th\xC3\xA9");
  if (ids.size() != 6 || ids[0] != 256 || tokenizer.decode(ids) != "the th\xC3\xA9") {
    std::printf("ptk_consumer: the tokenizer gave %zu ids\n", ids.size());
    return 1;
  }
  std::printf("ptk_consumer: byte-level BPE through the installed ptk::text: ok\n");
  return 0;
}
