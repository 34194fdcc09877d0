// tests/guard_page_test.cpp: no path reads or writes outside the caller's rows (tails use masked
// or partial loads and stores). The rows are placed so that each ends exactly at a PROT_NONE page
// or starts right after one (and, packed [T, H, D], so that the block does), with mmap and
// mprotect: a read past a row's end (or before its start) is a SIGSEGV and the test binary dies.
// Each case compares every output element bitwise with the scalar path run on a heap copy, checks
// that an out-of-place input is unchanged and that 64 canary bytes on the readable side of each
// row are too (a write past a row's end reaches the guard page, a write before its start the
// canary, or the other way round).
//
// Per path (GuardPageScalar, GuardPageAvx2, GuardPageAvx512, GuardPageNeon; a path this CPU or
// build lacks is skipped), its kernels called directly as simd_equivalence.hpp does:
//  - CompileTimeDims: the dims of the path's list (avx512_dims, avx2_dims, neon_dims: each way
//    a row meets the path's vectors; scalar_dims: 18), head_dim = Dim and Dim + 6 (partial
//    rotary: the last 6 copied out of place, untouched in place); six storage pairs with one
//    rounding each (check_types, roundings); inverse at 18 only (both_directions);
//  - RuntimeDims: Dim = rope::dynamic, every head dim of shared/testing.md with rotary dims
//    head_dim, head_dim / 2 (even) and head_dim - 2; every storage pair of the vector paths
//    (float, fp16, bf16 in any combination; double -> double), both roundings where they differ
//    (a float result stored as fp16 or bf16), forward and inverse.
// GuardPage.PublicApplyOnActivePath runs rope::apply (validation, then dispatch: compile-time,
// or runtime and ROPE_FORCE_ISA in the baseline build; rope::dynamic through ROPE_DYNAMIC_DIMS)
// on the runtime dims. Every case: both layouts, out of place (six placements of input and
// output, which run the x86 kernels both forwards and backwards, see aliasing_back) and in place
// (four placements), 2 tokens x 3 heads at random positions.
//
// ROPE_TEST_FEW_DIMS builds (clang-werror, asan, tsan, noexcept, aarch64, baseline) define ROPE_DYNAMIC_DIMS on the
// command line (tests/CMakeLists.txt); that is how this file tells, before rope defines it.
#if defined(ROPE_TEST_FEW_DIMS) || defined(ROPE_DYNAMIC_DIMS)
#define ROPE_GUARD_FEW_DIMS 1
#else
#define ROPE_GUARD_FEW_DIMS 0
#endif

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <rope/rope.hpp>

#include "simd_equivalence.hpp"  // rope_test::random_value, rope_test::kHeadDims

#if defined(__unix__) || defined(__APPLE__)
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(MAP_ANONYMOUS)
#define ROPE_GUARD_PAGES 1
#endif
#endif
#ifndef ROPE_GUARD_PAGES
#define ROPE_GUARD_PAGES 0
#endif

