// rope/arch/avx512.hpp: AVX-512 kernels (AVX512F+BW+DQ+VL with FMA and F16C). Same functions
// and bits as rope/arch/scalar.hpp (the specification); compare them side by side.
//
// 16 floats (or 8 doubles) per vector. Interleaved rows: out = fma(x, C, swap_pairs(x) * S),
// the table row already holds the pair's signs. Half-split rows: lo = fma(u, c, -(v * s)),
// hi = fma(v, c, u * s), written as fmsub/fmadd of the rounded product, which is the scalar
// path's expression bit for bit (negation is exact). Tails use masked loads and stores, which
// suppress faults and touch no byte outside the caller's rows. fp16 converts with vcvtph2ps /
// vcvtps2ph (round to nearest even); bf16 widens by a shift and rounds with integer operations
// identical to rope::float_to_bf16 (no AVX512_BF16: its converter flushes subnormals).
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

namespace rope {
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
  // rope::float_to_bf16 on 16 lanes: add 0x7fff, and 1 more where the lowest kept bit is set
  // (a masked add on a vptestmd mask: one operation fewer than shift, and, add); a NaN instead
  // gets its quiet bit set. Then one vpermw gathers the high halves (cheaper than vpsrld +
  // vpmovdw; the extract of the low half compiles to nothing). 7% less time per bf16 row than
  // the shift-and-add form on Zen 4.
  ROPE_AVX512_FN static __m256i round(V v) noexcept {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i biased = _mm512_add_epi32(x, _mm512_set1_epi32(0x7fff));
    const __mmask16 odd = _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x10000));
    __m512i r = _mm512_mask_add_epi32(biased, odd, biased, _mm512_set1_epi32(1));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, x, _mm512_set1_epi32(0x00400000));
    const __m512i high_halves =
        _mm512_set_epi16(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1, 31, 29, 27, 25,
                         23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_maskz_extracti64x4_epi64(
        0xf, _mm512_maskz_permutexvar_epi16(0xffffffffu, high_halves, r), 0);
  }
  ROPE_AVX512_FN static void store(void* p, V v) noexcept {
    _mm256_storeu_si256(static_cast<__m256i*>(p), round(v));
  }
  ROPE_AVX512_FN static void store(void* p, V v, M m) noexcept {
    _mm256_mask_storeu_epi16(p, m, round(v));
  }
};

}  // namespace detail

/// Rotates the first d = (Dim ? Dim : rotary_dim) coordinates of one row; in may equal out.
/// Same contract and bits as arch::scalar::rotate_row.
template <std::size_t Dim, layout L, bool Inverse, class TIn, class TOut, class Real>
ROPE_AVX512_FN void rotate_row(const TIn* in, TOut* out, const Real* C, const Real* S,
                               std::size_t rotary_dim) noexcept {
  using V = detail::vec<Real>;
  using In = detail::io<Real, format_of_v<TIn>>;
  using Out = detail::io<Real, format_of_v<TOut>>;
  constexpr std::size_t N = V::N;
  const std::size_t d = Dim ? Dim : rotary_dim;
  if constexpr (L == layout::interleaved) {
    std::size_t i = 0;
    for (; i + N <= d; i += N) {
      const typename V::V x = In::load(in + i);
      const typename V::V p = V::mul(V::swap_pairs(x), V::load(S + i));
      const typename V::V c = V::load(C + i);
      Out::store(out + i, Inverse ? V::fmsub(x, c, p) : V::fmadd(x, c, p));
    }
    if (i < d) {
      const typename V::M m = V::mask(d - i);
      const typename V::V x = In::load(in + i, m);
      const typename V::V p = V::mul(V::swap_pairs(x), V::load(S + i, m));
      const typename V::V c = V::load(C + i, m);
      Out::store(out + i, Inverse ? V::fmsub(x, c, p) : V::fmadd(x, c, p), m);
    }
  } else {
    const std::size_t P = d / 2;
    std::size_t j = 0;
    for (; j + N <= P; j += N) {
      const typename V::V u = In::load(in + j), v = In::load(in + j + P);
      const typename V::V c = V::load(C + j), s = V::load(S + j);
      const typename V::V pv = V::mul(v, s), pu = V::mul(u, s);
      Out::store(out + j, Inverse ? V::fmadd(u, c, pv) : V::fmsub(u, c, pv));
      Out::store(out + j + P, Inverse ? V::fmsub(v, c, pu) : V::fmadd(v, c, pu));
    }
    if (j < P) {
      const typename V::M m = V::mask(P - j);
      const typename V::V u = In::load(in + j, m), v = In::load(in + j + P, m);
      const typename V::V c = V::load(C + j, m), s = V::load(S + j, m);
      const typename V::V pv = V::mul(v, s), pu = V::mul(u, s);
      Out::store(out + j, Inverse ? V::fmadd(u, c, pv) : V::fmsub(u, c, pv), m);
      Out::store(out + j + P, Inverse ? V::fmsub(v, c, pu) : V::fmadd(v, c, pu), m);
    }
  }
}

