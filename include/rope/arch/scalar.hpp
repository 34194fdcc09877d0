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
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "rope/spec.hpp"
#include "rope/storage.hpp"
#include "rope/table.hpp"

namespace rope {
namespace detail {

/// One validated call: n_tokens x n_heads rows, element strides, one position per token.
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

/// Rotates the first d = (Dim ? Dim : rotary_dim) coordinates of one row. C and S are the
/// table row (rope::table's row format).
template <std::size_t Dim, layout L, bool Inverse, class TIn, class TOut, class Real>
inline void rotate_row(const TIn* in, TOut* out, const Real* C, const Real* S,
                       std::size_t rotary_dim) noexcept {
  using load_t = storage_traits<TIn>;
  using store_t = storage_traits<TOut>;
  const std::size_t d = Dim ? Dim : rotary_dim;
  if constexpr (L == layout::interleaved) {
    for (std::size_t i = 0; i < d; i += 2) {
      const Real u = static_cast<Real>(load_t::load(in[i]));
      const Real v = static_cast<Real>(load_t::load(in[i + 1]));
      const Real su = Inverse ? -S[i] : S[i];
      const Real sv = Inverse ? -S[i + 1] : S[i + 1];
      out[i] = store_t::store(std::fma(u, C[i], v * su));
      out[i + 1] = store_t::store(std::fma(v, C[i + 1], u * sv));
    }
  } else {
    const std::size_t P = d / 2;
    for (std::size_t j = 0; j < P; ++j) {
      const Real u = static_cast<Real>(load_t::load(in[j]));
      const Real v = static_cast<Real>(load_t::load(in[j + P]));
      const Real s = Inverse ? -S[j] : S[j];
      out[j] = store_t::store(std::fma(u, C[j], -(v * s)));
      out[j + P] = store_t::store(std::fma(v, C[j], u * s));
    }
  }
}

/// Runs a validated job: for each token, fetch (or form) the table row once, then rotate
/// every head of that token with it. Every path first copies the job into a local: read
/// through the reference, its fields are reloaded after each row's stores (those might alias
/// it, as far as the compiler knows), and a reload whose address shares its low 12 bits with
/// a just-stored row element waits on the store (4K aliasing): D = 128 half-split decode took
/// 1.5x as long for rows at some page offsets as at others.
template <std::size_t Dim, layout L, bool Inverse, class Real, class TIn, class TOut, class Pos>
inline void run(const table<Real>& tab, const detail::job<TIn, TOut, Pos>& job) noexcept {
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
    for (std::size_t h = 0; h < jb.n_heads; ++h) {
      const TIn* in = in_t + h * jb.in_head_stride;
      TOut* out = out_t + h * jb.out_head_stride;
      if constexpr (std::is_same<TIn, TOut>::value) {
        // In place: pass one pointer twice so the compiler sees the zero dependence distance
        // and vectorizes without a runtime alias check.
        if (static_cast<const void*>(in) == static_cast<const void*>(out)) {
          rotate_row<Dim, L, Inverse>(out, out, C, S, d);
          continue;
        }
      }
      rotate_row<Dim, L, Inverse>(in, out, C, S, d);
      if (jb.copy_tail) detail::copy_tail(in, out, d, jb.head_dim);
    }
  }
}

}  // namespace scalar
}  // namespace arch
}  // namespace rope
