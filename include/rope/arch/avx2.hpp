// rope/arch/avx2.hpp: AVX2 kernels (AVX2 with FMA and F16C). Same functions and bits as
// rope/arch/scalar.hpp (the specification) and rope/arch/avx512.hpp; compare them side by side.
//
// 8 floats (or 4 doubles) per vector; the arithmetic is that of avx512.hpp. Tails: float and
// double use vmaskmov loads and stores (masked-off lanes are neither read nor written, and do
// not fault); 16-bit types have no masked move in AVX2, so the n valid elements are copied
// through a 16-byte local buffer. fp16 converts with F16C (vcvtph2ps / vcvtps2ph, round to
// nearest even); bf16 with integer operations identical to rope::float_to_bf16.
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

namespace rope {
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
    const __m256i x = _mm256_castps_si256(v);
    const __m256i top = _mm256_srli_epi32(x, 16);
    const __m256i lsb = _mm256_and_si256(top, _mm256_set1_epi32(1));
    const __m256i bias = _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
    const __m256i quiet = _mm256_or_si256(top, _mm256_set1_epi32(0x40));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
    // Every lane is <= 0xffff, so the unsigned-saturating pack is a plain narrowing.
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  }
  ROPE_AVX2_FN static void store(void* p, V v) noexcept {
    _mm_storeu_si128(static_cast<__m128i*>(p), round(v));
  }
  ROPE_AVX2_FN static void store(void* p, V v, std::size_t n) noexcept {
    store16_partial(p, round(v), n);
  }
};

}  // namespace detail

/// Rotates the first d = (Dim ? Dim : rotary_dim) coordinates of one row; in may equal out.
/// Same contract and bits as arch::scalar::rotate_row.
template <std::size_t Dim, layout L, bool Inverse, class TIn, class TOut, class Real>
ROPE_AVX2_FN void rotate_row(const TIn* in, TOut* out, const Real* C, const Real* S,
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
// Rows narrower than one vector use masks.
template <std::size_t Dim, layout L, class Real>
struct row_vectors {
  using V = vec<Real>;
  static constexpr std::size_t width = L == layout::interleaved ? Dim : Dim / 2;
  static constexpr std::size_t full = width / V::N;
  static constexpr bool tail = width % V::N != 0;
  static constexpr bool shifted = tail && width >= V::N;  // last vector ends at the row end
  static constexpr std::size_t count = full + (tail ? 1 : 0);
  static constexpr std::size_t tail_at = shifted ? width - V::N : full * V::N;
  typename V::V c[count], s[count];
  ROPE_AVX2_FN void load(const Real* C, const Real* S) noexcept {
    for (std::size_t k = 0; k < full; ++k) {
      c[k] = V::load(C + k * V::N);
      s[k] = V::load(S + k * V::N);
    }
    if constexpr (shifted) {
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
ROPE_AVX2_FN void rotate_row_held(const TIn* in, TOut* out, const row_vectors<Dim, L, Real>& row) noexcept {
  using R = row_vectors<Dim, L, Real>;
  using V = vec<Real>;
  using VV = typename V::V;
  using In = io<Real, format_of_v<TIn>>;
  using Out = io<Real, format_of_v<TOut>>;
  constexpr std::size_t N = V::N, W = R::width, F = R::full, T = R::tail_at;
  if constexpr (L == layout::interleaved) {
    VV xt{};
    if constexpr (R::shifted) xt = In::load(in + T);  // before any store of the row
    for (std::size_t k = 0; k < F; ++k) {
      const VV x = In::load(in + k * N);
      const VV p = V::mul(V::swap_pairs(x), row.s[k]);
      Out::store(out + k * N, Inverse ? V::fmsub(x, row.c[k], p) : V::fmadd(x, row.c[k], p));
    }
    if constexpr (R::shifted) {
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
      if constexpr (R::shifted) {
        const VV pv = V::mul(vt, row.s[F]);
        Out::store(out + T, Inverse ? V::fmadd(ut, row.c[F], pv) : V::fmsub(ut, row.c[F], pv));
      }
      for (std::size_t k = 0; k < F; ++k) {
        const VV u = In::load(in + k * N), v = In::load(in + k * N + W);
        const VV pu = V::mul(u, row.s[k]);
        Out::store(out + k * N + W, Inverse ? V::fmsub(v, row.c[k], pu) : V::fmadd(v, row.c[k], pu));
      }
      if constexpr (R::shifted) {
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
      if constexpr (R::shifted) {
        const VV pv = V::mul(vt, row.s[F]), pu = V::mul(ut, row.s[F]);
        Out::store(out + T, Inverse ? V::fmadd(ut, row.c[F], pv) : V::fmsub(ut, row.c[F], pv));
        Out::store(out + T + W, Inverse ? V::fmsub(vt, row.c[F], pu) : V::fmadd(vt, row.c[F], pu));
      }
    }
    if constexpr (R::tail && !R::shifted) {
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
ROPE_AVX2_FN void run(const table<Real>& tab, const rope::detail::job<TIn, TOut, Pos>& job) noexcept {
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

}  // namespace avx2
}  // namespace arch
}  // namespace rope

#endif  // ROPE_X86
