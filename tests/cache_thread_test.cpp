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

#include "isa_expectation.hpp"

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

// The keys, their frequencies, and each key's outputs at positions 0, 127, ..., 15 * 127 from
// one thread (the reference for the threaded runs).
struct traffic {
  std::vector<key_case> ks = keys();
  std::vector<rope::frequencies> fs;
  std::vector<std::vector<std::vector<double>>> expected;
};

void single_threaded(rope::table_cache& single, traffic& tr) {
  for (const auto& k : tr.ks) tr.fs.push_back(freqs(k));
  tr.expected.resize(tr.ks.size());
  for (std::size_t i = 0; i < tr.ks.size(); ++i)
    for (std::int64_t p = 0; p < 16; ++p) {
      tr.expected[i].push_back(run_once(single, tr.ks[i], tr.fs[i], p * 127));
      ASSERT_EQ(tr.expected[i].back().size(), 64u);
    }
}

// `threads` threads x `iters` get-or-create + apply on `shared`, thread t at iteration i asking
// for key (t * key_step + i) mod keys; after_each() runs after every call. Returns the number of
// outputs that differ from the single-threaded ones.
template <class F>
int hammer(rope::table_cache& shared, const traffic& tr, int threads, int iters,
           std::size_t key_step, F after_each) {
  std::atomic<int> mismatches{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < iters; ++i) {
        const std::size_t key =
            (static_cast<std::size_t>(t) * key_step + static_cast<std::size_t>(i)) % tr.ks.size();
        const std::int64_t p = (t * 7 + i) % 16;
        if (run_once(shared, tr.ks[key], tr.fs[key], p * 127) !=
            tr.expected[key][static_cast<std::size_t>(p)])
          ++mismatches;
        after_each();
      }
    });
  for (auto& th : pool) th.join();
  return mismatches.load();
}

TEST(CacheThreads, SixteenThreadsEachKeyBuiltOnceOutputsBitwiseEqual) {
  traffic tr;
  {
    rope::table_cache single;
    single_threaded(single, tr);
    if (::testing::Test::HasFatalFailure()) return;
  }
  rope::table_cache shared;
  const int threads = env_int("ROPE_STRESS_THREADS", 16);
  const int iters = env_int("ROPE_STRESS_ITERS", 3000);
  const int mismatches = hammer(shared, tr, threads, iters, 1, [] {});
  std::printf(
      "cache_thread: %d threads x %d iterations (get-or-create + apply) over %zu keys: %llu "
      "builds, %d mismatches\n",
      threads, iters, tr.ks.size(), static_cast<unsigned long long>(shared.builds()), mismatches);
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(shared.builds(), tr.ks.size()) << "each key is built exactly once";
  EXPECT_EQ(shared.size(), tr.ks.size());
}

// The same traffic with a byte bound that holds about two of the keys' tables: keys are dropped
// and built again while other threads hold and use their old handles. Every output is still
// the single-threaded one, and once the threads are done the cache holds no more than the
// bound plus the table requested last. (Fewer iterations: most requests build.)
TEST(CacheThreads, BoundedCacheDropsAndRebuildsUnderLoad) {
  traffic tr;
  std::size_t all = 0, biggest = 0;
  {
    rope::table_cache single;
    single_threaded(single, tr);
    if (::testing::Test::HasFatalFailure()) return;
    for (std::size_t i = 0; i < tr.ks.size(); ++i) {
      const key_case& k = tr.ks[i];
      biggest = std::max(biggest,
                         k.use_double
                             ? single.get<double>(tr.fs[i], k.spec.layout, kLen, k.mode)->bytes()
                             : single.get<float>(tr.fs[i], k.spec.layout, kLen, k.mode)->bytes());
    }
    all = single.bytes();
  }
  rope::table_cache shared;
  const std::size_t bound = all / 5;
  shared.set_max_bytes(bound);
  const int threads = env_int("ROPE_STRESS_THREADS", 16);
  const int iters = std::min(env_int("ROPE_STRESS_ITERS", 3000), 300);
  std::atomic<std::size_t> most{0};
  const int mismatches = hammer(shared, tr, threads, iters, 3, [&] {
    std::size_t b = shared.bytes(), m = most.load();
    while (b > m && !most.compare_exchange_weak(m, b)) {
    }
  });
  std::printf(
      "cache_thread (bound %zu of %zu bytes): %d threads x %d iterations over %zu keys: %llu "
      "builds, %llu evictions, most held %zu bytes, %d mismatches\n",
      bound, all, threads, iters, tr.ks.size(), static_cast<unsigned long long>(shared.builds()),
      static_cast<unsigned long long>(shared.evictions()), most.load(), mismatches);
  EXPECT_EQ(mismatches, 0);
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
  std::atomic<int> bad{0}, started{0};
  std::atomic<long> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 8; ++r)
    readers.emplace_back([&] {
      ++started;
      do {  // at least one read each, even if the growth below is over first
        auto held = cache.get<float>(sp, 64);  // whatever is current: at least 64 long
        if (std::memcmp(held->row(63, nullptr), row.data(), row.size() * sizeof(float)) != 0) ++bad;
        if (std::memcmp(first->row(63, nullptr), row.data(), row.size() * sizeof(float)) != 0) ++bad;
        ++reads;
      } while (!stop.load());
    });
  while (started.load() < 8) std::this_thread::yield();  // the growth starts under readers
  for (std::int64_t n = 128; n <= (1 << 16); n *= 2) (void)cache.get<float>(sp, n);
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(reads.load(), 8);
  EXPECT_EQ(first->length(), 64);
  EXPECT_GE(cache.get<float>(sp, 64)->length(), 1 << 16) << "the table did grow";
  std::printf("cache_thread growth: %ld reads by 8 threads while the table grew to %lld\n",
              reads.load(), static_cast<long long>(cache.get<float>(sp, 64)->length()));
}

