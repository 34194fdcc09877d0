// Every vector path (AVX2, AVX-512, NEON) against the scalar path (rope/arch/scalar.hpp, the
// specification): bitwise identical outputs for every head dim of shared/testing.md, partial
// rotary dims, compile-time and dynamic Dim, alignment offsets 0..15 elements, both layouts,
// in and out of place, forward and inverse, float/double/fp16/bf16 storage and mixed
// float<->16-bit, dense and compact tables, with canaries around and between the rows. Then
// the dispatcher: a forced path really runs (per-path call counters), ROPE_FORCE_ISA is
// honoured, a path the CPU lacks is refused. Test names carry the ISA; paths this machine or
// build cannot run are skipped with the reason.
#define ROPE_TEST_COUNT_DISPATCH 1

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <rope/rope.hpp>

#include "test_scale.hpp"

namespace {

constexpr unsigned char kCanary = 0xA5;
const int kHeadDims[] = {2, 4, 6, 8, 14, 16, 30, 32, 62, 64, 66, 80, 96, 120, 128, 160, 192, 256, 320, 512};

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
    start = static_cast<std::size_t>((page_phase + 4096 - (base + 64) % 4096) % 4096) + 64 + offset * sizeof(T);
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
// see arch::scalar::opaque).
template <class T>
T random_value(std::mt19937_64& gen) {
  using traits = rope::storage_traits<T>;
  const std::uint64_t pick = gen();
  if (pick % 16 == 0)
    return traits::store(static_cast<typename traits::compute_type>(pick & 16 ? -0.0 : 0.0));
  if constexpr (rope::format_of_v<T> == rope::storage_format::fp16 ||
                rope::format_of_v<T> == rope::storage_format::bf16) {
    const std::uint16_t exp_mask = rope::format_of_v<T> == rope::storage_format::fp16 ? 0x7c00 : 0x7f80;
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
  std::ptrdiff_t head_pad;  // elements between rows of one token
  std::size_t out_phase = 2048;  // the output's page phase; the input's is 0 (see guarded)
};

// Runs kernels K and the scalar kernels on identical buffers and compares every byte: the
// rows bitwise, and every byte outside the rows unchanged (canaries, padding).
// Out of line (ROPE_NOINLINE): inlined into check_static_dims with the kernels it runs, one
// function held every case and the sanitizer builds spent over 25 minutes and 10 GB compiling
// it.
template <class K, std::size_t Dim, class TIn, class TOut>
ROPE_NOINLINE void check_case(const rope::table<rope::compute_type_t<TIn>>& tab, const shape& s, bool in_place,
                rope::direction dir, rope::rounding rnd, std::uint64_t seed) {
  const std::ptrdiff_t hs = s.head_dim + s.head_pad;
  const std::ptrdiff_t ts = s.heads * hs + 1;
  const std::size_t n = static_cast<std::size_t>(s.tokens * ts);
  std::mt19937_64 gen(seed);
  std::vector<std::int32_t> pos(static_cast<std::size_t>(s.tokens));
  for (auto& p : pos) p = static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(tab.length()));
  pos[0] = 0;

  guarded<TIn> in_a(n, s.in_offset), in_b(n, s.in_offset);
  guarded<TOut> out_a(n, s.out_offset, s.out_phase), out_b(n, s.out_offset, s.out_phase);
  std::vector<bool> is_row(n, false);
  for (int t = 0; t < s.tokens; ++t)
    for (int h = 0; h < s.heads; ++h)
      for (int k = 0; k < s.head_dim; ++k) {
        const std::size_t i = static_cast<std::size_t>(t * ts + h * hs + k);
        is_row[i] = true;
        const TIn v = random_value<TIn>(gen);
        std::memcpy(in_a.data() + i, &v, sizeof v);
        std::memcpy(in_b.data() + i, &v, sizeof v);
      }
  const std::vector<unsigned char> in_initial = in_b.bytes, out_initial = out_b.bytes;

  auto job_for = [&](guarded<TIn>& in, guarded<TOut>& out) {
    TOut* o = in_place ? reinterpret_cast<TOut*>(in.data()) : out.data();
    return rope::detail::job<TIn, TOut, std::int32_t>{
        in.data(), o, static_cast<std::size_t>(s.tokens), static_cast<std::size_t>(s.heads),
        static_cast<std::size_t>(ts), static_cast<std::size_t>(hs), static_cast<std::size_t>(ts),
        static_cast<std::size_t>(hs), static_cast<std::size_t>(s.head_dim), pos.data(), !in_place};
  };
  rope::detail::run_with<rope::detail::scalar_kernels, Dim>(tab, job_for(in_a, out_a), dir, rnd);
  rope::detail::run_with<K, Dim>(tab, job_for(in_b, out_b), dir, rnd);

  const std::string what = std::string(rope::to_string(K::id)) + " D=" + std::to_string(s.head_dim) +
                           " d=" + std::to_string(s.rotary_dim) + " " + rope::to_string(tab.layout()) +
                           (in_place ? " in place" : " out of place") +
                           (dir == rope::direction::inverse ? " inverse" : " forward") +
                           (rnd == rope::rounding::fast ? " fast" : "") +
                           " offsets " + std::to_string(s.in_offset) + "/" + std::to_string(s.out_offset) +
                           " out phase " + std::to_string(s.out_phase) +
                           (tab.mode() == rope::table_mode::compact ? " compact" : " dense") +
                           " Dim=" + std::to_string(Dim) + " in " + std::to_string(sizeof(TIn)) +
                           "B out " + std::to_string(sizeof(TOut)) + "B";
  ASSERT_EQ(0, std::memcmp(in_a.window(), in_b.window(), in_a.window_size(n))) << what;
  ASSERT_EQ(0, std::memcmp(out_a.window(), out_b.window(), out_a.window_size(n))) << what;
  // Nothing outside the rows changed (both runs are equal, so checking one suffices).
  auto outside_unchanged = [&](const std::vector<unsigned char>& now, const std::vector<unsigned char>& before,
                               std::size_t start, std::size_t elem) {
    for (std::size_t b = 0; b < now.size(); ++b) {
      const bool in_rows = b >= start && b < start + n * elem && is_row[(b - start) / elem];
      if (!in_rows && now[b] != before[b]) return false;
    }
    return true;
  };
  ASSERT_TRUE(outside_unchanged(in_b.bytes, in_initial, in_b.start, sizeof(TIn))) << what;
  ASSERT_TRUE(outside_unchanged(out_b.bytes, out_initial, out_b.start, sizeof(TOut))) << what;
  if (!in_place) {
    ASSERT_EQ(0, std::memcmp(in_b.bytes.data(), in_initial.data(), in_initial.size())) << what << ": input changed";
  }
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
    if constexpr (std::is_same<Real, float>::value) return compact ? *f_compact : *f_dense;
    else return compact ? *d_compact : *d_dense;
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
// (masked); rows of 8 or more vectors with and without such a tail (read in groups in place:
// 140, 256, 280); and out of place, half-split rows that hold one half's results and rows that
// take a pass per half (more than 4 vectors with 16-bit low parts or mixed sizes: 140, 160,
// 176, 256, 280 on AVX-512). bf16 in and out on AVX-512 runs rows in even/odd pairs of vectors
// (use_pairs): whole pairs (64, 128, 256; 96 and 160 interleaved), pairs then a vector (48, 80,
// 112, 176 interleaved; 96, 160 half-split), then a half-width one (80 half-split), then both
// (112, 176 half-split, 280 interleaved); the others (8-24, 140; 48 and 280 half-split) a vector
// at a time. On AVX2 (pairs of 16, no half-width vectors): whole pairs (16, 48, 64, 80, 96, 112,
// 128, 160, 176, 256 interleaved; 64, 96, 128, 160, 256 half-split), pairs then a vector (24,
// 280 interleaved; 48, 80, 112, 176 half-split), the others a vector at a time. Out of place, bf16
// outputs held in vectors (float or fp16 in, and bf16 rows not in pairs) are stored two vectors at
// a time (io::store_two), with odd counts (48, 80, 112, 176 interleaved on AVX-512) and even ones.
// The output sits 1 KiB above the input modulo 4096 (out of place, the x86 kernels then run
// backwards) and 1 KiB below (forwards), with and without a copied tail.
template <class K, std::size_t Dim>
void check_static_dim() {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (int extra : {8, 0}) {
      const int D = static_cast<int>(Dim);
      const tables tabs(rope::make_spec(D + extra, D, 5e5, l));  // extra dims: copied tail
      for (std::size_t off : {0u, 1u, 3u, 8u, 15u})
        for (std::size_t phase : {1024u, 3072u}) {
          const shape s{D + extra, D, 5, 3, off, 15 - off, 2, phase};
          check_all_types<K, Dim>(tabs, s, 100 + off);
          if (::testing::Test::HasFatalFailure()) return;
        }
    }
}

// ROPE_TEST_FEW_DIMS (the asan, tsan, noexcept and aarch64 presets): every compile-time Dim is
// a set of kernel instances, and compiling all of them under ASan took GCC more than 25 minutes
// and 10 GB. Five dims keep every row ending (masked, half vector, shifted), grouped rows with a
// tail, and both out-of-place half-split ways; the other builds run them all.
template <class K>
void check_static_dims() {
  check_static_dim<K, 8>();
  check_static_dim<K, 20>();
  check_static_dim<K, 80>();
  check_static_dim<K, 140>();
  check_static_dim<K, 176>();
#if !ROPE_TEST_FEW_DIMS
  check_static_dim<K, 12>();
  check_static_dim<K, 16>();
  check_static_dim<K, 24>();
  check_static_dim<K, 48>();
  check_static_dim<K, 64>();
  check_static_dim<K, 96>();
  check_static_dim<K, 112>();
  check_static_dim<K, 128>();
  check_static_dim<K, 160>();
  check_static_dim<K, 256>();
  check_static_dim<K, 280>();
#endif
}

#if ROPE_X86
// The direction of an out-of-place job in the x86 kernels (aliasing_back): backwards exactly
// when the output starts 1..2047 bytes above the input modulo 4096 and both have one element
// size; the equivalence tests above run both directions only because of it.
template <class Same, class Mixed>
void check_direction(Same same, Mixed mixed) {
  alignas(4096) static unsigned char buf[3 * 4096];
  const auto* in = reinterpret_cast<const float*>(buf + 4096);
  for (std::size_t at = 0; at <= 2 * 4096; at += 4) {
    const std::size_t above = at % 4096;  // (out - in) mod 4096, the input at 4096
    const auto* out = reinterpret_cast<const float*>(buf + at);
    EXPECT_EQ(above != 0 && above < 2048, same(in, out)) << "output at " << at << ", input at 4096";
    EXPECT_FALSE(mixed(in, reinterpret_cast<const rope::float16*>(buf + at))) << at;
  }
}
#endif

#define ROPE_SKIP_UNLESS(isa_value)                                                           \
  if (!rope::detail::cpu_supports(isa_value))                                                 \
  GTEST_SKIP() << "this CPU (or build target) cannot run " << rope::to_string(isa_value)

#if ROPE_X86
TEST(SimdAvx2, BitwiseEqualsScalarEveryHeadDimOffsetTypeLayout) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_every_head_dim<rope::detail::avx2_kernels>();
}
TEST(SimdAvx2, BitwiseEqualsScalarCompileTimeDims) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_static_dims<rope::detail::avx2_kernels>();
}
TEST(SimdAvx512, BitwiseEqualsScalarEveryHeadDimOffsetTypeLayout) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_every_head_dim<rope::detail::avx512_kernels>();
}
TEST(SimdAvx512, BitwiseEqualsScalarCompileTimeDims) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_static_dims<rope::detail::avx512_kernels>();
}
TEST(SimdNeon, BitwiseEqualsScalarEveryHeadDimOffsetTypeLayout) {
  GTEST_SKIP() << "NEON kernels exist only in AArch64 builds (run under qemu-aarch64 in CI)";
}
TEST(SimdAvx2, OutOfPlaceRunsBackwardsJustAboveTheInputModulo4096) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_direction([](const float* i, const float* o) { return rope::arch::avx2::detail::aliasing_back(i, o); },
                  [](const float* i, const rope::float16* o) { return rope::arch::avx2::detail::aliasing_back(i, o); });
}
TEST(SimdAvx512, OutOfPlaceRunsBackwardsJustAboveTheInputModulo4096) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_direction([](const float* i, const float* o) { return rope::arch::avx512::detail::aliasing_back(i, o); },
                  [](const float* i, const rope::float16* o) { return rope::arch::avx512::detail::aliasing_back(i, o); });
}
#endif

