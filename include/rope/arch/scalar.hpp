// rope/arch/scalar.hpp: the scalar kernels. This file is the specification: every vector path
// must give the same bits for the same inputs.
//
// Multiply-add policy (one policy for every path, so results are bitwise identical across
// ISAs and immune to the compiler's -ffp-contract setting): with table row values c, s,
//
//     u' = fma(u, c, v * s_u)      v' = fma(v, c, u * s_v)
//
// where s_u = -A sin(phi) and s_v = +A sin(phi) (negated for the inverse). The product inside
// the fma is rounded once, the fma rounds once: at most two roundings per output. Both
// members of a pair are read before either is written, so exact aliasing (in place) gives the
// same bits as out of place.
//
// 16-bit outputs (fp16, bf16) from float arithmetic add a correction, so that each is within
// 1 ulp of the correctly rounded exact result even where the pair cancels (|out| << r):
//
//     r    = fma(a, c, +-p),  p = b*s rounded          (the float result above)
//     corr = fma(a, c_lo, +-fma(b, s_lo, fma(b, s, -p)))
//     out  = r + corr
//
// where c_lo, s_lo are the table's low parts (rope/table.hpp: c + c_lo is A cos to ~2^-48 A)
// and fma(b, s, -p) is the product's rounding error, exactly. The float result alone is off by
// up to ~3 * 2^-24 * r, mostly from the table entries' own rounding; that is many 16-bit ulps
// of an output below ~2^-12 r (tests/storage_test.cpp, inputs drawn to cancel: 280 ulp fp16 ->
// fp16, 360 float -> fp16, tens of thousands in bf16; uniform inputs: 12 ulp fp16 -> fp16).
// With the correction the error is at most about 2 * 2^-24 |out| + 6.4 * 2^-48 r: within half a
// 16-bit ulp, hence at most 1 ulp after rounding, for every fp16 output of a pair with r < 2^19 (r
// here the rotated pair's norm, A times the input's; fp16's spacing never drops below 2^-24,
// and fp16 inputs stay below 2^16.5) and for every bf16 output above 2^-35 r; a bf16 output
// below 2^-35 r is within 1 ulp + 6.4 * 2^-48 r (measured: 1 ulp down to 2^-42 r, 1 ulp +
// 2^-49.6 r deeper, on float inputs searched to cancel, tests/storage_test.cpp). What remains
// is the double rounding (float, then 16 bits): about 1 output in 10^4 is 1 ulp off. Three
// more fmas and an add per output: 16-bit rotations take 1.5-2x the time of the float result
// rounded once (benchmarks/apply_bench). Non-finite values stay in their pair: a NaN input gives
// NaN (the vector paths match this path's bits for every result but a NaN's sign and payload); an
// infinite input gives an infinite or NaN output (the float result alone gave +-Inf), and so may a
// pair whose products pass float's range (|x| * A > ~3.4e38: only float and bf16 inputs reach it).
// Keeping r where it is not finite cost 10-17% of the 16-bit time. Finite results past the 16-bit
// range are +-Inf with the right sign. rope::rounding::fast drops the correction (template argument
// Correct = false): the float result rounded once, as fast as before it, and as far off where a
// pair cancels.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "rope/spec.hpp"
#include "rope/storage.hpp"
#include "rope/table.hpp"