namespace {

constexpr std::size_t kTokens = 2, kHeads = 3, kRows = kTokens * kHeads;
constexpr std::int64_t kPositions = 64;
constexpr unsigned char kCanary = 0x5A;
constexpr std::size_t kWindow = 64;            // canary bytes beside a row
constexpr std::size_t kMaxRowBytes = 512 * 8;  // head_dim 512 of double

template <std::size_t... Dims>
struct dim_list {};
// The compile-time dims of each path. AVX2 and AVX-512: for float and double rows (16-bit rows
// compute in float), each way a row half (interleaved: the row) of width W meets the path's
// N-lane vectors (kernel_body.inc, row_vectors), after no whole vector, one or several: a
// masked vector (W < N), none (whole vectors), half a vector (AVX-512), or a last vector
// shifted back over the one before it; groups of 4 (8 or more vectors); for bf16 rows in
// even/odd pairs (use_pairs), whole pairs then nothing, a vector, a half-width one or both; and
// out of place, bf16 half-split rows of more than 4 vectors not in pairs (130: a pass per
// half). Each dim of a list is the only one there for at least one of these (D = 8 and 16
// for a half vector alone, 24 after one vector, 112 for pairs then both); the equivalence
// tests' finer cases (a half vector after groups, say) repeat one of them here. NEON runs a
// row as whole vectors and then element by element: rows shorter than, equal to and longer
// than its vectors, with and without the element tail. Each list has 18, for a compile-time
// inverse. ROPE_TEST_FEW_DIMS builds (clang-werror, asan, tsan, noexcept, baseline) run two
// dims on x86 (with ASan, 4 dims took 2 minutes to compile), which the full build
// (scripts/test.sh: both x86 paths' kernels) backs; NEON keeps its full list, as its only build (aarch64) is a few-dims one.
#if ROPE_GUARD_FEW_DIMS
using avx512_dims = dim_list<6, 18>;
using avx2_dims = dim_list<6, 18>;
#else
using avx512_dims = dim_list<6, 8, 10, 16, 18, 24, 32, 34, 80, 112, 130, 160, 256>;
using avx2_dims = dim_list<2, 6, 8, 10, 16, 18, 80, 130, 256>;
#endif
using neon_dims = dim_list<2, 6, 8, 10, 16, 18, 34, 130, 256>;
// The scalar path: one dim, 18. Its kernels are loops over the row's elements (arch/scalar.hpp)
// with nothing to read past, and its compile-time instances cost as much to compile as a
// vector path's.
using scalar_dims = dim_list<18>;

#if ROPE_GUARD_PAGES
// What the current case is, for the failure messages and the fault handler.
char g_case[384];

std::size_t page_size() {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<std::size_t>(p) : 4096;
}

// [guard][k data pages][guard][k data pages] ... [guard]: `segments` stretches of k readable
// pages (k holding bytes_per_segment), each between two PROT_NONE pages.
class fenced_region {
 public:
  fenced_region(std::size_t segments, std::size_t bytes_per_segment)
      : pg_(page_size()),
        k_((bytes_per_segment + pg_ - 1) / pg_),
        size_((segments * (k_ + 1) + 1) * pg_) {
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<unsigned char*>(p);
    ok_ = true;
    for (std::size_t s = 0; s <= segments; ++s)
      ok_ = ok_ && mprotect(base_ + s * (k_ + 1) * pg_, pg_, PROT_NONE) == 0;
  }
  fenced_region(const fenced_region&) = delete;
  fenced_region& operator=(const fenced_region&) = delete;
  ~fenced_region() {
    if (base_ != nullptr) munmap(base_, size_);
  }
  bool ok() const { return ok_; }
  /// The first byte of segment s (right after a guard page).
  unsigned char* begin(std::size_t s) const { return base_ + (s * (k_ + 1) + 1) * pg_; }
  /// One past segment s's last byte: the next guard page.
  unsigned char* end(std::size_t s) const { return begin(s) + k_ * pg_; }
  /// Bytes from one segment to the next.
  std::size_t period() const { return (k_ + 1) * pg_; }

 private:
  std::size_t pg_, k_, size_;
  unsigned char* base_ = nullptr;
  bool ok_ = false;
};

// One buffer's places: a segment per row (rows_*) and one for a packed block (block_*).
struct arenas {
  fenced_region rows{kRows, kMaxRowBytes + kWindow};
  fenced_region block{1, kRows * kMaxRowBytes + kWindow};
  bool ok() const { return rows.ok() && block.ok(); }
};

// A signal handler that names the case a fault happened in, then hands the fault back to the
// previous handler (the default one, or a sanitizer's) by returning into the faulting access.
// SIGSEGV, and SIGBUS, which some systems (macOS) raise for a PROT_NONE page.
struct sigaction g_previous_segv, g_previous_bus;

void write_str(const char* s) {
  if (write(2, s, std::strlen(s)) < 0) {
  }
}

void on_fault(int sig, siginfo_t* info, void*) {
  char addr[2 + 16 + 2] = "0x";
  auto a = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (int i = 15; i >= 0; --i, a >>= 4) addr[2 + i] = "0123456789abcdef"[a & 15u];
  addr[18] = '\n';
  addr[19] = '\0';
  write_str(sig == SIGBUS ? "guard_page_test: SIGBUS" : "guard_page_test: SIGSEGV");
  write_str(" (an access outside the rows?) in case: ");
  write_str(g_case);
  write_str("\n  at address ");
  write_str(addr);
  sigaction(sig, sig == SIGBUS ? &g_previous_bus : &g_previous_segv, nullptr);
}

// Installs on_fault for one test's lifetime.
class fault_reporter {
 public:
  fault_reporter() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    installed_segv_ = sigaction(SIGSEGV, &sa, &g_previous_segv) == 0;
    installed_bus_ = sigaction(SIGBUS, &sa, &g_previous_bus) == 0;
  }
  fault_reporter(const fault_reporter&) = delete;
  fault_reporter& operator=(const fault_reporter&) = delete;
  ~fault_reporter() {
    if (installed_segv_) sigaction(SIGSEGV, &g_previous_segv, nullptr);
    if (installed_bus_) sigaction(SIGBUS, &g_previous_bus, nullptr);
  }

