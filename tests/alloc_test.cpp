// No allocation and no lock in the hot path: this binary replaces the global operator new /
// delete and wraps malloc, calloc, realloc and pthread_mutex_lock (-Wl,--wrap, see
// tests/CMakeLists.txt) to count calls, and runs every hot-path entry point of rope.hpp
// (rope::apply and apply_qk, the slot, M-RoPE and XD-RoPE forms, rerotate and shift_positions;
// the Eigen overloads forward to them) between two readings of the counters. Positive controls
// (a table build, a cache lookup) prove the counters see what they should.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <rope/rope.hpp>
#include <vector>

namespace {
std::atomic<long> g_new{0}, g_malloc{0}, g_lock{0};
}  // namespace

extern "C" {
void* __real_malloc(std::size_t);
void* __real_calloc(std::size_t, std::size_t);
void* __real_realloc(void*, std::size_t);
int __real_pthread_mutex_lock(pthread_mutex_t*);

void* __wrap_malloc(std::size_t n) {
  g_malloc.fetch_add(1, std::memory_order_relaxed);
  return __real_malloc(n);
}
void* __wrap_calloc(std::size_t n, std::size_t m) {
  g_malloc.fetch_add(1, std::memory_order_relaxed);
  return __real_calloc(n, m);
}
void* __wrap_realloc(void* p, std::size_t n) {
  g_malloc.fetch_add(1, std::memory_order_relaxed);
  return __real_realloc(p, n);
}
int __wrap_pthread_mutex_lock(pthread_mutex_t* m) {
  g_lock.fetch_add(1, std::memory_order_relaxed);
  return __real_pthread_mutex_lock(m);
}
}

namespace {
[[noreturn]] void out_of_memory() {
#if ROPE_HAS_EXCEPTIONS
  throw std::bad_alloc();
#else
  std::abort();
#endif
}

void* counted_new(std::size_t n) {
  g_new.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  out_of_memory();
}
void* counted_new_aligned(std::size_t n, std::align_val_t a) {
  g_new.fetch_add(1, std::memory_order_relaxed);
  const std::size_t al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  out_of_memory();
}
}  // namespace

