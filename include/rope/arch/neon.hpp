// rope/arch/neon.hpp: AArch64 Advanced SIMD (NEON) kernels. Same functions and bits as
// rope/arch/scalar.hpp (the specification) and rope/arch/avx512.hpp; compare them side by side.
//
// 4 floats (or 2 doubles) per vector; the arithmetic is that of avx512.hpp with vfmaq (fused,
// one rounding) on the rounded product: fma(x, c, p) = vfmaq(p, x, c), fma(x, c, -p) =
// vfmaq(-p, x, c). NEON is part of the AArch64 base ISA, so no target attribute is needed.
// Tails: NEON has no masked loads, so the last elements that do not fill a vector (at most
// one pair for interleaved rows, up to 3 pairs for half-split ones) go through the scalar
// expression per element, which gives the same bits (a fused multiply-add is correctly
// rounded wherever it runs). fp16 converts with FCVTL / FCVTN (round to nearest even in the
// default FPCR); bf16 widens by a shift and rounds with integer operations identical to
// rope::float_to_bf16.
#pragma once

#include "rope/isa.hpp"

#if ROPE_NEON

#include <arm_neon.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "rope/arch/scalar.hpp"
#include "rope/spec.hpp"
#include "rope/storage.hpp"
#include "rope/table.hpp"

ROPE_BEGIN_NAMESPACE
namespace arch {
namespace neon {
namespace detail {

template <class Real>
struct vec;

template <>
struct vec<float> {
  using V = float32x4_t;
  static constexpr std::size_t N = 4;
  static inline V load(const float* p) noexcept { return vld1q_f32(p); }
  static inline V mul(V a, V b) noexcept { return vmulq_f32(a, b); }
  static inline V fmadd(V a, V b, V c) noexcept { return vfmaq_f32(c, a, b); }
  static inline V fmsub(V a, V b, V c) noexcept { return vfmaq_f32(vnegq_f32(c), a, b); }
  static inline V swap_pairs(V a) noexcept { return vrev64q_f32(a); }
  static inline V add(V a, V b) noexcept { return vaddq_f32(a, b); }
};

template <>
struct vec<double> {
  using V = float64x2_t;
  static constexpr std::size_t N = 2;
  static inline V load(const double* p) noexcept { return vld1q_f64(p); }
  static inline V mul(V a, V b) noexcept { return vmulq_f64(a, b); }
  static inline V fmadd(V a, V b, V c) noexcept { return vfmaq_f64(c, a, b); }
  static inline V fmsub(V a, V b, V c) noexcept { return vfmaq_f64(vnegq_f64(c), a, b); }
  static inline V swap_pairs(V a) noexcept { return vextq_f64(a, a, 1); }
};

template <class Real, storage_format F>
struct io;

template <>
struct io<double, storage_format::f64> {
  static inline float64x2_t load(const void* p) noexcept {
    return vld1q_f64(static_cast<const double*>(p));
  }
  static inline void store(void* p, float64x2_t v) noexcept {
    vst1q_f64(static_cast<double*>(p), v);
  }
};

template <>
struct io<float, storage_format::f32> {
  static inline float32x4_t load(const void* p) noexcept {
    return vld1q_f32(static_cast<const float*>(p));
  }
  static inline void store(void* p, float32x4_t v) noexcept {
    vst1q_f32(static_cast<float*>(p), v);
  }
};

template <>
struct io<float, storage_format::fp16> {
  static inline float32x4_t load(const void* p) noexcept {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const std::uint16_t*>(p))));
  }
  static inline void store(void* p, float32x4_t v) noexcept {
    vst1_u16(static_cast<std::uint16_t*>(p), vreinterpret_u16_f16(vcvt_f16_f32(v)));
  }
};

template <>
struct io<float, storage_format::bf16> {
  static inline float32x4_t load(const void* p) noexcept {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(static_cast<const std::uint16_t*>(p)), 16));
  }
  // rope::float_to_bf16 on 4 lanes: NaN -> quiet NaN; else add 0x7fff + lowest kept bit.
  static inline void store(void* p, float32x4_t v) noexcept {
    const uint32x4_t x = vreinterpretq_u32_f32(v);
    const uint32x4_t top = vshrq_n_u32(x, 16);
    const uint32x4_t bias = vaddq_u32(vandq_u32(top, vdupq_n_u32(1)), vdupq_n_u32(0x7fff));
    const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(x, bias), 16);
    const uint32x4_t quiet = vorrq_u32(top, vdupq_n_u32(0x40));
    const uint32x4_t is_num = vceqq_f32(v, v);
    const uint32x4_t r = vbslq_u32(is_num, rounded, quiet);
    vst1_u16(static_cast<std::uint16_t*>(p), vmovn_u32(r));
  }
};

// One element through the scalar path's conversions and expression.
template <class Real, class T>
inline Real load1(const T* p) noexcept {
  return static_cast<Real>(storage_traits<T>::load(*p));
}

}  // namespace detail