 private:
  bool installed_segv_ = false, installed_bus_ = false;
};

// Where a buffer's rows go: each row ending at a guard page or starting right after one (a head
// stride of whole pages), or packed [T, H, D] with the block ending at or starting after one.
enum class place : unsigned char { rows_end, rows_begin, block_end, block_begin };

const char* to_string(place p) {
  switch (p) {
    case place::rows_end: return "rows_end";
    case place::rows_begin: return "rows_begin";
    case place::block_end: return "block_end";
    case place::block_begin: return "block_begin";
  }
  return "?";
}

// A buffer's rows at the guard pages, in bytes.
struct placed {
  unsigned char* data = nullptr;
  std::size_t token_stride = 0, head_stride = 0, row_bytes = 0;
  place where = place::rows_end;

  unsigned char* row(std::size_t r) const {
    return data + (r / kHeads) * token_stride + (r % kHeads) * head_stride;
  }
  // The canary windows: before each row (rows_end) or after it (rows_begin); before the block
  // (block_end) or after it (block_begin). The other side is the guard page.
  template <class F>
  void for_each_window(F f) const {
    const bool fenced = where == place::rows_end || where == place::rows_begin;
    const bool at_end = where == place::rows_end || where == place::block_end;
    for (std::size_t r = 0; r < kRows; ++r) {
      if (at_end && (fenced || r == 0)) f(row(r) - kWindow);
      if (!at_end && (fenced || r == kRows - 1)) f(row(r) + row_bytes);
    }
  }
  void set_windows() const {
    for_each_window([](unsigned char* w) { std::memset(w, kCanary, kWindow); });
  }
  bool windows_intact() const {
    bool ok = true;
    for_each_window([&ok](const unsigned char* w) {
      for (std::size_t i = 0; i < kWindow; ++i) ok = ok && w[i] == kCanary;
    });
    return ok;
  }
};

placed place_rows(const arenas& a, place where, std::size_t row_bytes) {
  placed p;
  p.where = where;
  p.row_bytes = row_bytes;
  switch (where) {
    case place::rows_end:
    case place::rows_begin:
      p.data = where == place::rows_end ? a.rows.end(0) - row_bytes : a.rows.begin(0);
      p.head_stride = a.rows.period();
      p.token_stride = kHeads * p.head_stride;
      break;
    case place::block_end:
    case place::block_begin:
      p.data = where == place::block_end ? a.block.end(0) - kRows * row_bytes : a.block.begin(0);
      p.head_stride = row_bytes;
      p.token_stride = kHeads * row_bytes;
      break;
  }
  return p;
}

// The rows as a view of T (strides in elements; every stride is a multiple of sizeof(T)).
template <class T>
rope::heads_view<T> view_of(const placed& p) {
  return {reinterpret_cast<T*>(p.data),
          static_cast<std::ptrdiff_t>(kTokens),
          static_cast<std::ptrdiff_t>(kHeads),
          static_cast<std::ptrdiff_t>(p.row_bytes / sizeof(T)),
          static_cast<std::ptrdiff_t>(p.token_stride / sizeof(T)),
          static_cast<std::ptrdiff_t>(p.head_stride / sizeof(T))};
}
#endif  // ROPE_GUARD_PAGES

