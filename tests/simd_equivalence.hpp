// tests/simd_equivalence.hpp: simd_test's equivalence harness. Runs a vector path's kernels
// and the scalar path's (rope/arch/scalar.hpp, the specification) on identical buffers and
// compares every byte: every head dim of shared/testing.md, partial rotary dims, compile-time
// and dynamic Dim, alignment offsets 0..15 elements, both layouts, in and out of place, forward
// and inverse, float/double/fp16/bf16 storage and mixed float<->16-bit, dense and compact
// tables, with canaries around and between the rows.
//
// Each path's tests are a translation unit of their own (simd_equivalence_<isa>.cpp, linked
// into simd_test), so a build compiles them in parallel: as one file with the rest of
// simd_test, under ASan, GCC took 23 minutes on it while the other core sat idle.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <rope/rope.hpp>

#include "test_scale.hpp"  // kHeadDims

namespace rope_test {

inline constexpr unsigned char kCanary = 0xA5;

// A byte buffer with `offset` elements of T before the data, canary bytes around, the data
// start at `page_phase` (a multiple of 64) + offset * sizeof(T) bytes modulo 4096. The phases
// of an input and an output buffer set their distance modulo 4096, which picks the direction
// of an out-of-place job (aliasing_back in the x86 kernels).
template <class T>
struct guarded {
  std::vector<unsigned char> bytes;
  std::size_t start = 0;  // byte index of element 0
  guarded(std::size_t n, std::size_t offset, std::size_t page_phase = 0) {
    bytes.assign(n * sizeof(T) + offset * sizeof(T) + 256 + 4096, kCanary);
    const auto base = reinterpret_cast<std::uintptr_t>(bytes.data());
    start = static_cast<std::size_t>((page_phase + 4096 - (base + 64) % 4096) % 4096) + 64 +
            offset * sizeof(T);
  }
  T* data() { return reinterpret_cast<T*>(bytes.data() + start); }
  // The data and 64 canary bytes either side: equal windows compare two buffers whose
  // allocations are aligned differently.
  const unsigned char* window() const { return bytes.data() + start - 64; }
  std::size_t window_size(std::size_t n) const { return n * sizeof(T) + 128; }
};

// Random finite values of T spread over many binades (subnormals included for 16-bit types),
// and one in 16 an exact +0 or -0, so that some pairs are all zeros: their outputs' signs of
// zero are bits like any other (the scalar path once lost them where GCC rewrote a negated fma;
// see detail::opaque in rope/config.hpp).
template <class T>
T random_value(std::mt19937_64& gen) {
  using traits = rope::storage_traits<T>;
  const std::uint64_t pick = gen();
  if (pick % 16 == 0)
    return traits::store(static_cast<typename traits::compute_type>(pick & 16 ? -0.0 : 0.0));
  if constexpr (rope::format_of_v<T> == rope::storage_format::fp16 ||
                rope::format_of_v<T> == rope::storage_format::bf16) {
    const std::uint16_t exp_mask =
        rope::format_of_v<T> == rope::storage_format::fp16 ? 0x7c00 : 0x7f80;
    for (;;) {
      const auto b = static_cast<std::uint16_t>(gen());
      if ((b & exp_mask) == exp_mask) continue;  // no Inf/NaN: their NaN signs may differ by path
      T x;
      std::memcpy(&x, &b, sizeof b);
      return x;
    }
  } else {
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    const int e = static_cast<int>(gen() % 61) - 30;
    return traits::store(static_cast<typename traits::compute_type>(std::ldexp(unit(gen), e)));
  }
}

struct shape {
  int head_dim, rotary_dim, tokens, heads;
  std::size_t in_offset, out_offset;
  std::ptrdiff_t head_pad;       // elements between rows of one token
  std::size_t out_phase = 2048;  // the output's page phase; the input's is 0 (see guarded)
};

// The first n elements of a and b: the same random values (random_value).
template <class T>
void fill_twins(std::mt19937_64& gen, guarded<T>& a, guarded<T>& b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const T v = random_value<T>(gen);
    std::memcpy(a.data() + i, &v, sizeof v);
    std::memcpy(b.data() + i, &v, sizeof v);
  }
}