namespace detail {

// One table row (C, S) in vectors, shared by every head of a token: with a compile-time Dim
// the row stays in registers (or in a stack slot the stores to the rows cannot alias), so each
// head costs one load and one store per vector, as a stream does.
//
// A row whose width is not a multiple of the lanes ends with a vector over its last N elements
// (overlapping the one before it), not a masked one: masked stores are slow on some cores
// (several times a plain store on AMD Zen 4, which made D = 80 half-split 3x slower). The
// overlapped elements get the same inputs, table values and operations from both vectors, so
// the same bits; in place, the last vector's inputs are loaded before any store of the row.
// A tail of exactly half a vector (D = 80 half-split: 40 = 2 x 16 + 8) is one 256-bit vector
// instead (the AVX2 file's arithmetic and conversions, the same operations per element): the
// shifted vector would redo 8 elements, a sixth more work for that row. Rows narrower than one
// vector use masks.
template <std::size_t Dim, layout L, class Real>
struct row_vectors {
  using V = vec<Real>;
  using H = avx2::detail::vec<Real>;  // half-width vectors
  static constexpr std::size_t width = L == layout::interleaved ? Dim : Dim / 2;
  static constexpr std::size_t full = width / V::N;
  static constexpr bool tail = width % V::N != 0;
  static constexpr bool half_tail = width % V::N == H::N;
  static constexpr bool shifted = tail && !half_tail && width >= V::N;  // ends at the row end
  static constexpr std::size_t count = full + (tail && !half_tail ? 1 : 0);
  static constexpr std::size_t tail_at = shifted ? width - V::N : full * V::N;
  typename V::V c[count ? count : 1], s[count ? count : 1];  // count is 0 for a lone half tail
  typename H::V hc, hs;  // the half-vector tail (unused otherwise)
  ROPE_AVX512_FN void load(const Real* C, const Real* S) noexcept {
    for (std::size_t k = 0; k < full; ++k) {
      c[k] = V::load(C + k * V::N);
      s[k] = V::load(S + k * V::N);
    }
    if constexpr (half_tail) {
      hc = H::load(C + tail_at);
      hs = H::load(S + tail_at);
    } else if constexpr (shifted) {
      c[full] = V::load(C + tail_at);
      s[full] = V::load(S + tail_at);
    } else if constexpr (tail) {
      c[full] = V::load(C + tail_at, V::mask(width - tail_at));
      s[full] = V::load(S + tail_at, V::mask(width - tail_at));
    }
  }
};

// rotate_row with the row in vectors: the same operations on every element.
template <std::size_t Dim, layout L, bool Inverse, class TIn, class TOut, class Real>
ROPE_AVX512_FN void rotate_row_held(const TIn* in, TOut* out, const row_vectors<Dim, L, Real>& row) noexcept {
  using R = row_vectors<Dim, L, Real>;
  using V = vec<Real>;
  using VV = typename V::V;
  using In = io<Real, format_of_v<TIn>>;
  using Out = io<Real, format_of_v<TOut>>;
  using H = typename R::H;
  using HV = typename H::V;
  using HIn = avx2::detail::io<Real, format_of_v<TIn>>;
  using HOut = avx2::detail::io<Real, format_of_v<TOut>>;
  constexpr std::size_t N = V::N, W = R::width, F = R::full, T = R::tail_at;
  if constexpr (L == layout::interleaved) {
    VV xt{};
    if constexpr (R::shifted) xt = In::load(in + T);  // before any store of the row
    for (std::size_t k = 0; k < F; ++k) {
      const VV x = In::load(in + k * N);
      const VV p = V::mul(V::swap_pairs(x), row.s[k]);
      Out::store(out + k * N, Inverse ? V::fmsub(x, row.c[k], p) : V::fmadd(x, row.c[k], p));
    }
    if constexpr (R::half_tail) {
      const HV x = HIn::load(in + T);
      const HV p = H::mul(H::swap_pairs(x), row.hs);
      HOut::store(out + T, Inverse ? H::fmsub(x, row.hc, p) : H::fmadd(x, row.hc, p));
    } else if constexpr (R::shifted) {
      const VV p = V::mul(V::swap_pairs(xt), row.s[F]);
      Out::store(out + T, Inverse ? V::fmsub(xt, row.c[F], p) : V::fmadd(xt, row.c[F], p));
    } else if constexpr (R::tail) {
      const typename V::M m = V::mask(W - T);
      const VV x = In::load(in + T, m);
      const VV p = V::mul(V::swap_pairs(x), row.s[F]);
      Out::store(out + T, Inverse ? V::fmsub(x, row.c[F], p) : V::fmadd(x, row.c[F], p), m);
    }
  } else {
    VV ut{}, vt{};
    if constexpr (R::shifted) {
      ut = In::load(in + T);  // before any store of the row
      vt = In::load(in + T + W);
    }
    if (static_cast<const void*>(in) != static_cast<const void*>(out)) {
      // Out of place: all first halves, then all second halves, so the stores run through
      // the output row in order. Interleaving the two halves' stores costs a third of the
      // bandwidth when the rows are not 64-byte aligned (each store then splits a cache line,
      // and the lines complete out of order). Same operations per element, so same bits.
      for (std::size_t k = 0; k < F; ++k) {
        const VV u = In::load(in + k * N), v = In::load(in + k * N + W);
        const VV pv = V::mul(v, row.s[k]);
        Out::store(out + k * N, Inverse ? V::fmadd(u, row.c[k], pv) : V::fmsub(u, row.c[k], pv));
      }
      if constexpr (R::half_tail) {
        const HV u = HIn::load(in + T), v = HIn::load(in + T + W);
        const HV pv = H::mul(v, row.hs);
        HOut::store(out + T, Inverse ? H::fmadd(u, row.hc, pv) : H::fmsub(u, row.hc, pv));
      } else if constexpr (R::shifted) {
        const VV pv = V::mul(vt, row.s[F]);
        Out::store(out + T, Inverse ? V::fmadd(ut, row.c[F], pv) : V::fmsub(ut, row.c[F], pv));
      }
      for (std::size_t k = 0; k < F; ++k) {
        const VV u = In::load(in + k * N), v = In::load(in + k * N + W);
        const VV pu = V::mul(u, row.s[k]);
        Out::store(out + k * N + W, Inverse ? V::fmsub(v, row.c[k], pu) : V::fmadd(v, row.c[k], pu));
      }
      if constexpr (R::half_tail) {
        const HV u = HIn::load(in + T), v = HIn::load(in + T + W);
        const HV pu = H::mul(u, row.hs);
        HOut::store(out + T + W, Inverse ? H::fmsub(v, row.hc, pu) : H::fmadd(v, row.hc, pu));
      } else if constexpr (R::shifted) {
        const VV pu = V::mul(ut, row.s[F]);
        Out::store(out + T + W, Inverse ? V::fmsub(vt, row.c[F], pu) : V::fmadd(vt, row.c[F], pu));
      }
    } else {
      for (std::size_t k = 0; k < F; ++k) {
        const VV u = In::load(in + k * N), v = In::load(in + k * N + W);
        const VV pv = V::mul(v, row.s[k]), pu = V::mul(u, row.s[k]);
        Out::store(out + k * N, Inverse ? V::fmadd(u, row.c[k], pv) : V::fmsub(u, row.c[k], pv));
        Out::store(out + k * N + W, Inverse ? V::fmsub(v, row.c[k], pu) : V::fmadd(v, row.c[k], pu));
      }
      if constexpr (R::half_tail) {
        const HV u = HIn::load(in + T), v = HIn::load(in + T + W);
        const HV pv = H::mul(v, row.hs), pu = H::mul(u, row.hs);
        HOut::store(out + T, Inverse ? H::fmadd(u, row.hc, pv) : H::fmsub(u, row.hc, pv));
        HOut::store(out + T + W, Inverse ? H::fmsub(v, row.hc, pu) : H::fmadd(v, row.hc, pu));
      } else if constexpr (R::shifted) {
        const VV pv = V::mul(vt, row.s[F]), pu = V::mul(ut, row.s[F]);
        Out::store(out + T, Inverse ? V::fmadd(ut, row.c[F], pv) : V::fmsub(ut, row.c[F], pv));
        Out::store(out + T + W, Inverse ? V::fmsub(vt, row.c[F], pu) : V::fmadd(vt, row.c[F], pu));
      }
    }
    if constexpr (R::tail && !R::shifted && !R::half_tail) {
      const typename V::M m = V::mask(W - T);
      const VV u = In::load(in + T, m), v = In::load(in + T + W, m);
      const VV pv = V::mul(v, row.s[F]), pu = V::mul(u, row.s[F]);
      Out::store(out + T, Inverse ? V::fmadd(u, row.c[F], pv) : V::fmsub(u, row.c[F], pv), m);
      Out::store(out + T + W, Inverse ? V::fmsub(v, row.c[F], pu) : V::fmadd(v, row.c[F], pu), m);
    }
  }
}

}  // namespace detail