#if ROPE_NEON
TEST(SimdNeon, BitwiseEqualsScalarEveryHeadDimOffsetTypeLayout) {
  check_every_head_dim<rope::detail::neon_kernels>();
}
TEST(SimdNeon, BitwiseEqualsScalarCompileTimeDims) { check_static_dims<rope::detail::neon_kernels>(); }
#endif

// --- 16-bit conversions of each path against the exact scalar ones --------------------------

// Each path's vector load and store of a 16-bit format, called directly (in the path's target
// region), over whole vectors.
#if ROPE_X86
template <class T16>
ROPE_AVX512_FN void avx512_widen(const T16* p, float* out, std::size_t n) {
  namespace k = rope::arch::avx512::detail;
  for (std::size_t i = 0; i < n; i += 16)
    k::io<float, rope::storage_format::f32>::store(out + i, k::io<float, rope::format_of_v<T16>>::load(p + i));
}
template <class T16>
ROPE_AVX512_FN void avx512_narrow(const float* p, T16* out, std::size_t n) {
  namespace k = rope::arch::avx512::detail;
  for (std::size_t i = 0; i < n; i += 16)
    k::io<float, rope::format_of_v<T16>>::store(out + i, k::io<float, rope::storage_format::f32>::load(p + i));
}
// bf16 through a path's even/odd pairs (bf16_pairs: 2N elements per load and store), the floats
// in element order: a block's N evens and N odds interleaved, and dealt back.
void interleave_pairs(const float* even, const float* odd, float* out, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    out[2 * k] = even[k];
    out[2 * k + 1] = odd[k];
  }
}
void deal_pairs(const float* p, float* even, float* odd, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    even[k] = p[2 * k];
    odd[k] = p[2 * k + 1];
  }
}
ROPE_AVX512_FN void avx512_pair_widen(const rope::bfloat16* p, float* out, std::size_t n) {
  using B = rope::arch::avx512::detail::bf16_pairs<float>;
  alignas(64) float even[16], odd[16];
  for (std::size_t i = 0; i < n; i += 32) {
    __m512 e, o;
    B::load(p + i, e, o);
    _mm512_store_ps(even, e);
    _mm512_store_ps(odd, o);
    interleave_pairs(even, odd, out + i, 16);
  }
}
ROPE_AVX512_FN void avx512_pair_narrow(const float* p, rope::bfloat16* out, std::size_t n) {
  using B = rope::arch::avx512::detail::bf16_pairs<float>;
  alignas(64) float even[16], odd[16];
  for (std::size_t i = 0; i < n; i += 32) {
    deal_pairs(p + i, even, odd, 16);
    B::store(out + i, _mm512_load_ps(even), _mm512_load_ps(odd));
  }
}
ROPE_AVX2_FN void avx2_pair_widen(const rope::bfloat16* p, float* out, std::size_t n) {
  using B = rope::arch::avx2::detail::bf16_pairs<float>;
  alignas(32) float even[8], odd[8];
  for (std::size_t i = 0; i < n; i += 16) {
    __m256 e, o;
    B::load(p + i, e, o);
    _mm256_store_ps(even, e);
    _mm256_store_ps(odd, o);
    interleave_pairs(even, odd, out + i, 8);
  }
}
ROPE_AVX2_FN void avx2_pair_narrow(const float* p, rope::bfloat16* out, std::size_t n) {
  using B = rope::arch::avx2::detail::bf16_pairs<float>;
  alignas(32) float even[8], odd[8];
  for (std::size_t i = 0; i < n; i += 16) {
    deal_pairs(p + i, even, odd, 8);
    B::store(out + i, _mm256_load_ps(even), _mm256_load_ps(odd));
  }
}
// bf16 stored two vectors at a time (io::store_two: 32 elements per store on AVX-512, 16 on AVX2,
// as out-of-place rows with a bf16 output store them).
ROPE_AVX512_FN void avx512_two_narrow(const float* p, rope::bfloat16* out, std::size_t n) {
  namespace k = rope::arch::avx512::detail;
  using F32 = k::io<float, rope::storage_format::f32>;
  for (std::size_t i = 0; i < n; i += 32)
    k::io<float, rope::storage_format::bf16>::store_two(out + i, F32::load(p + i),
                                                        F32::load(p + i + 16));
}
ROPE_AVX2_FN void avx2_two_narrow(const float* p, rope::bfloat16* out, std::size_t n) {
  namespace k = rope::arch::avx2::detail;
  using F32 = k::io<float, rope::storage_format::f32>;
  for (std::size_t i = 0; i < n; i += 16)
    k::io<float, rope::storage_format::bf16>::store_two(out + i, F32::load(p + i),
                                                        F32::load(p + i + 8));
}
template <class T16>
ROPE_AVX2_FN void avx2_widen(const T16* p, float* out, std::size_t n) {
  namespace k = rope::arch::avx2::detail;
  for (std::size_t i = 0; i < n; i += 8)
    k::io<float, rope::storage_format::f32>::store(out + i, k::io<float, rope::format_of_v<T16>>::load(p + i));
}
template <class T16>
ROPE_AVX2_FN void avx2_narrow(const float* p, T16* out, std::size_t n) {
  namespace k = rope::arch::avx2::detail;
  for (std::size_t i = 0; i < n; i += 8)
    k::io<float, rope::format_of_v<T16>>::store(out + i, k::io<float, rope::storage_format::f32>::load(p + i));
}
#endif
#if ROPE_NEON
template <class T16>
void neon_widen(const T16* p, float* out, std::size_t n) {
  namespace k = rope::arch::neon::detail;
  for (std::size_t i = 0; i < n; i += 4)
    k::io<float, rope::storage_format::f32>::store(out + i, k::io<float, rope::format_of_v<T16>>::load(p + i));
}
template <class T16>
void neon_narrow(const float* p, T16* out, std::size_t n) {
  namespace k = rope::arch::neon::detail;
  for (std::size_t i = 0; i < n; i += 4)
    k::io<float, rope::format_of_v<T16>>::store(out + i, k::io<float, rope::storage_format::f32>::load(p + i));
}
#endif