ROPE_BEGIN_NAMESPACE
namespace detail {

/// One validated call: n_tokens x n_heads rows, element strides, one position per token (or,
/// for a Pos with a token_rows specialization, what that forms each token's row from).
template <class TIn, class TOut, class Pos>
struct job {
  const TIn* in;
  TOut* out;
  std::size_t n_tokens, n_heads;
  std::size_t in_token_stride, in_head_stride;
  std::size_t out_token_stride, out_head_stride;
  std::size_t head_dim;
  const Pos* positions;
  bool copy_tail;  // out of place: dims [rotary_dim, head_dim) are copied
};

/// Whether a float result is rounded once more into a 16-bit type on store: then the kernels
/// add the low-part correction (see the file comment) and use the table's low parts.
template <class Real, class TOut>
constexpr bool precise_store() noexcept {
  return std::is_same<Real, float>::value &&
         (format_of_v<TOut> == storage_format::fp16 || format_of_v<TOut> == storage_format::bf16);
}

/// One table row as the kernels read it: C and S (rope::table's row format) and, for
/// precise_store, their low parts (null otherwise).
template <class Real>
struct row_ptrs {
  const Real* c;
  const Real* s;
  const Real* c_lo;
  const Real* s_lo;
};

/// The row of position p: a pointer into a dense table, or formed into scratch (2*m values,
/// 4*m with the low parts), m = the table's row width.
template <bool Precise, class Real>
ROPE_ALWAYS_INLINE row_ptrs<Real> fetch_row(const table<Real>& tab, std::int64_t p, Real* scratch,
                                std::size_t m) noexcept {
  if constexpr (Precise) {
    const auto r = tab.row_with_low_parts(p, scratch);
    return {r.hi, r.hi + m, r.lo, r.lo + m};
  } else {
    const Real* row = tab.row(p, scratch);
    return {row, row + m, nullptr, nullptr};
  }
}

/// The row of token t of a job, as every path's run fetches it: the row of positions[t]. A job
/// whose Pos is not a position type forms its rows its own way through a specialization
/// (rope/mrope.hpp: a token's row gathered from its three positions' rows); the kernels then
/// rotate those rows as any other.
template <class Pos>
struct token_rows {
  template <bool Precise, class Real>
  static ROPE_ALWAYS_INLINE row_ptrs<Real> fetch(const table<Real>& tab, const Pos* positions,
                                                 std::size_t t, Real* scratch,
                                                 std::size_t m) noexcept {
    return fetch_row<Precise>(tab, static_cast<std::int64_t>(positions[t]), scratch, m);
  }
};

/// Copies dims [rotary_dim, head_dim) of one row: bit for bit for the same type, converted
/// (rounded once) between storage types.
template <class TIn, class TOut>
inline void copy_tail(const TIn* in, TOut* out, std::size_t from, std::size_t to) noexcept {
  if (to <= from) return;
  if constexpr (std::is_same<TIn, TOut>::value) {
    std::memcpy(out + from, in + from, (to - from) * sizeof(TIn));
  } else {
    using R = compute_type_t<TOut>;
    for (std::size_t k = from; k < to; ++k)
      out[k] = storage_traits<TOut>::store(static_cast<R>(storage_traits<TIn>::load(in[k])));
  }
}

}  // namespace detail

