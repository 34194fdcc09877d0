// rope/arch/avx512.hpp: AVX-512 kernels (AVX512F+BW+DQ+VL with FMA and F16C). Same functions
// and bits as rope/arch/scalar.hpp (the specification); compare them side by side.
//
// 16 floats (or 8 doubles) per vector. Interleaved rows: out = fma(x, C, swap_pairs(x) * S),
// the table row already holds the pair's signs. Half-split rows: lo = fma(u, c, -(v * s)),
// hi = fma(v, c, u * s), written as fmsub/fmadd of the rounded product, which is the scalar
// path's expression bit for bit (negation is exact). Tails use masked loads and stores, which
// suppress faults and touch no byte outside the caller's rows. fp16 converts with vcvtph2ps /
// vcvtps2ph (round to nearest even); bf16 widens by a shift and rounds with vcvtneps2bf16 where
// the compiler's flags enable AVX512_BF16, falling back per vector to integer operations
// identical to rope::float_to_bf16 when the vector holds a subnormal (which vcvtneps2bf16 reads
// as zero). Runtime-dispatched builds (no AVX512_BF16 in the target) use the integer form.
//
// This file holds what is AVX-512's own: the vector types, conversions and masks (detail::vec,
// detail::io, detail::half_vectors, and detail::bf16_pairs for bf16 rows as even/odd pairs). The
// kernels written over them (rotate_row_held, rotate_row_dyn, run) are the shared text
// rope/arch/detail/kernel_body.inc, included at the end inside this namespace and this target, as
// avx2.hpp does with its own types.
//
// Every function carries the target attribute unless the compiler's flags already enable the
// ISA, so a baseline x86-64 build can hold these kernels for runtime dispatch (rope/isa.hpp).
#pragma once

#include "rope/isa.hpp"

#if ROPE_X86

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "rope/arch/avx2.hpp"
#include "rope/arch/scalar.hpp"
#include "rope/spec.hpp"
#include "rope/storage.hpp"
#include "rope/table.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__FMA__) && defined(__F16C__)
#define ROPE_AVX512_FN inline
#else
#define ROPE_AVX512_FN \
  inline __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
#endif