template <class T>
std::uint32_t raw(const T& x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, sizeof x);
  return u;
}

// All 65536 patterns through the vector load; every pattern's value, one float ulp either side
// of the midpoint to the next pattern, and 2^20 random floats (NaNs of both signs, signalling
// and quiet, included) through the vector store: bitwise the scalar conversions.
template <class T16>
void check_conversions(void (*widen)(const T16*, float*, std::size_t),
                       void (*narrow)(const float*, T16*, std::size_t)) {
  std::vector<T16> all(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    std::memcpy(&all[b], &h, sizeof h);
  }
  std::vector<float> wide(all.size());
  widen(all.data(), wide.data(), all.size());
  for (std::uint32_t b = 0; b < 65536; ++b)
    ASSERT_EQ(raw(wide[b]), raw(rope::storage_traits<T16>::load(all[b]))) << "load of pattern " << std::hex << b;

  std::vector<float> floats;
  const std::uint32_t half_step = rope::format_of_v<T16> == rope::storage_format::fp16 ? 0x1000u : 0x8000u;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint32_t vb = raw(rope::storage_traits<T16>::load(all[b]));
    for (std::uint32_t x : {vb, vb + half_step - 1, vb + half_step, vb + half_step + 1}) {
      float f;
      std::memcpy(&f, &x, 4);
      floats.push_back(f);
    }
  }
  std::mt19937 gen(99);
  for (int i = 0; i < (1 << 20); ++i) {
    const auto x = static_cast<std::uint32_t>(gen());
    float f;
    std::memcpy(&f, &x, 4);
    floats.push_back(f);
  }
  std::vector<T16> narrowed(floats.size());
  narrow(floats.data(), narrowed.data(), floats.size());
  for (std::size_t i = 0; i < floats.size(); ++i)
    ASSERT_EQ(raw(narrowed[i]), raw(rope::storage_traits<T16>::store(floats[i])))
        << "store of float bits " << std::hex << raw(floats[i]);
}

