// Determinism: the same batch gives bitwise identical results run after run, from one thread
// or split over 8 threads, and from 8 threads each doing the whole batch at once (float and
// double, both layouts, dense and compact tables).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <rope/rope.hpp>
#include <thread>
#include <vector>

namespace {

constexpr std::ptrdiff_t kTokens = 64, kHeads = 8, kDim = 128;

template <class T>
void check_deterministic(rope::layout l, rope::table_mode mode, std::int64_t length) {
  SCOPED_TRACE(std::string(sizeof(T) == 4 ? "float " : "double ") + rope::to_string(l) +
               (mode == rope::table_mode::dense ? " dense" : " compact"));
  const rope::spec s = rope::make_spec(kDim, kDim, 5e5, l);
  auto tab = rope::get_table<T>(s, length, mode);
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::vector<T> x(static_cast<std::size_t>(kTokens * kHeads * kDim));
  for (auto& e : x) e = static_cast<T>(dist(gen));
  std::vector<std::int64_t> pos(static_cast<std::size_t>(kTokens));
  for (auto& p : pos) p = static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(length));

  auto whole = [&](std::vector<T>& out) {
    return rope::apply<T>(*tab, rope::packed_heads<const T>(x.data(), kTokens, kHeads, kDim),
                          rope::packed_heads(out.data(), kTokens, kHeads, kDim), pos.data());
  };
  std::vector<T> ref(x.size()), again(x.size()), split(x.size());
  ASSERT_EQ(whole(ref), rope::status::ok);
  ASSERT_EQ(whole(again), rope::status::ok);
  EXPECT_EQ(0, std::memcmp(ref.data(), again.data(), ref.size() * sizeof(T)))
      << "second run differs";

  // 8 threads, each one slice of 8 tokens of the same output.
  std::vector<std::thread> pool;
  std::vector<rope::status> st(8);
  for (std::ptrdiff_t i = 0; i < 8; ++i)
    pool.emplace_back([&, i] {
      const std::ptrdiff_t t0 = i * (kTokens / 8);
      st[static_cast<std::size_t>(i)] = rope::apply<T>(
          *tab,
          rope::packed_heads<const T>(x.data() + t0 * kHeads * kDim, kTokens / 8, kHeads, kDim),
          rope::packed_heads(split.data() + t0 * kHeads * kDim, kTokens / 8, kHeads, kDim),
          pos.data() + t0);
    });
  for (auto& th : pool) th.join();
  for (auto v : st) EXPECT_EQ(v, rope::status::ok);
  EXPECT_EQ(0, std::memcmp(ref.data(), split.data(), ref.size() * sizeof(T)))
      << "split over 8 threads differs";

  // 8 threads, each the whole batch into its own buffer, concurrently.
  std::vector<std::vector<T>> outs(8, std::vector<T>(x.size()));
  pool.clear();
  for (std::size_t i = 0; i < 8; ++i) pool.emplace_back([&, i] { st[i] = whole(outs[i]); });
  for (auto& th : pool) th.join();
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(st[i], rope::status::ok);
    EXPECT_EQ(0, std::memcmp(ref.data(), outs[i].data(), ref.size() * sizeof(T))) << "thread " << i;
  }
}

TEST(Determinism, AcrossRunsAndThreadCounts) {
  for (rope::layout l : {rope::layout::half_split, rope::layout::interleaved}) {
    check_deterministic<float>(l, rope::table_mode::dense, 4096);
    check_deterministic<float>(l, rope::table_mode::compact, std::int64_t{1} << 22);
    check_deterministic<double>(l, rope::table_mode::dense, 4096);
    check_deterministic<double>(l, rope::table_mode::compact, std::int64_t{1} << 22);
  }
}

}  // namespace