// Which directions a compile-time Dim runs: both for rope::dynamic and 18, forward only for
// the others. The direction changes the arithmetic alone (arch/detail/kernel_body.inc: combine),
// never which elements are loaded or stored, and each direction is a set of kernel instances per
// path and storage pair (a few seconds of GCC's time per Dim and path): with both everywhere,
// every storage pair and rounding and the scalar path at every Dim this file took GCC 11
// minutes in Release; trimmed as the comments here say, about a minute.
template <std::size_t Dim>
constexpr bool both_directions() {
  return Dim == rope::dynamic || Dim == 18;
}

// K's kernels for one direction, layout and rounding, as rope::detail::run_with chooses them
// (the rounding matters only for a float result stored as fp16 or bf16).
template <class K, std::size_t Dim, bool Inverse, class Real, class TIn, class TOut, class Pos>
void run_kernels(const rope::table<Real>& tab, const rope::detail::job<TIn, TOut, Pos>& jb,
                 rope::rounding rnd) {
  constexpr auto il = rope::layout::interleaved, hs = rope::layout::half_split;
  if constexpr (rope::detail::precise_store<Real, TOut>()) {
    if (rnd == rope::rounding::fast) {
      if (tab.layout() == il) K::template run<Dim, il, Inverse, false>(tab, jb);
      else K::template run<Dim, hs, Inverse, false>(tab, jb);
      return;
    }
  }
  if (tab.layout() == il) K::template run<Dim, il, Inverse, true>(tab, jb);
  else K::template run<Dim, hs, Inverse, true>(tab, jb);
}

// How a case runs the path under test: K's kernels directly (after the public validation of
// the views, which must accept them), or rope::apply.
template <class K>
struct kernel_runner {
  template <std::size_t Dim, class Real, class TIn, class TOut>
  static rope::status run(const rope::table<Real>& tab, const rope::heads_view<TIn>& in,
                          const rope::heads_view<TOut>& out, const std::int32_t* pos,
                          rope::direction dir, rope::rounding rnd) {
    const rope::status st = rope::detail::check_pair(in, out, tab.rotary_dim());
    if (st != rope::status::ok) return st;
    const auto jb = rope::detail::make_job(in, out, pos);
    if (dir == rope::direction::forward) {
      run_kernels<K, Dim, false>(tab, jb, rnd);
      return st;
    }
    if constexpr (both_directions<Dim>()) {
      run_kernels<K, Dim, true>(tab, jb, rnd);
      return st;
    } else {
      return rope::status::bad_option;  // inverse kernels not compiled for this Dim
    }
  }
};

using scalar_runner = kernel_runner<rope::detail::scalar_kernels>;

// rope::apply with rope::dynamic compiles the kernels of every listed dim (ROPE_DYNAMIC_DIMS) per
// storage pair, for every path in a runtime-dispatch build: two pairs here (float and
// float -> bf16, see check_types).
struct public_runner {
  template <std::size_t Dim, class Real, class TIn, class TOut>
  static rope::status run(const rope::table<Real>& tab, const rope::heads_view<TIn>& in,
                          const rope::heads_view<TOut>& out, const std::int32_t* pos,
                          rope::direction dir, rope::rounding rnd) {
    if constexpr (std::is_same<TIn, TOut>::value) {
      if (in.data == out.data) return rope::apply<TIn, Dim>(tab, in, pos, dir, rnd);
    }
    const rope::heads_view<const TIn> cin = in;
    return rope::apply<TIn, Dim>(tab, cin, out, pos, dir, rnd);
  }
};

#if ROPE_GUARD_PAGES
struct context {
  const char* path;
  arenas in, out;
  long cases = 0;
  std::uint64_t seed = 1;
  explicit context(const char* p) : path(p) {}
};

struct place_pair {
  place in, out;
};
// Out of place: same-size rows whose output starts 1..2047 bytes above the input modulo 4096 run
// backwards on x86 (aliasing_back): rows_end -> rows_begin does for rows under 2 KB.
constexpr place_pair kApart[] = {{place::rows_end, place::rows_end},
                                 {place::rows_begin, place::rows_begin},
                                 {place::rows_end, place::rows_begin},
                                 {place::rows_begin, place::rows_end},
                                 {place::block_end, place::block_end},
                                 {place::block_begin, place::block_begin}};