#if ROPE_X86
// Whether to sweep all 2^32 float patterns (about 4 s per path in Release): not under
// sanitizers or ROPE_TEST_SCALE=quick.
bool sweep_every_float() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return false;
#endif
#endif
  return !rope_test::quick_scale();
}

// Every float bit pattern through a path's bf16 store, bitwise rope::float_to_bf16 (where the
// build has AVX512_BF16, this checks vcvtneps2bf16, or vcvtne2ps2bf16 for the pair store, the
// class test on results holding a zero word and the fall-back to the integer form on vectors
// holding a subnormal). Then blocks of zeros among normal values (no subnormal): the sweep's
// blocks holding a zero all hold subnormals too, so a zero word that needs no fall-back is
// checked here; and blocks with one subnormal. Reduced (sweep_every_float): every pattern whose
// exponent is 0 or 255 (zeros, subnormals, Inf, NaN) and the patterns of one upper half in 257
// otherwise.
void check_bf16_store_every_float(void (*narrow)(const float*, rope::bfloat16*, std::size_t)) {
  const bool every = sweep_every_float();
  std::vector<float> f(65536);
  std::vector<rope::bfloat16> out(f.size());
  for (std::uint32_t hi = 0; hi < 65536; ++hi) {
    const std::uint32_t exponent = (hi >> 7) & 0xffu;
    if (!every && exponent != 0 && exponent != 0xffu && hi % 257 != 0) continue;
    for (std::uint32_t lo = 0; lo < 65536; ++lo) {
      const std::uint32_t bits = hi << 16 | lo;
      std::memcpy(&f[lo], &bits, 4);
    }
    narrow(f.data(), out.data(), f.size());
    for (std::uint32_t lo = 0; lo < 65536; ++lo)  // ASSERT_EQ per element would cost more
      if (raw(out[lo]) != raw(rope::storage_traits<rope::bfloat16>::store(f[lo]))) {
        ADD_FAILURE() << "store of float bits " << std::hex << (hi << 16 | lo) << ": " << raw(out[lo])
                      << ", scalar " << raw(rope::storage_traits<rope::bfloat16>::store(f[lo]));
        return;
      }
  }
  std::vector<float> mixed(64);
  for (std::size_t i = 0; i < mixed.size(); ++i)
    mixed[i] = i % 3 == 0 ? (i % 2 ? -0.0f : 0.0f) : 1.0f + static_cast<float>(i) / 128.0f;
  for (bool all_zeros : {true, false}) {  // zeros of both signs, then zeros among normals
    std::vector<float> f2(mixed);
    if (all_zeros) {
      f2.assign(64, 0.0f);
      f2[5] = -0.0f;
    }
    std::vector<rope::bfloat16> o2(f2.size());
    narrow(f2.data(), o2.data(), f2.size());
    for (std::size_t i = 0; i < f2.size(); ++i)
      ASSERT_EQ(raw(o2[i]), raw(rope::storage_traits<rope::bfloat16>::store(f2[i])))
          << "zeros block, element " << i;
  }
  // One subnormal among normal values, at each position of a 64-element block: the sweep's
  // blocks share their upper half, so every vector of a two-vector store (store_two) holds a
  // subnormal or none does; here one vector does and the other not, either one.
  for (std::size_t at = 0; at < mixed.size(); ++at)
    for (float sub : {1e-40f, -3e-39f}) {
      std::vector<float> f3(mixed.size());
      for (std::size_t i = 0; i < f3.size(); ++i) f3[i] = 1.0f + static_cast<float>(i) / 128.0f;
      f3[at] = sub;
      std::vector<rope::bfloat16> o3(f3.size());
      narrow(f3.data(), o3.data(), f3.size());
      for (std::size_t i = 0; i < f3.size(); ++i)
        ASSERT_EQ(raw(o3[i]), raw(rope::storage_traits<rope::bfloat16>::store(f3[i])))
            << "one subnormal at " << at << ", element " << i;
    }
}