// Which of the n elements of a job's buffer belong to its rows: tokens x heads rows of head_dim
// elements at token stride ts and head stride hs.
inline std::vector<bool> row_elements(std::size_t n, int tokens, int heads, std::ptrdiff_t ts,
                                      std::ptrdiff_t hs, int head_dim) {
  std::vector<bool> is_row(n, false);
  for (int t = 0; t < tokens; ++t)
    for (int h = 0; h < heads; ++h)
      for (int k = 0; k < head_dim; ++k)
        is_row[static_cast<std::size_t>(t * ts + h * hs + k)] = true;
  return is_row;
}

// After the scalar kernels ran on (in_a, out_a) and kernels K on (in_b, out_b), which held the
// same bytes before (in_initial, out_initial): both results bitwise equal (each buffer with its
// canaries), every byte outside the rows unchanged (canaries, padding; the runs are equal, so
// checking b suffices), and out of place the input unchanged.
template <class TIn, class TOut>
void compare_runs(const guarded<TIn>& in_a, const guarded<TIn>& in_b, const guarded<TOut>& out_a,
                  const guarded<TOut>& out_b, const std::vector<unsigned char>& in_initial,
                  const std::vector<unsigned char>& out_initial, const std::vector<bool>& is_row,
                  bool in_place, const std::string& what) {
  const std::size_t n = is_row.size();
  ASSERT_EQ(0, std::memcmp(in_a.window(), in_b.window(), in_a.window_size(n))) << what;
  ASSERT_EQ(0, std::memcmp(out_a.window(), out_b.window(), out_a.window_size(n))) << what;
  auto outside_unchanged = [&](const std::vector<unsigned char>& now,
                               const std::vector<unsigned char>& before, std::size_t start,
                               std::size_t elem) {
    for (std::size_t b = 0; b < now.size(); ++b) {
      const bool in_rows = b >= start && b < start + n * elem && is_row[(b - start) / elem];
      if (!in_rows && now[b] != before[b]) return false;
    }
    return true;
  };
  ASSERT_TRUE(outside_unchanged(in_b.bytes, in_initial, in_b.start, sizeof(TIn))) << what;
  ASSERT_TRUE(outside_unchanged(out_b.bytes, out_initial, out_b.start, sizeof(TOut))) << what;
  if (!in_place) {
    ASSERT_EQ(0, std::memcmp(in_b.bytes.data(), in_initial.data(), in_initial.size()))
        << what << ": input changed";
  }
}

// Runs kernels K and the scalar kernels on identical buffers and compares every byte: the
// rows bitwise, and every byte outside the rows unchanged (canaries, padding).
// Out of line (ROPE_NOINLINE): inlined into check_static_dims with the kernels it runs, one
// function held every case and the sanitizer builds spent over 25 minutes and 10 GB compiling
// it.
template <class K, std::size_t Dim, class TIn, class TOut>
ROPE_NOINLINE void check_case(const rope::table<rope::compute_type_t<TIn>>& tab, const shape& s,
                              bool in_place, rope::direction dir, rope::rounding rnd,
                              std::uint64_t seed) {
  const std::ptrdiff_t hs = s.head_dim + s.head_pad;
  const std::ptrdiff_t ts = s.heads * hs + 1;
  const std::size_t n = static_cast<std::size_t>(s.tokens * ts);
  std::mt19937_64 gen(seed);
  std::vector<std::int32_t> pos(static_cast<std::size_t>(s.tokens));
  for (auto& p : pos)
    p = static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(tab.length()));
  pos[0] = 0;

  guarded<TIn> in_a(n, s.in_offset), in_b(n, s.in_offset);
  guarded<TOut> out_a(n, s.out_offset, s.out_phase), out_b(n, s.out_offset, s.out_phase);
  const std::vector<bool> is_row = row_elements(n, s.tokens, s.heads, ts, hs, s.head_dim);
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_row[i]) continue;
    const TIn v = random_value<TIn>(gen);
    std::memcpy(in_a.data() + i, &v, sizeof v);
    std::memcpy(in_b.data() + i, &v, sizeof v);
  }
  const std::vector<unsigned char> in_initial = in_b.bytes, out_initial = out_b.bytes;

  auto job_for = [&](guarded<TIn>& in, guarded<TOut>& out) {
    TOut* o = in_place ? reinterpret_cast<TOut*>(in.data()) : out.data();
    return rope::detail::job<TIn, TOut, std::int32_t>{in.data(),
                                                      o,
                                                      static_cast<std::size_t>(s.tokens),
                                                      static_cast<std::size_t>(s.heads),
                                                      static_cast<std::size_t>(ts),
                                                      static_cast<std::size_t>(hs),
                                                      static_cast<std::size_t>(ts),
                                                      static_cast<std::size_t>(hs),
                                                      static_cast<std::size_t>(s.head_dim),
                                                      pos.data(),
                                                      !in_place};
  };
  rope::detail::run_with<rope::detail::scalar_kernels, Dim>(tab, job_for(in_a, out_a), dir, rnd);
  rope::detail::run_with<K, Dim>(tab, job_for(in_b, out_b), dir, rnd);

  const std::string what =
      std::string(rope::to_string(K::id)) + " D=" + std::to_string(s.head_dim) +
      " d=" + std::to_string(s.rotary_dim) + " " + rope::to_string(tab.layout()) +
      (in_place ? " in place" : " out of place") +
      (dir == rope::direction::inverse ? " inverse" : " forward") +
      (rnd == rope::rounding::fast ? " fast" : "") + " offsets " + std::to_string(s.in_offset) +
      "/" + std::to_string(s.out_offset) + " out phase " + std::to_string(s.out_phase) +
      (tab.mode() == rope::table_mode::compact ? " compact" : " dense") +
      " Dim=" + std::to_string(Dim) + " in " + std::to_string(sizeof(TIn)) + "B out " +
      std::to_string(sizeof(TOut)) + "B";
  compare_runs(in_a, in_b, out_a, out_b, in_initial, out_initial, is_row, in_place, what);
}

