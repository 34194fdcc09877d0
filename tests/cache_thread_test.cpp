// The shared table cache under many threads: each key built once, outputs bitwise equal to
// the single-threaded ones, and a table that grows never moves under a reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <rope/rope.hpp>
#include <thread>
#include <vector>

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

struct key_case {
  rope::spec spec;
  bool use_double;
  rope::table_mode mode;
  rope::scaling scaling;     // none, or a method whose parameters are part of the key
  std::int64_t seq_len;      // for the sequence-length dependent methods
};

// 10 keys, each differing from another in exactly one parameter: base (1), rotary_dim (2),
// layout (3), table type (4), a scaling parameter (YaRN beta_fast 32 vs 33: 5, 6), the sequence
// length of dynamic NTK (2000 vs 3000, both past M = 1024: 7, 8) and the table mode (9).
// (Growth of one key: GrowingTableNeverMovesUnderReaders.)
std::vector<key_case> keys() {
  const rope::spec a = rope::make_spec(64, 64, 1e4, rope::layout::half_split);
  std::vector<key_case> k(10, key_case{a, false, rope::table_mode::automatic, rope::scaling{}, 0});
  k[1].spec.base = 5e5;
  k[2].spec.rotary_dim = 32;
  k[3].spec.layout = rope::layout::interleaved;
  k[4].use_double = true;
  k[5].scaling = rope::scaling::yarn_scaling(4.0, 512);
  k[6].scaling = rope::scaling::yarn_scaling(4.0, 512);
  k[6].scaling.beta_fast = 33.0;
  k[7].scaling = rope::scaling::dynamic_ntk(2.0, 1024);
  k[7].seq_len = 2000;
  k[8].scaling = rope::scaling::dynamic_ntk(2.0, 1024);
  k[8].seq_len = 3000;
  k[9].mode = rope::table_mode::compact;
  return k;
}

rope::frequencies freqs(const key_case& k) {
  return rope::compute_frequencies(k.spec, k.scaling, k.seq_len).frequencies;
}

constexpr std::int64_t kLen = 2048;

// One get-or-create + apply; an error status gives an empty result (a mismatch). The
// frequencies are computed once per key by the caller: the cache lookup is what is under test.
std::vector<double> run_once(rope::table_cache& cache, const key_case& k, const rope::frequencies& f,
                             std::int64_t p) {
  std::vector<double> out(64);
  for (std::size_t i = 0; i < 64; ++i) out[i] = 0.01 * static_cast<double>(i) - 0.3;
  if (k.use_double) {
    auto t = cache.get<double>(f, k.spec.layout, kLen, k.mode);
    if (rope::apply<double>(*t, p, out.data()) != rope::status::ok) return {};
  } else {
    std::vector<float> x(out.begin(), out.end());
    auto t = cache.get<float>(f, k.spec.layout, kLen, k.mode);
    if (rope::apply<float>(*t, p, x.data()) != rope::status::ok) return {};
    out.assign(x.begin(), x.end());
  }
  return out;
}

TEST(CacheThreads, SixteenThreadsEachKeyBuiltOnceOutputsBitwiseEqual) {
  const auto ks = keys();
  std::vector<rope::frequencies> fs;
  for (const auto& k : ks) fs.push_back(freqs(k));
  std::vector<std::vector<std::vector<double>>> expected(ks.size());
  {
    rope::table_cache single;
    for (std::size_t i = 0; i < ks.size(); ++i)
      for (std::int64_t p = 0; p < 16; ++p) {
        expected[i].push_back(run_once(single, ks[i], fs[i], p * 127));
        ASSERT_EQ(expected[i].back().size(), 64u);
      }
  }
  rope::table_cache shared;
  const int threads = env_int("ROPE_STRESS_THREADS", 16);
  const int iters = env_int("ROPE_STRESS_ITERS", 3000);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < iters; ++i) {
        const std::size_t key = static_cast<std::size_t>(t + i) % ks.size();
        const std::int64_t p = (t * 7 + i) % 16;
        if (run_once(shared, ks[key], fs[key], p * 127) != expected[key][static_cast<std::size_t>(p)]) ++mismatches;
      }
    });
  for (auto& th : pool) th.join();
  std::printf("cache_thread: %d threads x %d iterations (get-or-create + apply) over %zu keys: %llu builds, %d mismatches\n",
              threads, iters, ks.size(), static_cast<unsigned long long>(shared.builds()), mismatches.load());
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(shared.builds(), ks.size()) << "each key is built exactly once";
  EXPECT_EQ(shared.size(), ks.size());
}