ROPE_BEGIN_NAMESPACE
namespace arch {
namespace avx512 {
namespace detail {

// Several intrinsics are written in their maskz form with an all-ones mask (the same
// instruction): GCC 12 warns (-Wmaybe-uninitialized) on the unmasked forms' undefined
// pass-through operand.

// Vector arithmetic of the compute type.
template <class Real>
struct vec;

template <>
struct vec<float> {
  using V = __m512;
  using M = __mmask16;
  static constexpr std::size_t N = 16;
  ROPE_AVX512_FN static M mask(std::size_t n) noexcept {
    return static_cast<M>((1u << n) - 1u);
  }
  ROPE_AVX512_FN static V load(const float* p) noexcept { return _mm512_loadu_ps(p); }
  ROPE_AVX512_FN static V load(const float* p, M m) noexcept { return _mm512_maskz_loadu_ps(m, p); }
  ROPE_AVX512_FN static V mul(V a, V b) noexcept { return _mm512_mul_ps(a, b); }
  ROPE_AVX512_FN static V fmadd(V a, V b, V c) noexcept { return _mm512_fmadd_ps(a, b, c); }
  ROPE_AVX512_FN static V fmsub(V a, V b, V c) noexcept { return _mm512_fmsub_ps(a, b, c); }
  ROPE_AVX512_FN static V swap_pairs(V a) noexcept {
    return _mm512_maskz_permute_ps(0xffff, a, 0xB1);
  }
  ROPE_AVX512_FN static V add(V a, V b) noexcept { return _mm512_add_ps(a, b); }
};

template <>
struct vec<double> {
  using V = __m512d;
  using M = __mmask8;
  static constexpr std::size_t N = 8;
  ROPE_AVX512_FN static M mask(std::size_t n) noexcept {
    return static_cast<M>((1u << n) - 1u);
  }
  ROPE_AVX512_FN static V load(const double* p) noexcept { return _mm512_loadu_pd(p); }
  ROPE_AVX512_FN static V load(const double* p, M m) noexcept { return _mm512_maskz_loadu_pd(m, p); }
  ROPE_AVX512_FN static V mul(V a, V b) noexcept { return _mm512_mul_pd(a, b); }
  ROPE_AVX512_FN static V fmadd(V a, V b, V c) noexcept { return _mm512_fmadd_pd(a, b, c); }
  ROPE_AVX512_FN static V fmsub(V a, V b, V c) noexcept { return _mm512_fmsub_pd(a, b, c); }
  ROPE_AVX512_FN static V swap_pairs(V a) noexcept {
    return _mm512_maskz_permute_pd(0xff, a, 0x55);
  }
};

// Loads and stores of one storage format as vectors of the compute type: full vectors, and
// the first n lanes under a mask.
template <class Real, storage_format F>
struct io;

template <>
struct io<double, storage_format::f64> {
  using V = __m512d;
  using M = __mmask8;
  ROPE_AVX512_FN static V load(const void* p) noexcept {
    return _mm512_loadu_pd(static_cast<const double*>(p));
  }
  ROPE_AVX512_FN static V load(const void* p, M m) noexcept {
    return _mm512_maskz_loadu_pd(m, static_cast<const double*>(p));
  }
  ROPE_AVX512_FN static void store(void* p, V v) noexcept {
    _mm512_storeu_pd(static_cast<double*>(p), v);
  }
  ROPE_AVX512_FN static void store(void* p, V v, M m) noexcept {
    _mm512_mask_storeu_pd(static_cast<double*>(p), m, v);
  }
};

template <>
struct io<float, storage_format::f32> {
  using V = __m512;
  using M = __mmask16;
  ROPE_AVX512_FN static V load(const void* p) noexcept {
    return _mm512_loadu_ps(static_cast<const float*>(p));
  }
  ROPE_AVX512_FN static V load(const void* p, M m) noexcept {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(p));
  }
  ROPE_AVX512_FN static void store(void* p, V v) noexcept {
    _mm512_storeu_ps(static_cast<float*>(p), v);
  }
  ROPE_AVX512_FN static void store(void* p, V v, M m) noexcept {
    _mm512_mask_storeu_ps(static_cast<float*>(p), m, v);
  }
};

template <>
struct io<float, storage_format::fp16> {
  using V = __m512;
  using M = __mmask16;
  ROPE_AVX512_FN static V load(const void* p) noexcept {
    return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  ROPE_AVX512_FN static V load(const void* p, M m) noexcept {
    return _mm512_maskz_cvtph_ps(0xffff, _mm256_maskz_loadu_epi16(m, p));
  }
  ROPE_AVX512_FN static __m256i round(V v) noexcept {
    return _mm512_maskz_cvtps_ph(0xffff, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  ROPE_AVX512_FN static void store(void* p, V v) noexcept {
    _mm256_storeu_si256(static_cast<__m256i*>(p), round(v));
  }
  ROPE_AVX512_FN static void store(void* p, V v, M m) noexcept {
    _mm256_mask_storeu_epi16(p, m, round(v));
  }
};

template <>
struct io<float, storage_format::bf16> {
  using V = __m512;
  using M = __mmask16;
  ROPE_AVX512_FN static V widen(__m256i h) noexcept {
    return _mm512_castsi512_ps(
        _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16));
  }
  ROPE_AVX512_FN static V load(const void* p) noexcept {
    return widen(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  ROPE_AVX512_FN static V load(const void* p, M m) noexcept {
    return widen(_mm256_maskz_loadu_epi16(m, p));
  }
  ROPE_AVX512_FN static __m256i round(V v) noexcept {
#if defined(__AVX512BF16__)
    // vcvtneps2bf16 rounds to nearest even and quiets NaNs as rope::float_to_bf16 does, but
    // reads subnormal inputs as zero. A subnormal input gives a zero word, so only a vector
    // whose result holds one (+-0, or a subnormal read as one) classifies its floats, and only
    // one holding a subnormal is redone by the integer path. Testing the 16 result words first
    // costs less than classifying every vector's floats (vfpclassps): an in-place bf16 stream
    // through this store ran at 55 GB/s against 49. Rows of zeros (padding) pay the class
    // test, not the integer path.
    const __m256i r = (__m256i)_mm512_cvtneps_pbh(v);
    if (__builtin_expect(_mm256_testn_epi16_mask(r, _mm256_set1_epi16(0x7fff)) == 0, 1)) return r;
    if (_mm512_fpclass_ps_mask(v, 0x20) == 0) return r;  // zeros, no subnormal: r is right
#endif
    return round_exact(v);
  }
  // rope::float_to_bf16 on 16 lanes: add 0x7fff, and 1 more where the lowest kept bit is set
  // (a masked add on a vptestmd mask: one operation fewer than shift, and, add); a NaN instead
  // gets its quiet bit set. Then one vpermw gathers the high halves (cheaper than vpsrld +
  // vpmovdw; the extract of the low half compiles to nothing). 7% less time per bf16 row than
  // the shift-and-add form on Zen 4.
  ROPE_AVX512_FN static __m256i round_exact(V v) noexcept {
    const __m512i r = round_bits(v);
    const __m512i high_halves =
        _mm512_set_epi16(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1, 31, 29, 27, 25,
                         23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_maskz_extracti64x4_epi64(
        0xf, _mm512_maskz_permutexvar_epi16(0xffffffffu, high_halves, r), 0);
  }
  // The lanes of round_exact before the gather: each 32-bit lane holds its bf16 in its high half.
  ROPE_AVX512_FN static __m512i round_bits(V v) noexcept {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i biased = _mm512_add_epi32(x, _mm512_set1_epi32(0x7fff));
    const __mmask16 odd = _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x10000));
    const __m512i r = _mm512_mask_add_epi32(biased, odd, biased, _mm512_set1_epi32(1));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(r, nan, x, _mm512_set1_epi32(0x00400000));
  }
  ROPE_AVX512_FN static void store(void* p, V v) noexcept {
    _mm256_storeu_si256(static_cast<__m256i*>(p), round(v));
  }
  ROPE_AVX512_FN static void store(void* p, V v, M m) noexcept {
    _mm256_mask_storeu_epi16(p, m, round(v));
  }
  // Two adjacent vectors (a: elements 0-15, b: 16-31) stored as one 64-byte row of words: one
  // vcvtne2ps2bf16 and one zero-word test per 32 elements where store takes two of each, and
  // the words come out in element order (no vpermw, unlike bf16_pairs::round). Out-of-place
  // rows held in vectors with a bf16 output (a float -> bf16 KV-cache write; bf16 rows that do
  // not go in pairs) store their vectors two at a time through this (kernel_body.inc:
  // stores_two).
  static constexpr bool two_at_once = true;
  ROPE_AVX512_FN static __m512i round_two(V a, V b) noexcept {
#if defined(__AVX512BF16__)
    const __m512i r = (__m512i)_mm512_cvtne2ps_pbh(b, a);  // a's words, then b's
    if (__builtin_expect(_mm512_testn_epi16_mask(r, _mm512_set1_epi16(0x7fff)) == 0, 1) ||
        (_mm512_fpclass_ps_mask(a, 0x20) | _mm512_fpclass_ps_mask(b, 0x20)) == 0)
      return r;
#endif
    // The high word of every 32-bit lane of a, then of b (vpermt2w).
    return _mm512_permutex2var_epi16(
        round_bits(a),
        _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27,
                         25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1),
        round_bits(b));
  }
  ROPE_AVX512_FN static void store_two(void* p, V a, V b) noexcept {
    _mm512_storeu_si512(p, round_two(a, b));
  }
};

// bf16 rows 32 elements (64 bytes) at a time, as two float vectors: the even elements and the
// odd ones. A bf16 word is the high half of its float, so with the words read as 32-bit lanes
// the odd elements are the lanes with their low halves cleared (vpandd) and the even ones the
// lanes shifted up by 16 (vpslld): two single-cycle operations per 32 elements where io's
// widening takes a vpmovzxwd and a shift per 16. The kernels pair the table's values the same
// way (evens, odds: once per token), so every element meets the same operations as in
// arch::scalar, in another lane. On the way out, vcvtne2ps2bf16 rounds both vectors into one
// register (evens' words, then odds') and one vpermw puts the words back in order; where a
// word came out zero the class test and the integer fallback are io::round's, on 32 elements
// at once. Without AVX512_BF16 (runtime dispatch) both vectors are rounded with integer
// operations (io::round_bits) and merged by a shift and a word blend, with no vpermw. An
// in-place bf16 stream at D = 128 on Zen 5 (load, fma, store; 32 heads, 8 KB): 107 ns in pairs
// against 199 ns a vector at a time.
template <class Real>
struct bf16_pairs {
  static constexpr bool enabled = false;
};

template <>
struct bf16_pairs<float> {
  static constexpr bool enabled = true;
  using V = __m512;
  ROPE_AVX512_FN static void load(const void* p, V& even, V& odd) noexcept {
    const __m512i w = _mm512_loadu_si512(p);
    even = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, w, 16));
    odd = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(-65536)));
  }
  // The even and the odd elements of a[0..15], b[0..15] (element i of the pair at i and i + 16).
  ROPE_AVX512_FN static V evens(V a, V b) noexcept {
    return _mm512_permutex2var_ps(
        a, _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0), b);
  }
  ROPE_AVX512_FN static V odds(V a, V b) noexcept {
    return _mm512_permutex2var_ps(
        a, _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1), b);
  }
  // rope::float_to_bf16 of every lane, the 32 words in element order.
  ROPE_AVX512_FN static __m512i round(V even, V odd) noexcept {
#if defined(__AVX512BF16__)
    const __m512i r = (__m512i)_mm512_cvtne2ps_pbh(odd, even);  // evens' words, then odds'
    if (__builtin_expect(_mm512_testn_epi16_mask(r, _mm512_set1_epi16(0x7fff)) == 0, 1) ||
        (_mm512_fpclass_ps_mask(even, 0x20) | _mm512_fpclass_ps_mask(odd, 0x20)) == 0)
      return _mm512_maskz_permutexvar_epi16(
          0xffffffffu,
          _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                           6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0),
          r);
#endif
    using B = io<float, storage_format::bf16>;
    return _mm512_mask_blend_epi16(
        0xaaaaaaaau, _mm512_maskz_srli_epi32(0xffff, B::round_bits(even), 16), B::round_bits(odd));
  }
  ROPE_AVX512_FN static void store(void* p, V even, V odd) noexcept {
    _mm512_storeu_si512(p, round(even, odd));
  }
};

// zmm0-31 (kernel_body.inc: row_vectors::group16).
inline constexpr std::size_t vector_registers = 32;

// Half-width vectors for a row that ends in exactly half a vector: the AVX2 path's 256-bit
// arithmetic and conversions, which inline here (their target is a subset of this one's).
template <class Real>
struct half_vectors {
  static constexpr bool enabled = true;
  using vec = avx2::detail::vec<Real>;
  template <storage_format F>
  using io = avx2::detail::io<Real, F>;
};

}  // namespace detail

#define ROPE_KERNEL_FN ROPE_AVX512_FN
#include "rope/arch/detail/kernel_body.inc"
#undef ROPE_KERNEL_FN

}  // namespace avx512
}  // namespace arch
ROPE_END_NAMESPACE  // rope

#endif  // ROPE_X86