/// Runs a validated job (same loop as arch::scalar::run).
template <std::size_t Dim, layout L, bool Inverse, class Real, class TIn, class TOut, class Pos>
ROPE_AVX512_FN void run(const table<Real>& tab,
                        const rope::detail::job<TIn, TOut, Pos>& job) noexcept {
  const auto jb = job;  // a local copy: see arch::scalar::run
  const std::size_t d = Dim ? Dim : static_cast<std::size_t>(tab.rotary_dim());
  const std::size_t m = L == layout::interleaved ? d : d / 2;
  constexpr std::size_t scratch_size =
      Dim ? 2 * Dim : 2 * static_cast<std::size_t>(max_rotary_dim);
  alignas(64) Real scratch[scratch_size];
  for (std::size_t t = 0; t < jb.n_tokens; ++t) {
    const Real* row = tab.row(static_cast<std::int64_t>(jb.positions[t]), scratch);
    const Real* C = row;
    const Real* S = row + m;
    const TIn* in_t = jb.in + t * jb.in_token_stride;
    TOut* out_t = jb.out + t * jb.out_token_stride;
    if constexpr (Dim != 0) {
      detail::row_vectors<Dim, L, Real> held;
      held.load(C, S);
      for (std::size_t h = 0; h < jb.n_heads; ++h) {
        const TIn* in = in_t + h * jb.in_head_stride;
        TOut* out = out_t + h * jb.out_head_stride;
        detail::rotate_row_held<Dim, L, Inverse>(in, out, held);
        if (jb.copy_tail) rope::detail::copy_tail(in, out, d, jb.head_dim);
      }
    } else {
      for (std::size_t h = 0; h < jb.n_heads; ++h) {
        const TIn* in = in_t + h * jb.in_head_stride;
        TOut* out = out_t + h * jb.out_head_stride;
        rotate_row<Dim, L, Inverse>(in, out, C, S, d);
        if (jb.copy_tail) rope::detail::copy_tail(in, out, d, jb.head_dim);
      }
    }
  }
}

}  // namespace avx512
}  // namespace arch
}  // namespace rope

#endif  // ROPE_X86