namespace arch {
namespace scalar {

/// a*c + b*s (Minus: a*c - b*s) by the multiply-add policy: b*s rounded, then one fma.
template <bool Minus, class Real>
inline Real combine(Real a, Real b, Real c, Real s) noexcept {
  const Real p = b * s;
  return std::fma(a, c, Minus ? -p : p);
}

/// combine plus the correction by the low parts c_lo, s_lo, for 16-bit outputs (file comment).
template <bool Minus, class Real>
inline Real combine_precise(Real a, Real b, Real c, Real s, Real c_lo, Real s_lo) noexcept {
  const Real p = b * s;
  const Real r = std::fma(a, c, Minus ? -p : p);
  // detail::opaque: GCC (12, -O2 with FMA) rewrote -fma(x, y, z) as fma(-x, y, -z), which is +0
  // where the negation of an exact +0 is -0: with q = fma(b, s_lo, e), fma(a, c_lo, -q) then lost
  // the sign of zero outputs of zero pairs (inputs +-0), against the vector paths' fmsub.
  const Real q = detail::opaque(std::fma(b, s_lo, std::fma(b, s, -p)));
  const Real corr = std::fma(a, c_lo, Minus ? -q : q);
  return r + corr;
}

/// The output for row index i: a is the element there, b its pair partner; combine with the
/// row's values at i, precise (low parts) for 16-bit outputs.
template <bool Minus, bool Precise, class Real>
inline Real combine_at(Real a, Real b, const detail::row_ptrs<Real>& row, std::size_t i) noexcept {
  if constexpr (Precise)
    return combine_precise<Minus>(a, b, row.c[i], row.s[i], row.c_lo[i], row.s_lo[i]);
  else
    return combine<Minus>(a, b, row.c[i], row.s[i]);
}

/// Rotates the first d = (Dim ? Dim : rotary_dim) coordinates of one row (rope::table's row
/// format; with low parts when TOut is a 16-bit type computed in float and Correct, i.e.
/// rounding::accurate).
template <std::size_t Dim, layout L, bool Inverse, bool Correct = true, class TIn, class TOut,
          class Real>
inline void rotate_row(const TIn* in, TOut* out, const detail::row_ptrs<Real>& row,
                       std::size_t rotary_dim) noexcept {
  using load_t = storage_traits<TIn>;
  using store_t = storage_traits<TOut>;
  constexpr bool P = detail::precise_store<Real, TOut>() && Correct;
  const std::size_t d = Dim ? Dim : rotary_dim;
  if constexpr (L == layout::interleaved) {
    // S holds the pair's signs: out = x*C + swap_pairs(x)*S.
    for (std::size_t i = 0; i < d; i += 2) {
      const Real u = static_cast<Real>(load_t::load(in[i]));
      const Real v = static_cast<Real>(load_t::load(in[i + 1]));
      out[i] = store_t::store(combine_at<Inverse, P>(u, v, row, i));
      out[i + 1] = store_t::store(combine_at<Inverse, P>(v, u, row, i + 1));
    }
  } else {
    const std::size_t H = d / 2;
    for (std::size_t j = 0; j < H; ++j) {
      const Real u = static_cast<Real>(load_t::load(in[j]));
      const Real v = static_cast<Real>(load_t::load(in[j + H]));
      out[j] = store_t::store(combine_at<!Inverse, P>(u, v, row, j));
      out[j + H] = store_t::store(combine_at<Inverse, P>(v, u, row, j));
    }
  }
}

/// The same with a row of C and S only (no low parts).
template <std::size_t Dim, layout L, bool Inverse, class TIn, class TOut, class Real>
inline void rotate_row(const TIn* in, TOut* out, const Real* C, const Real* S,
                       std::size_t rotary_dim) noexcept {
  static_assert(!detail::precise_store<Real, TOut>(), "16-bit outputs need the low parts");
  rotate_row<Dim, L, Inverse>(in, out, detail::row_ptrs<Real>{C, S, nullptr, nullptr}, rotary_dim);
}

/// Runs a validated job: for each token, fetch (or form) the table row once, then rotate
/// every head of that token with it. Every path first copies the job into a local: read
/// through the reference, its fields are reloaded after each row's stores (those might alias
/// it, as far as the compiler knows), and a reload whose address shares its low 12 bits with
/// a just-stored row element waits on the store (4K aliasing): D = 128 half-split decode took
/// 1.5x as long for rows at some page offsets as at others.
template <std::size_t Dim, layout L, bool Inverse, bool Correct, class Real, class TIn, class TOut,
          class Pos>
inline void run(const table<Real>& tab, const detail::job<TIn, TOut, Pos>& job) noexcept {
  const auto jb = job;  // a local copy: see arch::scalar::run
  const std::size_t d = Dim ? Dim : static_cast<std::size_t>(tab.rotary_dim());
  const std::size_t m = L == layout::interleaved ? d : d / 2;
  constexpr bool P = detail::precise_store<Real, TOut>() && Correct;
  constexpr std::size_t scratch_size =
      (P ? 4 : 2) * (Dim ? Dim : static_cast<std::size_t>(max_rotary_dim));
  alignas(64) Real scratch[scratch_size];
  for (std::size_t t = 0; t < jb.n_tokens; ++t) {
    const detail::row_ptrs<Real> row =
        detail::token_rows<Pos>::template fetch<P>(tab, jb.positions, t, scratch, m);
    const TIn* in_t = jb.in + t * jb.in_token_stride;
    TOut* out_t = jb.out + t * jb.out_token_stride;
    for (std::size_t h = 0; h < jb.n_heads; ++h) {
      const TIn* in = in_t + h * jb.in_head_stride;
      TOut* out = out_t + h * jb.out_head_stride;
      if constexpr (std::is_same<TIn, TOut>::value) {
        // In place: pass one pointer twice so the compiler sees the zero dependence distance
        // and vectorizes without a runtime alias check.
        if (static_cast<const void*>(in) == static_cast<const void*>(out)) {
          rotate_row<Dim, L, Inverse, Correct>(out, out, row, d);
          continue;
        }
      }
      rotate_row<Dim, L, Inverse, Correct>(in, out, row, d);
      if (jb.copy_tail) detail::copy_tail(in, out, d, jb.head_dim);
    }
  }
}

}  // namespace scalar
}  // namespace arch
ROPE_END_NAMESPACE  // rope
