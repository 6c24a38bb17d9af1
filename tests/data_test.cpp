// Byte-level data: vocabulary, split, seeded training batches and validation windows.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "ptk/nn/data.hpp"

namespace {

using ptk::nn::Dataset;
using ptk::nn::Vocab;

TEST(Data, VocabIsSortedDistinctBytes) {
  const auto v = Vocab::from_text("hello, world\n\xff");
  EXPECT_EQ(v.bytes(), std::string("\n ,dehlorw\xff"));
  EXPECT_EQ(v.size(), 11);
  EXPECT_EQ(v.id('\n'), 0);
  EXPECT_EQ(v.id('w'), 9);
  EXPECT_EQ(v.id(0xff), 10);
  EXPECT_EQ(v.decode(v.encode("hello")), "hello");
  EXPECT_EQ(Vocab::from_bytes(v.bytes()).encode("world"), v.encode("world"));
  EXPECT_THROW(v.id('z'), ptk::Error);
  EXPECT_THROW(v.byte(11), ptk::Error);
  EXPECT_THROW(Vocab::from_bytes("ba"), ptk::Error);
}

TEST(Data, SplitsNinetyTen) {
  std::string text;
  for (int i = 0; i < 1003; ++i) text += static_cast<char>('a' + i % 7);
  const auto d = Dataset::from_text(text);
  EXPECT_EQ(d.train.size(), 902u);  // floor(0.9 * 1003)
  EXPECT_EQ(d.val.size(), 101u);
  EXPECT_EQ(d.vocab.decode(d.train) + d.vocab.decode(d.val), text);
}

TEST(Data, SeededBatchesAreReproducibleAndInRange) {
  std::vector<int> tokens(50);
  for (int i = 0; i < 50; ++i) tokens[static_cast<std::size_t>(i)] = i;
  ptk::nn::BatchSampler a(tokens, 4, 8, 1234), b(tokens, 4, 8, 1234), c(tokens, 4, 8, 99);
  std::set<std::int64_t> seen;
  bool differs = false;
  for (int step = 0; step < 200; ++step) {
    const auto sa = a.next_starts(), sb = b.next_starts(), sc = c.next_starts();
    EXPECT_EQ(sa, sb);
    differs |= sa != sc;
    for (auto s : sa) {
      EXPECT_GE(s, 0);
      EXPECT_LE(s, 50 - 9);
      seen.insert(s);
    }
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(seen.size(), 42u);  // every start in [0, 41] drawn in 800 draws
  const auto batch = ptk::nn::make_batch(tokens, {3, 41}, 8);
  EXPECT_EQ(batch.B, 2);
  EXPECT_EQ(batch.inputs[0], 3);
  EXPECT_EQ(batch.targets[0], 4);
  EXPECT_EQ(batch.inputs[15], 48);
  EXPECT_EQ(batch.targets[15], 49);
}

TEST(Data, SamplerDrawsFromTheStandardMersenneTwister) {
  // The first start is the engine's first output modulo the span (1000 choices): the output of
  // std::mt19937_64 is fixed by the standard, and rejection happens with probability ~1e-16 here.
  std::vector<int> tokens(1001);
  ptk::nn::BatchSampler s(tokens, 1, 1, 5489u);
  std::mt19937_64 ref(5489u);
  EXPECT_EQ(s.next_starts()[0], static_cast<std::int64_t>(ref() % 1000));
}

// A sampler's state is (seed, draws): rebuilt from them, it continues the same sequence (a resumed run).
TEST(Data, SamplerResumesFromItsDrawCount) {
  std::vector<int> tokens(1000);
  ptk::nn::BatchSampler a(tokens, 3, 16, 77);
  for (int i = 0; i < 5; ++i) a.next_starts();
  EXPECT_EQ(a.draws(), 15u);
  ptk::nn::BatchSampler b(tokens, 3, 16, 77, a.draws());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.next_starts(), b.next_starts()) << "batch " << i;
  EXPECT_EQ(a.draws(), b.draws());
}

TEST(Data, ReadsATextUpToALimit) {
  const std::string path = testing::TempDir() + "ptk_data_limit.txt";
  std::ofstream(path) << std::string(3000, 'x');
  EXPECT_EQ(Dataset::read_text(path, 3000).size(), 3000u);
  try {
    Dataset::read_text(path, 2999);
    FAIL() << "no error";
  } catch (const ptk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is larger than the limit of 2999 bytes"), std::string::npos) << e.what();
  }
  try {  // endless: stops at the limit
    Dataset::read_text("/dev/zero", 5000000);
    FAIL() << "no error";
  } catch (const ptk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/zero is larger than the limit"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(Data, ValidationWindowsAreConsecutiveAndDropTheTail) {
  std::vector<int> tokens(30);
  for (int i = 0; i < 30; ++i) tokens[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(ptk::nn::validation_starts(tokens, 6), (std::vector<std::int64_t>{0, 7, 14, 21}));  // 28, 29 dropped
  const auto batches = ptk::nn::validation_batches(tokens, 3, 6);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].B, 3);
  EXPECT_EQ(batches[1].B, 1);
  EXPECT_EQ(batches[1].inputs.front(), 21);
  EXPECT_EQ(batches[1].targets.back(), 27);
  EXPECT_TRUE(ptk::nn::validation_starts(tokens, 30).empty());
}

TEST(Data, ErrorsNameTheProblem) {
  std::vector<int> tokens(5);
  try {
    ptk::nn::BatchSampler(tokens, 2, 5, 1);
    FAIL() << "no error";
  } catch (const ptk::Error& e) {
    EXPECT_STREQ(e.what(), "data: 5 training tokens cannot fill one window of T + 1 = 6");
  }
  EXPECT_THROW(Dataset::from_file("/nonexistent/text"), ptk::Error);
}

TEST(Data, TheDefaultTextLoads) {
  const auto d = Dataset::from_file(PTK_SOURCE_DIR "/data/kjv_genesis_exodus.txt");
  EXPECT_EQ(d.vocab.size(), 72);
  EXPECT_EQ(d.train.size() + d.val.size(), 380226u);
  EXPECT_EQ(d.vocab.decode(std::vector<int>(d.train.begin() + 1, d.train.begin() + 8)), "Genesis");
}

}  // namespace