namespace detail {

// The table values at index i of a row: C and S, and (P: 16-bit output) their low parts,
// loaded once for both outputs of a half-split pair.
template <class Real, bool P>
struct coefs {
  typename vec<Real>::V c, s;
};
template <class Real>
struct coefs<Real, true> {
  typename vec<Real>::V c, s, c_lo, s_lo;
};
template <bool P, class Real>
inline coefs<Real, P> load_coefs(const rope::detail::row_ptrs<Real>& row, std::size_t i) noexcept {
  using V = vec<Real>;
  if constexpr (P)
    return {V::load(row.c + i), V::load(row.s + i), V::load(row.c_lo + i), V::load(row.s_lo + i)};
  else
    return {V::load(row.c + i), V::load(row.s + i)};
}

// arch::scalar::combine (and combine_precise) on every lane: a*c + b*s, Minus: a*c - b*s.
template <bool Minus, class Real, bool P>
inline typename vec<Real>::V combine(typename vec<Real>::V a, typename vec<Real>::V b,
                                     const coefs<Real, P>& k) noexcept {
  using V = vec<Real>;
  const typename V::V p = V::mul(b, k.s);
  const typename V::V r = Minus ? V::fmsub(a, k.c, p) : V::fmadd(a, k.c, p);
  if constexpr (!P) {
    return r;
  } else {
    const typename V::V q = V::fmadd(b, k.s_lo, V::fmsub(b, k.s, p));
    return V::add(r, Minus ? V::fmsub(a, k.c_lo, q) : V::fmadd(a, k.c_lo, q));
  }
}

}  // namespace detail

/// Rotates the first d = (Dim ? Dim : rotary_dim) coordinates of one row; in may equal out.
/// Same contract and bits as arch::scalar::rotate_row.
template <std::size_t Dim, layout L, bool Inverse, bool Correct, class TIn, class TOut, class Real>
inline void rotate_row(const TIn* in, TOut* out, const rope::detail::row_ptrs<Real>& row,
                       std::size_t rotary_dim) noexcept {
  using V = detail::vec<Real>;
  using In = detail::io<Real, format_of_v<TIn>>;
  using Out = detail::io<Real, format_of_v<TOut>>;
  using store_t = storage_traits<TOut>;
  constexpr bool P = rope::detail::precise_store<Real, TOut>() && Correct;
  constexpr std::size_t N = V::N;
  const std::size_t d = Dim ? Dim : rotary_dim;
  if constexpr (L == layout::interleaved) {
    std::size_t i = 0;
    for (; i + N <= d; i += N) {
      const typename V::V x = In::load(in + i);
      Out::store(out + i,
                 detail::combine<Inverse>(x, V::swap_pairs(x), detail::load_coefs<P>(row, i)));
    }
    // (The tail loops are compiled only when Dim leaves one: GCC 12 otherwise warns about
    // the dead loop, -Waggressive-loop-optimizations.)
    if constexpr (Dim == 0 || Dim % N != 0)
    for (; i < d; i += 2) {
      const Real u = detail::load1<Real>(in + i), v = detail::load1<Real>(in + i + 1);
      out[i] = store_t::store(scalar::combine_at<Inverse, P>(u, v, row, i));
      out[i + 1] = store_t::store(scalar::combine_at<Inverse, P>(v, u, row, i + 1));
    }
  } else {
    const std::size_t H = d / 2;
    std::size_t j = 0;
    for (; j + N <= H; j += N) {
      const typename V::V u = In::load(in + j), v = In::load(in + j + H);
      const detail::coefs<Real, P> k = detail::load_coefs<P>(row, j);
      Out::store(out + j, detail::combine<!Inverse>(u, v, k));
      Out::store(out + j + H, detail::combine<Inverse>(v, u, k));
    }
    if constexpr (Dim == 0 || (Dim / 2) % N != 0)
    for (; j < H; ++j) {
      const Real u = detail::load1<Real>(in + j), v = detail::load1<Real>(in + j + H);
      out[j] = store_t::store(scalar::combine_at<!Inverse, P>(u, v, row, j));
      out[j + H] = store_t::store(scalar::combine_at<Inverse, P>(v, u, row, j));
    }
  }
}

/// Runs a validated job (same loop as arch::scalar::run).
template <std::size_t Dim, layout L, bool Inverse, bool Correct, class Real, class TIn, class TOut,
          class Pos>
inline void run(const table<Real>& tab, const rope::detail::job<TIn, TOut, Pos>& job) noexcept {
  const auto jb = job;  // a local copy: see arch::scalar::run
  const std::size_t d = Dim ? Dim : static_cast<std::size_t>(tab.rotary_dim());
  const std::size_t m = L == layout::interleaved ? d : d / 2;
  constexpr bool P = rope::detail::precise_store<Real, TOut>() && Correct;
  constexpr std::size_t scratch_size =
      (P ? 4 : 2) * (Dim ? Dim : static_cast<std::size_t>(max_rotary_dim));
  alignas(64) Real scratch[scratch_size];
  for (std::size_t t = 0; t < jb.n_tokens; ++t) {
    const rope::detail::row_ptrs<Real> row =
        rope::detail::token_rows<Pos>::template fetch<P>(tab, jb.positions, t, scratch, m);
    const TIn* in_t = jb.in + t * jb.in_token_stride;
    TOut* out_t = jb.out + t * jb.out_token_stride;
    for (std::size_t h = 0; h < jb.n_heads; ++h) {
      const TIn* in = in_t + h * jb.in_head_stride;
      TOut* out = out_t + h * jb.out_head_stride;
      rotate_row<Dim, L, Inverse, Correct>(in, out, row, d);
      if (jb.copy_tail) rope::detail::copy_tail(in, out, d, jb.head_dim);
    }
  }
}

}  // namespace neon
}  // namespace arch
ROPE_END_NAMESPACE  // rope

#endif  // ROPE_NEON
