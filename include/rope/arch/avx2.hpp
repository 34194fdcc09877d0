// rope/arch/avx2.hpp: AVX2 kernels (AVX2 with FMA and F16C). Same functions and bits as
// rope/arch/scalar.hpp (the specification) and rope/arch/avx512.hpp; compare them side by side.
//
// 8 floats (or 4 doubles) per vector; the arithmetic is that of avx512.hpp. Tails: float and
// double use vmaskmov loads and stores (masked-off lanes are neither read nor written, and do
// not fault); 16-bit types have no masked move in AVX2, so the n valid elements are copied
// through a 16-byte local buffer. fp16 converts with F16C (vcvtph2ps / vcvtps2ph, round to
// nearest even); bf16 with integer operations identical to rope::float_to_bf16.
//
// This file holds what is AVX2's own: the vector types, conversions and tail masks
// (detail::vec, detail::io, detail::half_vectors: none here, and detail::bf16_pairs for bf16
// rows as even/odd pairs). The kernels written over them (rotate_row_held, rotate_row_dyn,
// run) are the shared text rope/arch/detail/kernel_body.inc, included at the end inside this
// namespace and this target, as avx512.hpp does with its own types.
//
// Every function carries the target attribute unless the compiler's flags already enable the
// ISA, so a baseline x86-64 build can hold these kernels for runtime dispatch (rope/isa.hpp).
#pragma once

#include "rope/isa.hpp"

#if ROPE_X86

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "rope/arch/scalar.hpp"
#include "rope/spec.hpp"
#include "rope/storage.hpp"
#include "rope/table.hpp"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define ROPE_AVX2_FN inline
#else
#define ROPE_AVX2_FN inline __attribute__((target("avx2,fma,f16c")))
#endif