TEST(SimdAvx2, Bf16StoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_bf16_store_every_float(avx2_narrow<rope::bfloat16>);
}
TEST(SimdAvx512, Bf16StoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_bf16_store_every_float(avx512_narrow<rope::bfloat16>);
}
TEST(SimdAvx512, Bf16PairStoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_bf16_store_every_float(avx512_pair_narrow);
}
TEST(SimdAvx2, Bf16PairStoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_bf16_store_every_float(avx2_pair_narrow);
}
TEST(SimdAvx2, Bf16TwoVectorStoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_bf16_store_every_float(avx2_two_narrow);
}
TEST(SimdAvx512, Bf16TwoVectorStoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_bf16_store_every_float(avx512_two_narrow);
}
TEST(SimdAvx512, Bf16PairConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_conversions<rope::bfloat16>(avx512_pair_widen, avx512_pair_narrow);
}
TEST(SimdAvx2, Bf16PairConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_conversions<rope::bfloat16>(avx2_pair_widen, avx2_pair_narrow);
}
TEST(SimdAvx2, Fp16ConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_conversions<rope::float16>(avx2_widen<rope::float16>, avx2_narrow<rope::float16>);
}
TEST(SimdAvx2, Bf16ConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_conversions<rope::bfloat16>(avx2_widen<rope::bfloat16>, avx2_narrow<rope::bfloat16>);
}
TEST(SimdAvx512, Fp16ConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_conversions<rope::float16>(avx512_widen<rope::float16>, avx512_narrow<rope::float16>);
}
TEST(SimdAvx512, Bf16ConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_conversions<rope::bfloat16>(avx512_widen<rope::bfloat16>, avx512_narrow<rope::bfloat16>);
}
#endif
#if ROPE_NEON
TEST(SimdNeon, Fp16ConversionsEqualScalarOnAllPatterns) {
  check_conversions<rope::float16>(neon_widen<rope::float16>, neon_narrow<rope::float16>);
}
TEST(SimdNeon, Bf16ConversionsEqualScalarOnAllPatterns) {
  check_conversions<rope::bfloat16>(neon_widen<rope::bfloat16>, neon_narrow<rope::bfloat16>);
}
#endif