void* operator new(std::size_t n) {
  return counted_new(n);
}
void* operator new[](std::size_t n) {
  return counted_new(n);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_new_aligned(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_new_aligned(n, a);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace {

struct counts {
  long news, mallocs, locks;
};
counts now() {
  return {g_new.load(), g_malloc.load(), g_lock.load()};
}

template <class T>
void hot_calls(const rope::table<T>& tab, std::vector<T>& q, std::vector<T>& k, std::vector<T>& out,
               const std::vector<std::int32_t>& p32, const std::vector<std::int64_t>& p64,
               const std::vector<std::int64_t>& p_row, const rope::frequencies& from,
               const rope::frequencies& to, int& failures) {
  constexpr std::ptrdiff_t Tn = 8, Hq = 4, Hk = 2, D = 128;
  auto ok = [&](rope::status s) { failures += s != rope::status::ok; };
  for (rope::direction dir : {rope::direction::forward, rope::direction::inverse}) {
    ok(rope::apply<T>(tab, rope::packed_heads(q.data(), Tn, Hq, D), p32.data(), dir));
    ok(rope::apply<T>(tab, rope::packed_heads(q.data(), Tn, Hq, D), p64.data(), dir));
    ok(rope::apply<T, 128>(tab, rope::packed_heads(q.data(), Tn, Hq, D), p64.data(), dir));
    ok(rope::apply<T>(tab, rope::packed_heads<const T>(q.data(), Tn, Hq, D),
                      rope::packed_heads(out.data(), Tn, Hq, D), p64.data(), dir));
    ok(rope::apply_qk<T>(tab, rope::packed_heads(q.data(), Tn, Hq, D),
                         rope::packed_heads(k.data(), Tn, Hk, D), p32.data(), dir));
    ok(rope::apply_qk<T, 128>(tab, rope::packed_heads(q.data(), Tn, Hq, D),
                              rope::packed_heads(k.data(), Tn, Hk, D), p64.data(), dir));
    ok(rope::apply<T>(tab, rope::packed_heads(q.data(), Tn, Hq, D), p64.data(), dir,
                      rope::rounding::fast));
    ok(rope::apply<T>(tab, p64[3], q.data(), dir));
    ok(rope::apply<T>(tab, p64[5], q.data(), out.data(), D, dir));
    // Keys into cache slots (out as a cache of 16 slots of Hk heads), with q in the same call.
    const std::int64_t slots[Tn] = {3, 4, 5, -1, 9, 0, 15, 1};
    const auto cache = rope::packed_heads(out.data(), 16, Hk, D);
    ok(rope::apply_to_slots<T>(tab, rope::packed_heads<const T>(k.data(), Tn, Hk, D), cache,
                               p64.data(), slots, dir));
    ok(rope::apply_qk_to_slots<T>(tab, rope::packed_heads<const T>(q.data(), Tn, Hq, D),
                                  rope::packed_heads(q.data(), Tn, Hq, D),
                                  rope::packed_heads<const T>(k.data(), Tn, Hk, D), cache,
                                  p32.data(), slots, dir));
    // M-RoPE: text tokens (one stream three times) and image tokens (another height stream).
    const rope::mrope_sections sec{16, 24, 24, false};
    ok(rope::apply_mrope<T>(tab, sec, rope::packed_heads(q.data(), Tn, Hq, D), p64.data(),
                            p64.data(), p64.data(), dir));
    ok(rope::apply_mrope<T>(tab, sec, rope::packed_heads(q.data(), Tn, Hq, D), p64.data(),
                            p_row.data(), p64.data(), dir));
    ok(rope::apply_qk_mrope<T>(tab, sec, rope::packed_heads(q.data(), Tn, Hq, D),
                               rope::packed_heads(k.data(), Tn, Hk, D), p64.data(), p_row.data(),
                               p64.data(), dir));
    // Pair-by-pair orders build their stream map per call (ERNIE's / Bailing's alternation,
    // Qwen3-VL's interleaving), on the stack.
    for (const rope::mrope_sections& each : {rope::mrope_sections{8, 28, 28, false, true},
                                             rope::mrope_sections{22, 21, 21, true}})
      ok(rope::apply_mrope<T>(tab, each, rope::packed_heads(q.data(), Tn, Hq, D), p64.data(),
                              p_row.data(), p64.data(), dir));
    // XD-RoPE: four streams (sequence position, column, row, image index).
    const rope::xdrope_sections xsec{16, 16, 16, 16};
    ok(rope::apply_xdrope<T>(tab, xsec, rope::packed_heads<const T>(q.data(), Tn, Hq, D),
                             rope::packed_heads(out.data(), Tn, Hq, D), p64.data(), p_row.data(),
                             p64.data(), p_row.data(), dir));
    ok(rope::apply_qk_xdrope<T>(tab, xsec, rope::packed_heads(q.data(), Tn, Hq, D),
                                rope::packed_heads(k.data(), Tn, Hk, D), p64.data(), p_row.data(),
                                p_row.data(), p64.data(), dir));
  }
  // Cached keys moved to other frequencies, and shifted by a context shift (the angles are
  // computed per position, not read from a table).
  const rope::layout l = tab.layout();
  ok(rope::rerotate<T>(from, to, l, rope::packed_heads(k.data(), Tn, Hk, D), p64.data()));
  ok(rope::rerotate<T>(from, to, l, rope::packed_heads<const T>(k.data(), Tn, Hk, D),
                       rope::packed_heads(out.data(), Tn, Hk, D), p32.data()));
  ok(rope::shift_positions<T>(from, l, rope::packed_heads(k.data(), Tn, Hk, D), p64.data(), -3));
  ok(rope::shift_positions<T>(to, l, rope::packed_heads<const T>(k.data(), Tn, Hk, D),
                              rope::packed_heads(out.data(), Tn, Hk, D), p32.data(), 5));
  // Errors take no allocation or lock either.
  const std::int64_t bad = tab.length();
  failures += rope::apply<T>(tab, bad, q.data()) != rope::status::position_out_of_range;
  failures += rope::apply<T>(tab, rope::packed_heads(q.data(), Tn, Hq, D - 1), p64.data()) ==
              rope::status::ok;
}

template <class T>
void expect_no_alloc_no_lock(rope::layout l, rope::table_mode mode, std::int64_t length) {
  const rope::spec s = rope::make_spec(128, 128, 1e4, l);
  const counts before_table = now();
  auto tab = rope::get_table<T>(s, length, mode);
  const counts after_table = now();
  // Positive controls: the cache takes a lock and the table's rows are allocated.
  EXPECT_GT(after_table.locks, before_table.locks) << "lock counter does not see std::mutex";
  EXPECT_GT(after_table.news, before_table.news)
      << "operator new counter does not see the table build";
  // This file's operator new takes its memory from malloc, so the --wrap=malloc counter must
  // see the build too (without this, a link that lost the wrap would count 0 everywhere).
  EXPECT_GT(after_table.mallocs, before_table.mallocs)
      << "malloc counter (-Wl,--wrap=malloc) does not see the table build";

  std::vector<T> q(8 * 4 * 128), k(8 * 2 * 128), out(q.size());
  for (std::size_t i = 0; i < q.size(); ++i)
    q[i] = static_cast<T>(0.001 * static_cast<double>(i % 997) - 0.4);
  for (std::size_t i = 0; i < k.size(); ++i)
    k[i] = static_cast<T>(0.002 * static_cast<double>(i % 499) - 0.5);
  std::vector<std::int64_t> p64(8);
  std::vector<std::int32_t> p32(8);
  for (std::size_t t = 0; t < 8; ++t) {
    p64[t] = (length - 1) - static_cast<std::int64_t>(t) * (length / 9);
    p32[t] = static_cast<std::int32_t>(p64[t]);
  }
  const std::vector<std::int64_t> p_row = {7, 6, 5, 4, 3, 2, 1, 0};
  const rope::frequencies from = rope::default_frequencies(s);
  rope::frequencies to = from;  // a linear factor of 2
  for (double& w : to.inv_freq) w *= 0.5;
  int failures = 0;
  const counts before = now();
  hot_calls(*tab, q, k, out, p32, p64, p_row, from, to, failures);
  const counts after = now();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(after.news - before.news, 0) << "operator new in the hot path";
  EXPECT_EQ(after.mallocs - before.mallocs, 0) << "malloc in the hot path";
  EXPECT_EQ(after.locks - before.locks, 0) << "mutex lock in the hot path";
  std::printf(
      "%s %s %s: hot path calls made %ld operator new, %ld malloc, %ld mutex locks (table build: "
      "%ld new, %ld locks)\n",
      sizeof(T) == 4 ? "float" : "double", rope::to_string(l),
      tab->mode() == rope::table_mode::dense ? "dense" : "compact", after.news - before.news,
      after.mallocs - before.mallocs, after.locks - before.locks,
      after_table.news - before_table.news, after_table.locks - before_table.locks);
}

TEST(HotPathAllocations, NoneOnceTheTableExists) {
  for (rope::layout l : {rope::layout::half_split, rope::layout::interleaved}) {
    expect_no_alloc_no_lock<float>(l, rope::table_mode::dense, 4096);
    expect_no_alloc_no_lock<float>(l, rope::table_mode::compact, std::int64_t{1} << 20);
    expect_no_alloc_no_lock<double>(l, rope::table_mode::dense, 4096);
    expect_no_alloc_no_lock<double>(l, rope::table_mode::compact, std::int64_t{1} << 20);
  }
}

}  // namespace