constexpr place kInPlace[] = {place::rows_end, place::rows_begin, place::block_end,
                              place::block_begin};

// One case: the rows at the guard pages (out is in, in place), and on the heap the input and
// the scalar path's result as packed rows of bytes.
struct case_state {
  placed in, out;
  bool in_place = false;
  std::int32_t pos[kTokens] = {};
  std::vector<unsigned char> src, ref;
};

void describe(const context& ctx, std::size_t Dim, std::size_t head_dim, int rotary_dim,
              rope::layout l, bool in_place, rope::direction dir, rope::rounding rnd,
              std::size_t in_size, std::size_t out_size, place pin, place pout) {
  std::snprintf(g_case, sizeof g_case,
                "%s Dim=%zu head_dim=%zu rotary_dim=%d %s %s %s %s, in %zu-byte elements at %s, "
                "out %zu-byte at %s",
                ctx.path, Dim, head_dim, rotary_dim, rope::to_string(l),
                in_place ? "in place" : "out of place",
                dir == rope::direction::inverse ? "inverse" : "forward",
                rnd == rope::rounding::fast ? "fast" : "accurate", in_size, to_string(pin),
                out_size, in_place ? "(the same)" : to_string(pout));
}

// The input rows copied to the guard pages; canaries beside the rows and in the output rows.
void fill(const case_state& cs) {
  for (std::size_t r = 0; r < kRows; ++r)
    std::memcpy(cs.in.row(r), cs.src.data() + r * cs.in.row_bytes, cs.in.row_bytes);
  cs.in.set_windows();
  if (!cs.in_place) {
    for (std::size_t r = 0; r < kRows; ++r) std::memset(cs.out.row(r), kCanary, cs.out.row_bytes);
    cs.out.set_windows();
  }
}

// Every output byte equal to the scalar path's, the input unchanged out of place, and every
// canary beside the rows intact.
void verify(const case_state& cs, rope::status st, context& ctx) {
  ASSERT_EQ(rope::status::ok, st) << g_case;
  ++ctx.cases;
  const std::size_t ib = cs.in.row_bytes, ob = cs.out.row_bytes;
  for (std::size_t r = 0; r < kRows; ++r) {
    ASSERT_EQ(0, std::memcmp(cs.out.row(r), cs.ref.data() + r * ob, ob))
        << g_case << ": row " << r << " differs from the scalar path's";
    if (!cs.in_place) {
      ASSERT_EQ(0, std::memcmp(cs.in.row(r), cs.src.data() + r * ib, ib))
          << g_case << ": input row " << r << " changed";
    }
  }
  ASSERT_TRUE(cs.in.windows_intact()) << g_case << ": a byte beside an input row changed";
  if (!cs.in_place) {
    ASSERT_TRUE(cs.out.windows_intact()) << g_case << ": a byte beside an output row changed";
  }
}

// Random input, positions, the reference (the scalar path with the rotary dim taken from the
// table, on the heap: the same bits as with any compile-time Dim, which would double the kernels
// compiled here) and the rows at the guard pages. One per storage pair, shared by every Dim and
// path.
template <class TIn, class TOut>
ROPE_NOINLINE void prepare(const rope::table<rope::compute_type_t<TIn>>& tab, std::size_t Dim,
                           std::size_t head_dim, context& ctx, place pin, place pout,
                           bool in_place, rope::direction dir, rope::rounding rnd,
                           case_state& cs) {
  describe(ctx, Dim, head_dim, tab.rotary_dim(), tab.layout(), in_place, dir, rnd, sizeof(TIn),
           sizeof(TOut), pin, pout);
  const std::size_t n = kRows * head_dim;
  std::mt19937_64 gen(++ctx.seed);
  for (auto& p : cs.pos)
    p = static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(kPositions));
  std::vector<TIn> src(n);
  for (auto& v : src) v = rope_test::random_value<TIn>(gen);
  std::vector<TIn> ref_in(src);
  std::vector<TOut> ref_out(n);
  std::memset(static_cast<void*>(ref_out.data()), kCanary, n * sizeof(TOut));
  TOut* ref = ref_out.data();
  if constexpr (std::is_same<TIn, TOut>::value) {
    if (in_place) ref = ref_in.data();
  }
  const auto sk = static_cast<std::ptrdiff_t>(kTokens), sh = static_cast<std::ptrdiff_t>(kHeads),
             sd = static_cast<std::ptrdiff_t>(head_dim);
  rope::detail::run_with<rope::detail::scalar_kernels, rope::dynamic>(
      tab, rope::detail::make_job(rope::packed_heads(ref_in.data(), sk, sh, sd),
                                  rope::packed_heads(ref, sk, sh, sd), cs.pos),
      dir, rnd);
  cs.in_place = in_place;
  cs.src.resize(n * sizeof(TIn));
  std::memcpy(cs.src.data(), static_cast<const void*>(src.data()), cs.src.size());
  cs.ref.resize(n * sizeof(TOut));
  std::memcpy(cs.ref.data(), static_cast<const void*>(ref), cs.ref.size());
  cs.in = place_rows(ctx.in, pin, head_dim * sizeof(TIn));
  cs.out = in_place ? cs.in : place_rows(ctx.out, pout, head_dim * sizeof(TOut));
  fill(cs);
}