ROPE_BEGIN_NAMESPACE
namespace arch {
namespace avx2 {
namespace detail {

// Lane i is on (all ones) for i < n.
ROPE_AVX2_FN __m256i lane_mask32(std::size_t n) noexcept {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
ROPE_AVX2_FN __m256i lane_mask64(std::size_t n) noexcept {
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(n)),
                            _mm256_setr_epi64x(0, 1, 2, 3));
}

// Vector arithmetic of the compute type; the mask of a tail is its lane count.
template <class Real>
struct vec;

template <>
struct vec<float> {
  using V = __m256;
  using M = std::size_t;
  static constexpr std::size_t N = 8;
  ROPE_AVX2_FN static M mask(std::size_t n) noexcept { return n; }
  ROPE_AVX2_FN static V load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  ROPE_AVX2_FN static V load(const float* p, M n) noexcept {
    return _mm256_maskload_ps(p, lane_mask32(n));
  }
  ROPE_AVX2_FN static V mul(V a, V b) noexcept { return _mm256_mul_ps(a, b); }
  ROPE_AVX2_FN static V fmadd(V a, V b, V c) noexcept { return _mm256_fmadd_ps(a, b, c); }
  ROPE_AVX2_FN static V fmsub(V a, V b, V c) noexcept { return _mm256_fmsub_ps(a, b, c); }
  ROPE_AVX2_FN static V swap_pairs(V a) noexcept { return _mm256_permute_ps(a, 0xB1); }
  ROPE_AVX2_FN static V add(V a, V b) noexcept { return _mm256_add_ps(a, b); }
};

template <>
struct vec<double> {
  using V = __m256d;
  using M = std::size_t;
  static constexpr std::size_t N = 4;
  ROPE_AVX2_FN static M mask(std::size_t n) noexcept { return n; }
  ROPE_AVX2_FN static V load(const double* p) noexcept { return _mm256_loadu_pd(p); }
  ROPE_AVX2_FN static V load(const double* p, M n) noexcept {
    return _mm256_maskload_pd(p, lane_mask64(n));
  }
  ROPE_AVX2_FN static V mul(V a, V b) noexcept { return _mm256_mul_pd(a, b); }
  ROPE_AVX2_FN static V fmadd(V a, V b, V c) noexcept { return _mm256_fmadd_pd(a, b, c); }
  ROPE_AVX2_FN static V fmsub(V a, V b, V c) noexcept { return _mm256_fmsub_pd(a, b, c); }
  ROPE_AVX2_FN static V swap_pairs(V a) noexcept { return _mm256_permute_pd(a, 0x5); }
};

// The first n (< 8) 16-bit elements at p, zero above; and their store back.
ROPE_AVX2_FN __m128i load16_partial(const void* p, std::size_t n) noexcept {
  alignas(16) std::uint16_t buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(buf, p, n * sizeof(std::uint16_t));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
}
ROPE_AVX2_FN void store16_partial(void* p, __m128i h, std::size_t n) noexcept {
  alignas(16) std::uint16_t buf[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(buf), h);
  std::memcpy(p, buf, n * sizeof(std::uint16_t));
}

// Loads and stores of one storage format as vectors of the compute type: full vectors, and
// the first n lanes.
template <class Real, storage_format F>
struct io;

template <>
struct io<double, storage_format::f64> {
  using V = __m256d;
  ROPE_AVX2_FN static V load(const void* p) noexcept {
    return _mm256_loadu_pd(static_cast<const double*>(p));
  }
  ROPE_AVX2_FN static V load(const void* p, std::size_t n) noexcept {
    return _mm256_maskload_pd(static_cast<const double*>(p), lane_mask64(n));
  }
  ROPE_AVX2_FN static void store(void* p, V v) noexcept {
    _mm256_storeu_pd(static_cast<double*>(p), v);
  }
  ROPE_AVX2_FN static void store(void* p, V v, std::size_t n) noexcept {
    _mm256_maskstore_pd(static_cast<double*>(p), lane_mask64(n), v);
  }
};

template <>
struct io<float, storage_format::f32> {
  using V = __m256;
  ROPE_AVX2_FN static V load(const void* p) noexcept {
    return _mm256_loadu_ps(static_cast<const float*>(p));
  }
  ROPE_AVX2_FN static V load(const void* p, std::size_t n) noexcept {
    return _mm256_maskload_ps(static_cast<const float*>(p), lane_mask32(n));
  }
  ROPE_AVX2_FN static void store(void* p, V v) noexcept {
    _mm256_storeu_ps(static_cast<float*>(p), v);
  }
  ROPE_AVX2_FN static void store(void* p, V v, std::size_t n) noexcept {
    _mm256_maskstore_ps(static_cast<float*>(p), lane_mask32(n), v);
  }
};

template <>
struct io<float, storage_format::fp16> {
  using V = __m256;
  ROPE_AVX2_FN static V load(const void* p) noexcept {
    return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  ROPE_AVX2_FN static V load(const void* p, std::size_t n) noexcept {
    return _mm256_cvtph_ps(load16_partial(p, n));
  }
  ROPE_AVX2_FN static __m128i round(V v) noexcept {
    return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
  }
  ROPE_AVX2_FN static void store(void* p, V v) noexcept {
    _mm_storeu_si128(static_cast<__m128i*>(p), round(v));
  }
  ROPE_AVX2_FN static void store(void* p, V v, std::size_t n) noexcept {
    store16_partial(p, round(v), n);
  }
};

template <>
struct io<float, storage_format::bf16> {
  using V = __m256;
  ROPE_AVX2_FN static V widen(__m128i h) noexcept {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  ROPE_AVX2_FN static V load(const void* p) noexcept {
    return widen(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
  ROPE_AVX2_FN static V load(const void* p, std::size_t n) noexcept {
    return widen(load16_partial(p, n));
  }
  // rope::float_to_bf16 on 8 lanes: NaN -> quiet NaN; else add 0x7fff + lowest kept bit.
  ROPE_AVX2_FN static __m128i round(V v) noexcept {
#if defined(__AVX512BF16__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    // Compiled for a CPU with AVX512_BF16 (this path then runs as the AVX-512 path's
    // half-vector tail, or forced): vcvtneps2bf16 and the same zero-word check as there
    // (rope/arch/avx512.hpp), since it reads subnormal inputs as zero.
    const __m128i c = (__m128i)_mm256_cvtneps_pbh(v);
    if (__builtin_expect(_mm_testn_epi16_mask(c, _mm_set1_epi16(0x7fff)) == 0, 1)) return c;
    if (_mm256_fpclass_ps_mask(v, 0x20) == 0) return c;  // zeros, no subnormal: c is right
#endif
    const __m256i r = has_nan(v, v) ? round_lanes(v) : words(v);
    // Every lane is <= 0xffff, so the unsigned-saturating pack is a plain narrowing.
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  }
  // The integer form: x + 0x7fff + (x's lowest kept bit) puts every lane's bf16, rounded to
  // nearest even, in its high half, except a NaN's (the add can carry its fraction into the
  // sign: 0x7fffffff). Four operations, where round_lanes adds the NaN fix-up (a compare, a
  // quieted copy, a blend, and a shift to each lane's low half). The stores take the four where
  // none of their lanes is NaN, one compare and a branch per 8 or 16 lanes (has_nan). In a
  // -march=haswell build, side by side, bf16 in place took 0.77-0.84 of the time with
  // rounding::accurate and 0.71-0.79 with rounding::fast (every D, layout and T of apply_bench;
  // two comparisons, README "Performance").
  ROPE_AVX2_FN static __m256i biased(V v) noexcept {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
  }
  // Each lane's bf16 word in its low half, for every float but NaN.
  ROPE_AVX2_FN static __m256i words(V v) noexcept {
    return _mm256_srli_epi32(biased(v), 16);
  }
  // Whether a lane of a or of b is NaN: one compare for both (unordered where either is).
  ROPE_AVX2_FN static bool has_nan(V a, V b) noexcept {
    return __builtin_expect(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q)) != 0, 0);
  }
  // The integer form with NaNs, each 32-bit lane's bf16 word in its low half: a NaN's top 16
  // bits with the quiet bit set, like rope::float_to_bf16.
  ROPE_AVX2_FN static __m256i round_lanes(V v) noexcept {
    const __m256i top = _mm256_srli_epi32(_mm256_castps_si256(v), 16);
    const __m256i quiet = _mm256_or_si256(top, _mm256_set1_epi32(0x40));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(words(v), quiet, nan);
  }
  ROPE_AVX2_FN static void store(void* p, V v) noexcept {
    _mm_storeu_si128(static_cast<__m128i*>(p), round(v));
  }
  ROPE_AVX2_FN static void store(void* p, V v, std::size_t n) noexcept {
    store16_partial(p, round(v), n);
  }
  // Two adjacent vectors (a: elements 0-7, b: 8-15) as one 32-byte store, as the AVX-512
  // path's store_two: one pack of both and one lane permute (vpermq) per 16 elements, where
  // store takes two packs and two extracts (kernel_body.inc: stores_two).
  static constexpr bool two_at_once = true;
  ROPE_AVX2_FN static __m256i round_two(V a, V b) noexcept {
#if defined(__AVX512BF16__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    const __m256i c = (__m256i)_mm256_cvtne2ps_pbh(b, a);  // a's words, then b's
    if (__builtin_expect(_mm256_testn_epi16_mask(c, _mm256_set1_epi16(0x7fff)) == 0, 1) ||
        (_mm256_fpclass_ps_mask(a, 0x20) | _mm256_fpclass_ps_mask(b, 0x20)) == 0)
      return c;
#endif
    // The pack gives a0-3, b0-3 | a4-7, b4-7 (per 128-bit lane); vpermq puts a's halves first.
    if (has_nan(a, b))
      return _mm256_permute4x64_epi64(_mm256_packus_epi32(round_lanes(a), round_lanes(b)), 0xD8);
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(words(a), words(b)), 0xD8);
  }
  ROPE_AVX2_FN static void store_two(void* p, V a, V b) noexcept {
    _mm256_storeu_si256(static_cast<__m256i*>(p), round_two(a, b));
  }
};

// bf16 rows 16 elements (32 bytes) at a time as two float vectors, the even elements and the
// odd ones, as the AVX-512 path's bf16_pairs (rope/arch/avx512.hpp): with the words read as
// 32-bit lanes the odd elements are the lanes with their low halves cleared (vpand) and the
// even ones the lanes shifted up by 16 (vpslld). A vector at a time, io's widening takes a
// vpmovzxwd (a shuffle) and a shift per 8 elements, and its store an extract, a pack and a
// 16-byte store per 8 (an interleaved row also swaps each vector's pairs, vpermilps). On the way
// out both vectors are rounded with the integer form (io::biased: each lane's word in its high
// half; io::round_lanes where a lane is NaN) and merged by a shift, an and and one vpor, no
// shuffle. No vcvtne2ps2bf16 here even where the compiler's flags have AVX512_BF16: that build
// runs the AVX-512 path, and this one only when forced. The table is split into evens and odds
// once per token (vshufps, vpermpd).
template <class Real>
struct bf16_pairs {
  static constexpr bool enabled = false;
};

template <>
struct bf16_pairs<float> {
  static constexpr bool enabled = true;
  using V = __m256;
  ROPE_AVX2_FN static void load(const void* p, V& even, V& odd) noexcept {
    const __m256i w = _mm256_loadu_si256(static_cast<const __m256i*>(p));
    even = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    odd = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(-65536)));
  }
  // The even and the odd elements of a[0..7], b[0..7] (element i of the pair at i and i + 8):
  // vshufps picks them per 128-bit lane (a's two, then b's two), vpermpd puts a's lanes first.
  ROPE_AVX2_FN static V evens(V a, V b) noexcept {
    return _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
  }
  ROPE_AVX2_FN static V odds(V a, V b) noexcept {
    return _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
  }
  // rope::float_to_bf16 of every lane, the 16 words in element order.
  ROPE_AVX2_FN static __m256i round(V even, V odd) noexcept {
    // Without NaNs the odd elements' words stay in the high halves where biased leaves them.
    using B = io<float, storage_format::bf16>;
    if (B::has_nan(even, odd))
      return _mm256_or_si256(B::round_lanes(even), _mm256_slli_epi32(B::round_lanes(odd), 16));
    return _mm256_or_si256(B::words(even),
                           _mm256_and_si256(B::biased(odd), _mm256_set1_epi32(-65536)));
  }
  ROPE_AVX2_FN static void store(void* p, V even, V odd) noexcept {
    _mm256_storeu_si256(static_cast<__m256i*>(p), round(even, odd));
  }
};

// The vector registers a CPU with this path alone has (ymm0-15); kernel_body.inc sizes the
// in-place groups of 16-bit rows by it (row_vectors::group16).
inline constexpr std::size_t vector_registers = 16;

// No half-width vectors here: a row that ends in half a vector ends with a shifted one.
template <class Real>
struct half_vectors {
  static constexpr bool enabled = false;
  using vec = detail::vec<Real>;
  template <storage_format F>
  using io = detail::io<Real, F>;
};

}  // namespace detail

#define ROPE_KERNEL_FN ROPE_AVX2_FN
#include "rope/arch/detail/kernel_body.inc"
#undef ROPE_KERNEL_FN

}  // namespace avx2
}  // namespace arch
ROPE_END_NAMESPACE  // rope

#endif  // ROPE_X86