// The process's first rope::apply calls, from 16 threads released together. With runtime
// dispatch (the tsan preset) they race to probe the CPU and publish the path (rope/isa.hpp's
// one-byte atomic): every thread must run on one path, the one rope::active_isa() reports
// afterwards, and give the output of a call made after they are done (ctest runs each test in
// its own process, so these are the first calls; run alone in one process with the others,
// the probe has happened before and the test checks only the outputs).
TEST(DispatchThreads, FirstCallsFromSixteenThreadsAgreeOnOnePath) {
  constexpr int kThreads = 16;
  constexpr std::size_t kDim = 128;
  const rope::spec s = rope::make_spec(kDim, kDim, 1e4, rope::layout::half_split);
  rope::table_cache cache;
  auto tab = cache.get<float>(s, 4096);
  std::vector<float> in(kDim);
  for (std::size_t i = 0; i < kDim; ++i) in[i] = 0.02f * static_cast<float>(i) - 1.0f;
  std::vector<std::vector<float>> outs(kThreads, in);
  std::vector<rope::isa> seen(kThreads);
  std::vector<rope::status> st(kThreads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      const auto i = static_cast<std::size_t>(t);
      ++ready;
      while (!go.load()) {
      }
      st[i] = rope::apply<float>(*tab, 1000 + t, outs[i].data());
      seen[i] = rope::active_isa();
    });
  while (ready.load() < kThreads) {
  }
  go = true;
  for (auto& th : pool) th.join();
  for (int t = 0; t < kThreads; ++t) {
    const auto i = static_cast<std::size_t>(t);
    EXPECT_EQ(st[i], rope::status::ok) << "thread " << t;
    EXPECT_EQ(seen[i], rope::active_isa()) << "thread " << t;
    std::vector<float> after = in;
    ASSERT_EQ(rope::apply<float>(*tab, 1000 + t, after.data()), rope::status::ok);
    EXPECT_EQ(0, std::memcmp(after.data(), outs[i].data(), kDim * sizeof(float))) << "thread " << t;
    EXPECT_NE(0, std::memcmp(in.data(), outs[i].data(), kDim * sizeof(float))) << "not rotated";
  }
  std::printf("dispatch_threads: %d first calls ran on %s\n", kThreads,
              rope::to_string(rope::active_isa()));
}

// rope::force_isa while other threads run rope::apply: documented as no data race (the path is
// a one-byte atomic); every path gives the same bits, so each output must still equal the one
// computed before. One thread switches 2000 times between the paths this CPU and build can
// run while four apply, each at least 100 times. (Whether two first calls meet inside the probe above is up to the
// scheduler; here the store and the loads meet on every run.)
TEST(DispatchThreads, ForcingThePathWhileOthersApplyKeepsEveryOutput) {
  constexpr std::size_t kDim = 80;
  const rope::spec s = rope::make_spec(kDim, kDim, 5e5, rope::layout::interleaved);
  rope::table_cache cache;
  auto tab = cache.get<float>(s, 4096);
  std::vector<float> in(kDim), expected(kDim);
  for (std::size_t i = 0; i < kDim; ++i) in[i] = 0.5f - 0.013f * static_cast<float>(i);
  expected = in;
  ASSERT_EQ(rope::apply<float>(*tab, 3000, expected.data()), rope::status::ok);
  const rope::isa original = rope::active_isa();
  std::vector<rope::isa> paths;
  for (rope::isa i : {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512, rope::isa::neon}) {
    if (rope::force_isa(i)) {
      paths.push_back(i);
    } else {
#if defined(ROPE_RUNTIME_DISPATCH)  // a compile-time build runs its one path only
      EXPECT_FALSE(rope_test::isa_expected(i))
          << "force_isa refused " << rope::to_string(i) << ", which ROPE_EXPECT_ISA names";
#endif
    }
  }
  ASSERT_TRUE(rope::force_isa(original));
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, applies{0}, switches{0};
  std::thread switcher([&] {
    for (std::size_t n = 0; n < 2000; ++n) {
      if (rope::force_isa(paths[n % paths.size()])) ++switches;
      std::this_thread::yield();
    }
    stop = true;
  });
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&] {
      std::vector<float> x(kDim);
      for (int n = 0; n < 100 || !stop.load(); ++n) {
        x = in;
        if (rope::apply<float>(*tab, 3000, x.data()) != rope::status::ok ||
            std::memcmp(x.data(), expected.data(), kDim * sizeof(float)) != 0)
          ++bad;
        ++applies;
      }
    });
  switcher.join();
  for (auto& th : pool) th.join();
  EXPECT_TRUE(rope::force_isa(original));
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(switches.load(), 2000);
  std::printf("dispatch_threads: %zu paths, %d switches during %d applies on 4 threads, %d "
              "mismatches\n",
              paths.size(), switches.load(), applies.load(), bad.load());
}

}  // namespace