// One job at the guard pages on the path under test. Out of line, one per <Runner, Dim, TIn,
// TOut> with the kernels inlined; the rest of the case is shared (prepare, verify).
template <class Runner, std::size_t Dim, class TIn, class TOut>
ROPE_NOINLINE void check_case(const rope::table<rope::compute_type_t<TIn>>& tab,
                              std::size_t head_dim, context& ctx, place pin, place pout,
                              bool in_place, rope::direction dir, rope::rounding rnd) {
  case_state cs;
  prepare<TIn, TOut>(tab, Dim, head_dim, ctx, pin, pout, in_place, dir, rnd, cs);
  const rope::status st =
      Runner::template run<Dim>(tab, view_of<TIn>(cs.in), view_of<TOut>(cs.out), cs.pos, dir, rnd);
  verify(cs, st, ctx);
}

// The float and double tables of one spec (dense, kPositions positions).
struct tables {
  std::shared_ptr<const rope::table<float>> f;
  std::shared_ptr<const rope::table<double>> d;
  explicit tables(const rope::spec& sp)
      : f(rope::table<float>::build(rope::default_frequencies(sp), sp.layout, kPositions,
                                    rope::table_mode::dense)),
        d(rope::table<double>::build(rope::default_frequencies(sp), sp.layout, kPositions,
                                     rope::table_mode::dense)) {}
  template <class Real>
  const rope::table<Real>& get() const {
    if constexpr (std::is_same<Real, float>::value)
      return *f;
    else
      return *d;
  }
};

// Which roundings a case runs (they differ only for a float result stored as fp16 or bf16).
// With a run-time dim both, as the rounding changes how a row is chunked (dyn_row_vectors::Max).
// With a compile-time Dim one per storage pair (check_types): the rounding changes the
// arithmetic and the table's part (coefs<V, P>) and, out of place, whether a 16-bit -> 16-bit
// half-split row of more than 4 vectors is held in registers (rounding::fast) or takes a pass
// per half (rotate_row_apart: hold), which load and store the same elements in another order;
// row_vectors' count, tail and group do not depend on it, and each rounding is a set of kernel
// instances per Dim, path and storage pair.
enum class roundings { where_they_differ, accurate_only, fast_only };

// Both directions (where compiled); every placement out of place, and in place where the types
// allow.
template <class Runner, std::size_t Dim, class TIn, class TOut,
          roundings which = roundings::where_they_differ>