// NaN results of the vector stores: NaN, quiet, sign kept (payload bits may differ by path only
// through which NaN operand the FMA propagates, so they are not compared).
template <class K, class T16>
void check_nan_stores() {
  const int D = 16;
  const rope::spec sp = rope::make_spec(D, D, 1e4, rope::layout::half_split);
  const auto tab = rope::table<float>::build(rope::default_frequencies(sp), sp.layout, 8);
  std::vector<float> x(D, 1.0f);
  const std::uint32_t nans[] = {0x7f800001u, 0x7fc00000u, 0xffc00001u, 0x7fbfffffu};
  for (std::size_t j = 0; j < 4; ++j) std::memcpy(&x[j], &nans[j], 4);
  std::vector<T16> y(D);
  const std::int32_t pos[1] = {3};
  auto jb = rope::detail::job<float, T16, std::int32_t>{x.data(), y.data(), 1, 1, D, D, D, D, D, pos, true};
  rope::detail::run_with<K, rope::dynamic>(*tab, jb, rope::direction::forward,
                                           rope::rounding::accurate);
  for (std::size_t j = 0; j < 4; ++j)
    for (std::size_t k : {j, j + D / 2}) {
      const float v = rope::storage_traits<T16>::load(y[k]);
      EXPECT_TRUE(std::isnan(v)) << k;
    }
  for (std::size_t j = 4; j < D / 2; ++j) EXPECT_FALSE(std::isnan(rope::storage_traits<T16>::load(y[j]))) << j;
}