// The tables of one spec: float and double, dense and compact (built once per spec).
struct tables {
  std::shared_ptr<const rope::table<float>> f_dense, f_compact;
  std::shared_ptr<const rope::table<double>> d_dense, d_compact;
  explicit tables(const rope::spec& sp) {
    const auto f = rope::default_frequencies(sp);
    f_dense = rope::table<float>::build(f, sp.layout, 256, rope::table_mode::dense);
    f_compact = rope::table<float>::build(f, sp.layout, 1 << 20, rope::table_mode::compact);
    d_dense = rope::table<double>::build(f, sp.layout, 256, rope::table_mode::dense);
    d_compact = rope::table<double>::build(f, sp.layout, 1 << 20, rope::table_mode::compact);
  }
  template <class Real>
  const rope::table<Real>& get(bool compact) const {
    if constexpr (std::is_same<Real, float>::value)
      return compact ? *f_compact : *f_dense;
    else
      return compact ? *d_compact : *d_dense;
  }
};

// Both roundings where they differ (a float result stored as fp16 or bf16: rope::rounding).
template <class K, std::size_t Dim, class TIn, class TOut>
void check_all_modes(const tables& tabs, const shape& s, std::uint64_t seed) {
  using Real = rope::compute_type_t<TIn>;
  constexpr bool two_roundings = rope::detail::precise_store<Real, TOut>();
  for (bool compact : {false, true}) {
    const rope::table<Real>& tab = tabs.get<Real>(compact);
    for (rope::direction dir : {rope::direction::forward, rope::direction::inverse})
      for (rope::rounding rnd : {rope::rounding::accurate, rope::rounding::fast}) {
        if (rnd == rope::rounding::fast && !two_roundings) continue;
        check_case<K, Dim, TIn, TOut>(tab, s, false, dir, rnd, seed);
        if constexpr (std::is_same<TIn, TOut>::value)
          check_case<K, Dim, TIn, TOut>(tab, s, true, dir, rnd, seed + 1);
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
}

// Every storage combination the vector paths take.
template <class K, std::size_t Dim>
void check_all_types(const tables& tabs, const shape& s, std::uint64_t seed) {
  check_all_modes<K, Dim, float, float>(tabs, s, seed);
  check_all_modes<K, Dim, double, double>(tabs, s, seed);
  check_all_modes<K, Dim, rope::float16, rope::float16>(tabs, s, seed);
  check_all_modes<K, Dim, rope::bfloat16, rope::bfloat16>(tabs, s, seed);
  check_all_modes<K, Dim, float, rope::float16>(tabs, s, seed);
  check_all_modes<K, Dim, float, rope::bfloat16>(tabs, s, seed);
  check_all_modes<K, Dim, rope::float16, float>(tabs, s, seed);
  check_all_modes<K, Dim, rope::bfloat16, rope::float16>(tabs, s, seed);
  // A bf16 output of the same element size that never goes in pairs: out of place it runs
  // backwards at phase 1024, storing two vectors at a time (io::store_two) with odd counts too.
  check_all_modes<K, Dim, rope::float16, rope::bfloat16>(tabs, s, seed);
  // bf16 -> float with run-time dims only (every head dim, offsets 0..15): its loads are the
  // bf16 loads of bf16 -> bf16 rows not in pairs and its stores float -> float's, and each pair
  // is a set of kernel instances per compile-time Dim (simd_equivalence_avx512.cpp alone takes 4
  // minutes of GCC's time in Release).
  if constexpr (Dim == rope::dynamic) check_all_modes<K, Dim, rope::bfloat16, float>(tabs, s, seed);
}

// Every head dim (dynamic Dim), full and partial rotary dims, both layouts, offsets 0..15.
template <class K>
void check_every_head_dim() {
  std::uint64_t seed = 1;
  for (int D : kHeadDims)
    for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
      for (int d : {D, D / 2 - (D / 2) % 2}) {
        if (d < 2) continue;
        const tables tabs(rope::make_spec(D, d, 1e4, l));
        for (std::size_t off = 0; off < 16; ++off) {
          const shape s{D, d, 3, 2, off, (off * 7 + 3) % 16, static_cast<std::ptrdiff_t>(off % 3)};
          check_all_types<K, rope::dynamic>(tabs, s, ++seed);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
}

// Compile-time Dim: rows that are whole vectors, that end in a vector overlapping the one
// before it ("shifted": AVX-512 float 20 and 140 interleaved, 140 and 280 half-split; AVX2
// float 20, 140 interleaved), in exactly half a vector (AVX-512 float 8, 24, 280 interleaved and
// 16, 48, 176 half-split; double 12 interleaved, 24 half-split), or narrower than a vector
// (masked); rows of 8 or more vectors with and without such a tail (read in groups in place,
// except interleaved rows of float or double: 140, 256, 280); in place on AVX-512, fp16 rows of
// 2-7 vectors in groups of up to 4 (48-112 interleaved; 64-176 half-split), with a shifted tail
// after a remainder (84 interleaved: 4 + 1 + shifted) or after a group of 2 (84 half-split; bf16
// too at 84, in both layouts: neither width goes in pairs); and out of place,
// half-split rows that hold one half's results and rows that take a pass per half (more than 4
// vectors with 16-bit low parts or mixed sizes: 140, 160, 176, 256, 280 on AVX-512). bf16 in and
// out on AVX-512 runs rows in even/odd pairs of vectors (use_pairs): whole pairs (64, 128, 256; 96
// and 160 interleaved), pairs then a vector (48, 80, 112, 176 interleaved; 96, 160 half-split),
// then a half-width one (80 half-split), then both (112, 176 half-split, 280 interleaved); the
// others (8-24, 140; 48 and 280 half-split) a vector at a time. On AVX2 (pairs of 16, no half-width
// vectors): whole pairs (16, 48, 64, 80, 96, 112, 128, 160, 176, 256 interleaved; 64, 96, 128, 160,
// 256 half-split), pairs then a vector (24, 280 interleaved; 48, 80, 112, 176 half-split), the
// others a vector at a time. Out of place, bf16 outputs held in vectors (float or fp16 in, and bf16
// rows not in pairs) are stored two vectors at a time (io::store_two), with odd counts (48, 80,
// 112, 176 interleaved on AVX-512) and even ones. The output sits 1 KiB above the input modulo 4096
// (out of place, the x86 kernels then run backwards) and 1 KiB below (forwards), with and without a
// copied tail.
template <class K, std::size_t Dim>
void check_static_dim() {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (int extra : {8, 0}) {
      const int D = static_cast<int>(Dim);
      const tables tabs(rope::make_spec(D + extra, D, 5e5, l));  // extra dims: copied tail
      // Every input offset 0..15 (the output at 15 - offset), the output 1 KiB above the input
      // modulo 4096 for offsets 0, 1, 4, 5, ... and below it for 2, 3, 6, 7, ... (both parities
      // each way): 16 cases per row shape, where both phases at every offset would be 32 (the
      // five offsets 0, 1, 3, 8, 15 with both phases, before, were 10).
      for (std::size_t off = 0; off < 16; ++off) {
        const std::size_t phase = off % 4 < 2 ? 1024u : 3072u;
        const shape s{D + extra, D, 5, 3, off, 15 - off, 2, phase};
        check_all_types<K, Dim>(tabs, s, 100 + off);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
}

// ROPE_TEST_FEW_DIMS (the clang-werror, asan, tsan, noexcept, aarch64 and baseline presets):
// every compile-time Dim is a set of kernel instances, and compiling all of them under ASan took
// GCC more than 25 minutes and 10 GB. Five dims keep every row ending (masked, half vector,
// shifted), grouped rows with a tail, and both out-of-place half-split ways; the other builds run
// them all. ROPE_TEST_TWO_STATIC_DIMS (the asan preset) keeps the short rows' endings, 8 and 20:
// under ASan + UBSan the other three took 250 s of GCC's time in each of the AVX2 and AVX-512
// files (the whole asan stage took 1303 s of CI's 5400). What the sanitizers would see there, a
// read or write past a row, guard_page_test checks in every build (mprotect), at 80, 112, 130,
// 160 and 256 in the full one; bitwise equality at 80, 140 and 176 runs in four other x86 builds.
template <class K>
void check_static_dims() {
  check_static_dim<K, 8>();
  check_static_dim<K, 20>();
#if !ROPE_TEST_TWO_STATIC_DIMS
  check_static_dim<K, 80>();
  check_static_dim<K, 140>();
  check_static_dim<K, 176>();
#endif
#if !ROPE_TEST_FEW_DIMS
  check_static_dim<K, 12>();
  check_static_dim<K, 16>();
  check_static_dim<K, 24>();
  check_static_dim<K, 48>();
  check_static_dim<K, 64>();
  check_static_dim<K, 84>();
  check_static_dim<K, 96>();
  check_static_dim<K, 112>();
  check_static_dim<K, 128>();
  check_static_dim<K, 160>();
  check_static_dim<K, 256>();
  check_static_dim<K, 280>();
#endif
}

// In-place jobs over 1 MB of half-split rows of 1 KB (float D = 256, double D = 128), which the x86
// kernels run with software prefetch of the head two ahead (prefetch_row in kernel_body.inc; NEON
// runs them without): 32 heads, 3 heads (the last two prefetch the next token's first two) and 1
// (the next token's second head would be beyond it), padded heads with the last two.
template <class K, std::size_t Dim, class T>
void check_prefetching_jobs() {
  const int D = static_cast<int>(Dim);
  const tables tabs(rope::make_spec(D, D, 1e4, rope::layout::half_split));
  const shape shapes[] = {
      {D, D, 40, 32, 0, 0, 0}, {D, D, 350, 3, 3, 0, 4}, {D, D, 1100, 1, 1, 0, 6}};
  static_assert(Dim * sizeof(T) == 1024, "rows of 1 KB");
  std::uint64_t seed = 7;
  for (const shape& s : shapes) {
    ASSERT_GT(static_cast<std::size_t>(s.tokens * s.heads) * Dim * sizeof(T), std::size_t{1} << 20);
    for (rope::direction dir : {rope::direction::forward, rope::direction::inverse}) {
      check_case<K, Dim, T, T>(tabs.get<T>(false), s, true, dir, rope::rounding::accurate, ++seed);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}
template <class K>
void check_prefetching_jobs() {
  check_prefetching_jobs<K, 256, float>();
  check_prefetching_jobs<K, 128, double>();
}

// M-RoPE's and XD-RoPE's image and video tokens (rope/mrope.hpp): jobs whose rows are gathered
// per token from the rows of three (four) positions (rope::detail::gathered_tokens) run on kernels
// K and on the scalar kernels, every byte compared as check_case does (compare_runs). Sections:
// Qwen2-VL's consecutive ones and Qwen3-VL's interleaved ones at d = 128, a vision encoder's
// {0, 20, 20} (no temporal pair) at d = 80, odd counts at d = 40 in a head of 48 (copied tail
// out of place), ERNIE-4.5-VL's and Bailing's alternating ones (Bailing's with no temporal
// pair too), openPangu's balanced ones at d = 128 and d = 40, and XD-RoPE's four at d = 128
// and d = 40.
inline std::string sections_name(const rope::mrope_sections& sec) {
  return sec.interleaved      ? " interleaved"
         : sec.hw_alternating ? " hw_alternating"
         : sec.balanced       ? " balanced"
                              : "";
}
inline std::string sections_name(const rope::xdrope_sections&) { return " xdrope"; }

template <class K, std::size_t Dim, class TIn, class TOut, class Sections>
ROPE_NOINLINE void check_gathered_case(const rope::table<rope::compute_type_t<TIn>>& tab,
                                       const Sections& sec, int head_dim, bool in_place,
                                       rope::direction dir, rope::rounding rnd,
                                       std::uint64_t seed) {
  using Real = rope::compute_type_t<TIn>;
  const int tokens = 6, heads = 3;
  const std::ptrdiff_t hs = head_dim + 1, ts = heads * hs + 2;
  const std::size_t n = static_cast<std::size_t>(tokens * ts);
  const auto d = static_cast<std::size_t>(tab.rotary_dim());
  std::mt19937_64 gen(seed);
  std::vector<std::int64_t> pos(4 * static_cast<std::size_t>(tokens));
  for (auto& p : pos)
    p = static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(tab.length()));
  const std::int64_t* streams[4] = {pos.data(), pos.data() + tokens, pos.data() + 2 * tokens,
                                    pos.data() + 3 * tokens};
  std::vector<unsigned char> entry_stream(d);
  std::vector<Real> scratch(4 * d);
  const auto g = rope::detail::gather_streams(sec, tab.layout(), d, streams, entry_stream.data(),
                                              scratch.data());
  // The output 1 KiB above the input modulo 4096 (out of place, the x86 kernels then run
  // backwards) or 1 KiB below (forwards), by turns.
  const std::size_t phase = seed % 4 < 2 ? 1024 : 3072;
  guarded<TIn> in_a(n, 1), in_b(n, 1);
  guarded<TOut> out_a(n, 3, phase), out_b(n, 3, phase);
  fill_twins(gen, in_a, in_b, n);
  const std::vector<unsigned char> in_initial = in_b.bytes, out_initial = out_b.bytes;
  auto job_for = [&](guarded<TIn>& in, guarded<TOut>& out) {
    TOut* o = in_place ? reinterpret_cast<TOut*>(in.data()) : out.data();
    const auto T = static_cast<std::size_t>(ts), H = static_cast<std::size_t>(hs);
    return rope::detail::job<TIn, TOut, std::remove_const_t<decltype(g)>>{
        in.data(),
        o,
        static_cast<std::size_t>(tokens),
        static_cast<std::size_t>(heads),
        T,
        H,
        T,
        H,
        static_cast<std::size_t>(head_dim),
        &g,
        !in_place};
  };
  rope::detail::run_with<rope::detail::scalar_kernels, Dim>(tab, job_for(in_a, out_a), dir, rnd);
  rope::detail::run_with<K, Dim>(tab, job_for(in_b, out_b), dir, rnd);
  const std::string what =
      std::string(rope::to_string(K::id)) + " M-RoPE gathered D=" + std::to_string(head_dim) +
      " d=" + std::to_string(d) + " " + rope::to_string(tab.layout()) +
      sections_name(sec) + (in_place ? " in place" : " out of place") +
      (dir == rope::direction::inverse ? " inverse" : " forward") +
      (rnd == rope::rounding::fast ? " fast" : "") +
      (tab.mode() == rope::table_mode::compact ? " compact" : " dense") + " out phase " +
      std::to_string(phase) + " Dim=" + std::to_string(Dim) + " in " + std::to_string(sizeof(TIn)) +
      "B out " + std::to_string(sizeof(TOut)) + "B";
  compare_runs(in_a, in_b, out_a, out_b, in_initial, out_initial,
               row_elements(n, tokens, heads, ts, hs, head_dim), in_place, what);
}

template <class K, std::size_t Dim, class TIn, class TOut, class Sections>
void check_gathered_modes(const tables& tabs, const Sections& sec, int head_dim,
                          std::uint64_t& seed) {
  using Real = rope::compute_type_t<TIn>;
  constexpr bool two_roundings = rope::detail::precise_store<Real, TOut>();
  for (bool compact : {false, true})
    for (rope::direction dir : {rope::direction::forward, rope::direction::inverse})
      for (rope::rounding rnd : {rope::rounding::accurate, rope::rounding::fast}) {
        if (rnd == rope::rounding::fast && !two_roundings) continue;
        const rope::table<Real>& tab = tabs.get<Real>(compact);
        check_gathered_case<K, Dim, TIn, TOut>(tab, sec, head_dim, false, dir, rnd, ++seed);
        if constexpr (std::is_same<TIn, TOut>::value)
          check_gathered_case<K, Dim, TIn, TOut>(tab, sec, head_dim, true, dir, rnd, ++seed);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

template <class K>
void check_gathered_rows() {
  struct model {
    int head_dim, rotary_dim;
    rope::mrope_sections sec;
  };
  const model models[] = {{128, 128, {16, 24, 24, false}},
                          {128, 128, {24, 20, 20, true}},
                          {128, 128, {20, 22, 22, false, true}},  // ERNIE-4.5-VL
                          {80, 80, {0, 20, 20, false}},
                          {48, 40, {4, 7, 9, false}},
                          {48, 40, {8, 6, 6, true}},
                          {48, 40, {6, 7, 7, false, true}},
                          {48, 40, {0, 10, 10, false, true}},         // Bailing, no temporal
                          {128, 128, {32, 16, 16, false, false, true}},  // openPangu
                          {48, 40, {3, 9, 8, false, false, true}}};
  std::uint64_t seed = 500;
  for (const model& m : models)
    for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
      const tables tabs(rope::make_spec(m.head_dim, m.rotary_dim, 1e6, l));
      check_gathered_modes<K, rope::dynamic, float, float>(tabs, m.sec, m.head_dim, seed);
      check_gathered_modes<K, rope::dynamic, double, double>(tabs, m.sec, m.head_dim, seed);
      check_gathered_modes<K, rope::dynamic, rope::float16, rope::float16>(tabs, m.sec, m.head_dim,
                                                                           seed);
      check_gathered_modes<K, rope::dynamic, rope::bfloat16, rope::bfloat16>(tabs, m.sec,
                                                                             m.head_dim, seed);
      check_gathered_modes<K, rope::dynamic, float, rope::bfloat16>(tabs, m.sec, m.head_dim, seed);
      if (m.rotary_dim == 128) {
        check_gathered_modes<K, 128, float, float>(tabs, m.sec, m.head_dim, seed);
        check_gathered_modes<K, 128, rope::bfloat16, rope::bfloat16>(tabs, m.sec, m.head_dim, seed);
        check_gathered_modes<K, 128, float, rope::float16>(tabs, m.sec, m.head_dim, seed);
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  struct xd_model {
    int head_dim, rotary_dim;
    rope::xdrope_sections sec;
  };
  const xd_model xd_models[] = {{128, 128, {16, 16, 16, 16}}, {48, 40, {3, 6, 7, 4}}};
  for (const xd_model& m : xd_models)
    for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
      const tables tabs(rope::make_spec(m.head_dim, m.rotary_dim, 1e6, l));
      check_gathered_modes<K, rope::dynamic, float, float>(tabs, m.sec, m.head_dim, seed);
      check_gathered_modes<K, rope::dynamic, rope::bfloat16, rope::bfloat16>(tabs, m.sec,
                                                                             m.head_dim, seed);
      check_gathered_modes<K, rope::dynamic, float, rope::float16>(tabs, m.sec, m.head_dim, seed);
      if (m.rotary_dim == 128)
        check_gathered_modes<K, 128, float, float>(tabs, m.sec, m.head_dim, seed);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

}  // namespace rope_test

// ROPE_SKIP_UNLESS(path): tests/isa_expectation.hpp.
#include "isa_expectation.hpp"