void check_modes(const tables& tabs, std::size_t head_dim, context& ctx) {
  using Real = rope::compute_type_t<TIn>;
  constexpr bool differ = rope::detail::precise_store<Real, TOut>();
  constexpr bool run_accurate = !differ || which != roundings::fast_only;
  constexpr bool run_fast = differ && which != roundings::accurate_only;
  const rope::table<Real>& tab = tabs.get<Real>();
  for (rope::direction dir : {rope::direction::forward, rope::direction::inverse})
    for (rope::rounding rnd : {rope::rounding::accurate, rope::rounding::fast}) {
      if (rnd == rope::rounding::accurate ? !run_accurate : !run_fast) continue;
      if (dir == rope::direction::inverse && !both_directions<Dim>()) continue;
      for (const place_pair& pp : kApart) {
        check_case<Runner, Dim, TIn, TOut>(tab, head_dim, ctx, pp.in, pp.out, false, dir, rnd);
        if (::testing::Test::HasFatalFailure()) return;
      }
      if constexpr (std::is_same<TIn, TOut>::value) {
        for (place p : kInPlace) {
          check_case<Runner, Dim, TIn, TOut>(tab, head_dim, ctx, p, p, true, dir, rnd);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
}

// The storage pairs. With a run-time dim every pair of the vector paths (but see
// every_pair_at_run_time_dims), both roundings. With a compile-time Dim, and on the scalar path
// (loops over a row's elements), six: float, double, bf16 and float -> bf16 (accurate), fp16
// (fast: 16-bit rows held out of place) and fp16 -> float, which cover each element size in
// and out (4, 8 and 2 bytes; same, narrower and wider), 16-bit rows in place
// (row_vectors::group16), both 16-bit formats' loads and stores, bf16 -> bf16 rows in pairs
// (use_pairs) and out of place in a pass per half, and 16-bit rows held. The other pairs load
// and store the same elements as one of these (fp16 and bf16 rows have the same widths in
// every path's io) and differ in a conversion. rope::apply: float and float -> bf16 (its
// validation and dispatch do not depend on the types; each pair compiles the kernels of every
// ROPE_DYNAMIC_DIMS dim again, which the kernels' own tests here cover).
template <class Runner>
constexpr bool every_pair_at_run_time_dims() {
  if constexpr (std::is_same<Runner, public_runner>::value ||
                std::is_same<Runner, scalar_runner>::value)
    return false;
#if ROPE_NEON
  return true;  // NEON's one build (aarch64) is a few-dims one
#else
  return !ROPE_GUARD_FEW_DIMS;  // the few-dims builds: six pairs (asan's compile was 3 min)
#endif
}

template <class Runner, std::size_t Dim>
void check_types(const tables& tabs, std::size_t head_dim, context& ctx) {
  using rope::bfloat16;
  using rope::float16;
  constexpr bool every_pair = Dim == rope::dynamic && every_pair_at_run_time_dims<Runner>();
  constexpr roundings accurate =
      Dim == rope::dynamic ? roundings::where_they_differ : roundings::accurate_only;
  constexpr roundings fast =
      Dim == rope::dynamic ? roundings::where_they_differ : roundings::fast_only;
  check_modes<Runner, Dim, float, float>(tabs, head_dim, ctx);
  check_modes<Runner, Dim, float, bfloat16, accurate>(tabs, head_dim, ctx);
  if constexpr (!std::is_same<Runner, public_runner>::value) {
    check_modes<Runner, Dim, bfloat16, bfloat16, accurate>(tabs, head_dim, ctx);
    check_modes<Runner, Dim, float16, float16, fast>(tabs, head_dim, ctx);
    check_modes<Runner, Dim, double, double>(tabs, head_dim, ctx);
    check_modes<Runner, Dim, float16, float>(tabs, head_dim, ctx);
  }
  if constexpr (every_pair) {
    check_modes<Runner, Dim, float, float16>(tabs, head_dim, ctx);
    check_modes<Runner, Dim, bfloat16, float>(tabs, head_dim, ctx);
    check_modes<Runner, Dim, bfloat16, float16>(tabs, head_dim, ctx);
    check_modes<Runner, Dim, float16, bfloat16>(tabs, head_dim, ctx);
  }
}

// Compile-time Dim: the full rotary dim, and 6 dims more per row (partial rotary).
template <class Runner, std::size_t Dim>
void check_static_dim(context& ctx) {
  if (::testing::Test::HasFatalFailure()) return;
  const int d = static_cast<int>(Dim);
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (int extra : {0, 6}) {
      const tables tabs(rope::make_spec(d + extra, d, 1e4, l));
      check_types<Runner, Dim>(tabs, static_cast<std::size_t>(d + extra), ctx);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

template <class Runner, std::size_t... Dims>
void check_static_dims(dim_list<Dims...>, context& ctx) {
  (check_static_dim<Runner, Dims>(ctx), ...);
}

// Dim = rope::dynamic: every head dim of shared/testing.md, full and partial rotary dims.
template <class Runner>
void check_runtime_dims(context& ctx) {
  for (int D : rope_test::kHeadDims)
    for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
      int done[3] = {0, 0, 0};
      int k = 0;
      for (int d : {D, D / 2 - (D / 2) % 2, D - 2}) {
        if (d < 2 || d == done[0] || d == done[1]) continue;
        done[k++] = d;
        const tables tabs(rope::make_spec(D, d, 1e4, l));
        check_types<Runner, rope::dynamic>(tabs, static_cast<std::size_t>(D), ctx);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
}
#endif  // ROPE_GUARD_PAGES

enum class dims { compile_time, run_time };

template <class Runner, dims which, class StaticDims = dim_list<>>
void check_path(const char* path) {
#if ROPE_GUARD_PAGES
  const fault_reporter reporter;
  context ctx(path);
  ASSERT_TRUE(ctx.in.ok() && ctx.out.ok()) << "mmap/mprotect failed";
  if constexpr (which == dims::run_time)
    check_runtime_dims<Runner>(ctx);
  else
    check_static_dims<Runner>(StaticDims{}, ctx);
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_GT(ctx.cases, 0) << "no case ran";
  std::printf("guard_page: %s, %s dims: %ld cases\n", path,
              which == dims::compile_time ? "compile-time" : "run-time", ctx.cases);
  ::testing::Test::RecordProperty("cases", std::to_string(ctx.cases));
#else
  static_cast<void>(path);
  GTEST_SKIP() << "guard pages need mmap and mprotect (POSIX)";
#endif
}

}  // namespace

// Skips the test where this CPU or build cannot run the path, fails where ROPE_EXPECT_ISA
// names it (tests/isa_expectation.hpp).
#define ROPE_GUARD_SKIP_UNLESS(isa_value) ROPE_SKIP_UNLESS(isa_value)

TEST(GuardPageScalar, CompileTimeDims) {
  check_path<scalar_runner, dims::compile_time, scalar_dims>("scalar");
}
TEST(GuardPageScalar, RuntimeDims) {
  check_path<scalar_runner, dims::run_time>("scalar");
}

#if ROPE_X86
TEST(GuardPageAvx2, CompileTimeDims) {
  ROPE_GUARD_SKIP_UNLESS(rope::isa::avx2);
  check_path<kernel_runner<rope::detail::avx2_kernels>, dims::compile_time, avx2_dims>("avx2");
}
TEST(GuardPageAvx2, RuntimeDims) {
  ROPE_GUARD_SKIP_UNLESS(rope::isa::avx2);
  check_path<kernel_runner<rope::detail::avx2_kernels>, dims::run_time>("avx2");
}
TEST(GuardPageAvx512, CompileTimeDims) {
  ROPE_GUARD_SKIP_UNLESS(rope::isa::avx512);
  check_path<kernel_runner<rope::detail::avx512_kernels>, dims::compile_time, avx512_dims>(
      "avx512");
}
TEST(GuardPageAvx512, RuntimeDims) {
  ROPE_GUARD_SKIP_UNLESS(rope::isa::avx512);
  check_path<kernel_runner<rope::detail::avx512_kernels>, dims::run_time>("avx512");
}
#endif

#if ROPE_NEON
TEST(GuardPageNeon, CompileTimeDims) {
  check_path<kernel_runner<rope::detail::neon_kernels>, dims::compile_time, neon_dims>("neon");
}
TEST(GuardPageNeon, RuntimeDims) {
  check_path<kernel_runner<rope::detail::neon_kernels>, dims::run_time>("neon");
}
#else
TEST(GuardPageNeon, CompileTimeDims) {
  GTEST_SKIP() << "NEON kernels exist only in AArch64 builds (run under qemu-aarch64 in CI)";
}
#endif

// rope::apply itself (validation, dispatch, ROPE_DYNAMIC_DIMS) on the path it runs on now.
TEST(GuardPage, PublicApplyOnActivePath) {
  std::printf("guard_page: rope::apply runs on %s\n", rope::to_string(rope::active_isa()));
  check_path<public_runner, dims::run_time>(rope::to_string(rope::active_isa()));
}