#if ROPE_X86
TEST(SimdAvx2, NanInputsGiveNanOnlyInTheirPair) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_nan_stores<rope::detail::avx2_kernels, rope::float16>();
  check_nan_stores<rope::detail::avx2_kernels, rope::bfloat16>();
}
TEST(SimdAvx512, NanInputsGiveNanOnlyInTheirPair) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_nan_stores<rope::detail::avx512_kernels, rope::float16>();
  check_nan_stores<rope::detail::avx512_kernels, rope::bfloat16>();
}
#endif
#if ROPE_NEON
TEST(SimdNeon, NanInputsGiveNanOnlyInTheirPair) {
  check_nan_stores<rope::detail::neon_kernels, rope::float16>();
  check_nan_stores<rope::detail::neon_kernels, rope::bfloat16>();
}
#endif

// --- dispatch -------------------------------------------------------------------------------

unsigned long calls(rope::isa i) { return rope::detail::isa_calls[static_cast<int>(i)].load(); }

// Calls rope::apply once and returns which path counted the call.
rope::isa path_of_one_apply(std::vector<float>& x) {
  auto tab = rope::get_table<float>(rope::make_spec(128, 128, 1e4, rope::layout::half_split), 64);
  unsigned long before[5];
  for (int i = 1; i < 5; ++i) before[i] = rope::detail::isa_calls[i].load();
  const std::int32_t pos[2] = {5, 63};
  EXPECT_EQ(rope::apply<float>(*tab, rope::packed_heads(x.data(), 2, 4, 128), pos), rope::status::ok);
  rope::isa ran = rope::isa::scalar;
  int n = 0;
  for (int i = 1; i < 5; ++i)
    if (rope::detail::isa_calls[i].load() != before[i]) {
      ran = static_cast<rope::isa>(i);
      ++n;
    }
  EXPECT_EQ(n, 1) << "exactly one path runs per call";
  return ran;
}

// The first question asked of the dispatcher in this process: the environment's choice.
TEST(Dispatch, EnvironmentVariableIsHonoured) {
  const char* env = std::getenv("ROPE_FORCE_ISA");
#if defined(ROPE_RUNTIME_DISPATCH)
  rope::isa wanted;
  if (env == nullptr || !rope::detail::parse_isa(env, wanted)) {
    EXPECT_EQ(rope::active_isa(), rope::detail::best_isa());
    GTEST_SKIP() << "ROPE_FORCE_ISA not set: the best path " << rope::to_string(rope::active_isa())
                 << " is active";
  }
  if (!rope::detail::cpu_supports(wanted)) {
    EXPECT_EQ(rope::active_isa(), rope::detail::best_isa()) << "an unsupported choice is refused";
    return;
  }
  EXPECT_EQ(rope::active_isa(), wanted);
  std::vector<float> x(2 * 4 * 128, 0.5f);
  EXPECT_EQ(path_of_one_apply(x), wanted) << "the forced path is the one that ran";
  std::printf("ROPE_FORCE_ISA=%s: rope::apply ran on %s\n", env, rope::to_string(rope::active_isa()));
#else
  EXPECT_EQ(rope::active_isa(), rope::compiled_isa());
  GTEST_SKIP() << "compile-time dispatch (" << rope::to_string(rope::compiled_isa())
               << "): ROPE_FORCE_ISA applies to ROPE_RUNTIME_DISPATCH builds" << (env ? "" : "");
#endif
}

TEST(Dispatch, ForcedPathRunsAndGivesTheSameBits) {
  std::vector<float> reference;
  int paths = 0;
  for (rope::isa i : {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512, rope::isa::neon}) {
    const bool ok = rope::force_isa(i);
#if defined(ROPE_RUNTIME_DISPATCH)
    EXPECT_EQ(ok, rope::detail::cpu_supports(i)) << rope::to_string(i);
#else
    EXPECT_EQ(ok, i == rope::compiled_isa()) << rope::to_string(i);
#endif
    if (!ok) continue;
    EXPECT_EQ(rope::active_isa(), i);
    std::vector<float> x(2 * 4 * 128);
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = std::sin(static_cast<float>(k));
    EXPECT_EQ(path_of_one_apply(x), i) << "forced " << rope::to_string(i);
    if (reference.empty()) reference = x;
    EXPECT_EQ(0, std::memcmp(x.data(), reference.data(), x.size() * sizeof(float))) << rope::to_string(i);
    ++paths;
  }
  std::printf("paths forced and run: %d (active now %s)\n", paths, rope::to_string(rope::active_isa()));
  EXPECT_GE(paths, 1);
}

TEST(Dispatch, PathTheCpuLacksIsRefused) {
  const rope::isa before = rope::active_isa();
#if ROPE_X86
  EXPECT_FALSE(rope::force_isa(rope::isa::neon));
#else
  EXPECT_FALSE(rope::force_isa(rope::isa::avx2));
#endif
  EXPECT_EQ(rope::active_isa(), before);
  EXPECT_EQ(calls(rope::isa::neon) + 0, calls(rope::isa::neon));
}