// The same traffic with a byte bound that holds about two of the keys' tables: keys are dropped
// and built again while other threads hold and use their old handles. Every output is still
// the single-threaded one, and once the threads are done the cache holds no more than the
// bound plus the table requested last. (Fewer iterations: most requests build.)
TEST(CacheThreads, BoundedCacheDropsAndRebuildsUnderLoad) {
  const auto ks = keys();
  std::vector<rope::frequencies> fs;
  for (const auto& k : ks) fs.push_back(freqs(k));
  std::vector<std::vector<std::vector<double>>> expected(ks.size());
  std::size_t all = 0, biggest = 0;
  {
    rope::table_cache single;
    for (std::size_t i = 0; i < ks.size(); ++i) {
      for (std::int64_t p = 0; p < 16; ++p)
        expected[i].push_back(run_once(single, ks[i], fs[i], p * 127));
      ASSERT_EQ(expected[i].back().size(), 64u);
      const std::size_t b =
          ks[i].use_double ? single.get<double>(fs[i], ks[i].spec.layout, kLen, ks[i].mode)->bytes()
                           : single.get<float>(fs[i], ks[i].spec.layout, kLen, ks[i].mode)->bytes();
      biggest = std::max(biggest, b);
    }
    all = single.bytes();
  }
  rope::table_cache shared;
  const std::size_t bound = all / 5;
  shared.set_max_bytes(bound);
  const int threads = env_int("ROPE_STRESS_THREADS", 16);
  const int iters = std::min(env_int("ROPE_STRESS_ITERS", 3000), 300);
  std::atomic<int> mismatches{0};
  std::atomic<std::size_t> most{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < iters; ++i) {
        const std::size_t key = static_cast<std::size_t>(t * 3 + i) % ks.size();
        const std::int64_t p = (t * 7 + i) % 16;
        if (run_once(shared, ks[key], fs[key], p * 127) !=
            expected[key][static_cast<std::size_t>(p)])
          ++mismatches;
        std::size_t b = shared.bytes(), m = most.load();
        while (b > m && !most.compare_exchange_weak(m, b)) {
        }
      }
    });
  for (auto& th : pool) th.join();
  std::printf(
      "cache_thread (bound %zu of %zu bytes): %d threads x %d iterations over %zu keys: %llu "
      "builds, %llu evictions, most held %zu bytes, %d mismatches\n",
      bound, all, threads, iters, ks.size(), static_cast<unsigned long long>(shared.builds()),
      static_cast<unsigned long long>(shared.evictions()), most.load(), mismatches.load());
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(shared.evictions(), 0u);
  // While requests are in flight their keys are kept; once none is, at most one table (the one
  // requested last) is past the bound.
  EXPECT_LE(shared.bytes(), bound + biggest);
  EXPECT_LE(most.load(), all);
}

TEST(CacheThreads, GrowingTableNeverMovesUnderReaders) {
  rope::table_cache cache;
  const rope::spec sp = rope::make_spec(32, 32, 1e4, rope::layout::interleaved);
  auto first = cache.get<float>(sp, 64);
  const std::vector<float> row(first->row(63, nullptr), first->row(63, nullptr) + 2 * first->row_width());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 8; ++r)
    readers.emplace_back([&] {
      while (!stop.load()) {
        auto held = cache.get<float>(sp, 64);  // whatever is current: at least 64 long
        if (std::memcmp(held->row(63, nullptr), row.data(), row.size() * sizeof(float)) != 0) ++bad;
        if (std::memcmp(first->row(63, nullptr), row.data(), row.size() * sizeof(float)) != 0) ++bad;
      }
    });
  for (std::int64_t n = 128; n <= (1 << 16); n *= 2) (void)cache.get<float>(sp, n);
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(first->length(), 64);
}

}  // namespace