// rope::apply with Dim = rope::dynamic: rotary dims in ROPE_DYNAMIC_DIMS (64, 80, 96, 128, 256 by
// default) run the kernels compiled for that dim, others (112, and the partial dims 40, 48, 56)
// the kernels for a run-time dim. Either way the bits are the scalar specification's, in place
// and out of place, with the output 1 KiB above the input modulo 4096 (compiled x86 kernels
// then run backwards) and 1 KiB below, and a copied tail where the rotary dim is partial.
template <class TIn, class TOut>
void check_dynamic_call(int D, int d, rope::layout l, bool in_place, std::size_t phase,
                        std::uint64_t seed) {
  using Real = rope::compute_type_t<TIn>;
  const rope::spec sp = rope::make_spec(D, d, 1e4, l);
  const auto tab = rope::table<Real>::build(rope::default_frequencies(sp), l, 64, rope::table_mode::dense);
  constexpr int T = 3, H = 5;
  const auto n = static_cast<std::size_t>(T * H * D);
  std::mt19937_64 gen(seed);
  std::vector<std::int32_t> pos(T);
  for (auto& p : pos) p = static_cast<std::int32_t>(gen() % 64);
  guarded<TIn> in_a(n, 0), in_b(n, 0);
  guarded<TOut> out_a(n, 0, phase), out_b(n, 0, phase);
  for (std::size_t i = 0; i < n; ++i) {
    const TIn v = random_value<TIn>(gen);
    std::memcpy(in_a.data() + i, &v, sizeof v);
    std::memcpy(in_b.data() + i, &v, sizeof v);
  }
  const auto z = static_cast<std::size_t>(D);
  TOut* spec_out = in_place ? reinterpret_cast<TOut*>(in_a.data()) : out_a.data();
  rope::detail::run_with<rope::detail::scalar_kernels, rope::dynamic>(
      *tab,
      rope::detail::job<TIn, TOut, std::int32_t>{in_a.data(), spec_out, T, H, H * z, z, H * z, z, z,
                                                 pos.data(), !in_place},
      rope::direction::forward, rope::rounding::accurate);
  rope::status st = rope::status::ok;
  if constexpr (std::is_same<TIn, TOut>::value) {
    if (in_place) st = rope::apply<TIn>(*tab, rope::packed_heads(in_b.data(), T, H, D), pos.data());
  }
  if (!in_place)
    st = rope::apply<TIn>(*tab, rope::packed_heads<const TIn>(in_b.data(), T, H, D),
                          rope::packed_heads(out_b.data(), T, H, D), pos.data());
  ASSERT_EQ(st, rope::status::ok);
  const std::string what = std::string(rope::to_string(rope::active_isa())) + " D=" + std::to_string(D) +
                           " d=" + std::to_string(d) + " " + rope::to_string(l) +
                           (in_place ? " in place" : " out of place") + " out phase " +
                           std::to_string(phase) + " in " + std::to_string(sizeof(TIn)) + "B out " +
                           std::to_string(sizeof(TOut)) + "B";
  ASSERT_EQ(0, std::memcmp(in_a.window(), in_b.window(), in_a.window_size(n))) << what;
  ASSERT_EQ(0, std::memcmp(out_a.window(), out_b.window(), out_a.window_size(n))) << what;
}

TEST(Dispatch, DynamicDimGivesTheSpecificationsBits) {
  std::uint64_t seed = 11;
  int cases = 0;
  for (int D : {64, 80, 96, 112, 128, 256})
    for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
      for (int d : {D, D / 2})
        for (std::size_t phase : {1024u, 3072u}) {
          for (bool in_place : {true, false}) {
            check_dynamic_call<float, float>(D, d, l, in_place, phase, ++seed);
            check_dynamic_call<rope::float16, rope::float16>(D, d, l, in_place, phase, ++seed);
            check_dynamic_call<rope::bfloat16, rope::bfloat16>(D, d, l, in_place, phase, ++seed);
            cases += 3;
          }
          check_dynamic_call<float, rope::bfloat16>(D, d, l, false, phase, ++seed);
          ++cases;
          if (::testing::Test::HasFatalFailure()) return;
        }
  std::printf("dynamic-Dim calls checked: %d\n", cases);
}

TEST(Dispatch, UserTypeWithoutFormatRunsScalar) {
  // double in, double out is vectorised; a TOut of another compute type is not: the scalar
  // path runs whatever is forced.
  auto tab = rope::get_table<double>(rope::make_spec(64, 64, 1e4, rope::layout::interleaved), 8);
  std::vector<double> x(64, 0.25);
  const unsigned long s0 = calls(rope::isa::scalar);
  ASSERT_EQ(rope::apply<double>(*tab, 3, x.data()), rope::status::ok);
  if (rope::active_isa() == rope::isa::scalar) EXPECT_EQ(calls(rope::isa::scalar), s0 + 1);
  else EXPECT_EQ(calls(rope::isa::scalar), s0);
}

}  // namespace
