// rope/slots.hpp: keys rotated straight into KV-cache slots, one slot per token, in one call:
// a batch of decoding sequences whose keys go to different places in a cache (one sequence's
// next slot each, or a paged cache's blocks), which a heads_view (one token stride) cannot
// describe.
//
//   // cache: [n_slots, H, D] (or head-major [H, n_slots, D]) as one heads_view of n_slots tokens
//   rope::status st = rope::apply_to_slots<float>(*tab, k_rows, cache, positions, slots);
//   // queries rotated and keys written to their slots, both validated before either is written:
//   st = rope::apply_qk_to_slots<float>(*tab, q_rows, q_rows, k_rows, cache, positions, slots);
//
// Token t of the input (rotated at positions[t]) is written to token slots[t] of the cache
// view: row (slots[t], h) for every head h, out of place, in the cache's storage type (float
// keys into an fp16 or bf16 cache in one pass, rounded once, as rope::apply). A slot of -1
// skips its token (vLLM's padding slot): nothing of it is written. Runs of tokens whose slots
// are consecutive (a prefill into one sequence's slots) go through rope::apply's kernels as
// one job; a batch of single tokens (decode) is one kernel call per token. Each row's bits are
// rope::apply's for that token at that position, and the accuracy contract is the same.
// A slot given twice: the later token's row is what the cache holds (tokens are written in
// order); the input's other rows and every other slot are left as they were.
//
// Hot path: noexcept, no allocation, no lock; everything is validated before the first write
// (rope::apply's errors, with the cache in place of the output: the input and the cache must
// share no element; the cache's heads and head_dim must be the input's; a slot below -1 or
// not below the cache's token count gives status::position_out_of_range; the positions and
// slots arrays must lie outside the cache, as positions outside an output for rope::apply).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rope/apply.hpp"
#include "rope/spec.hpp"
#include "rope/table.hpp"

ROPE_BEGIN_NAMESPACE

namespace detail {

/// Every slot is -1 (skip) or a token of a cache of n_slots tokens.
template <class Slot>
status check_slots(const Slot* slots, std::ptrdiff_t n, std::ptrdiff_t n_slots) noexcept {
  static_assert(std::is_integral<Slot>::value && std::is_signed<Slot>::value,
                "slots are signed integers (int32_t or int64_t; -1 skips a token)");
  if (n == 0) return status::ok;
  if (slots == nullptr) return status::null_pointer;
  for (std::ptrdiff_t t = 0; t < n; ++t) {
    const std::int64_t s = static_cast<std::int64_t>(slots[t]);
    if (s < -1 || s >= static_cast<std::int64_t>(n_slots)) return status::position_out_of_range;
  }
  return status::ok;
}

/// The input and the cache of an apply_to_slots call: each valid, the same heads and
/// head_dim, sharing no element.
template <class TIn, class TOut>
status check_slot_views(const heads_view<TIn>& in, const heads_view<TOut>& cache,
                        std::ptrdiff_t rotary_dim) noexcept {
  if (status st = check_view(in, rotary_dim); st != status::ok) return st;
  if (status st = check_view(cache, rotary_dim); st != status::ok) return st;
  if (in.n_heads != cache.n_heads || in.head_dim != cache.head_dim) return status::bad_dimension;
  if (!rows_disjoint(in, cache)) return status::overlapping_buffers;
  return status::ok;
}

/// Runs a validated call: each run of tokens with consecutive slots as one rope::apply job
/// from the input's rows to the cache's, tokens with slot -1 skipped.
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos, class Slot>
void run_slots(const table<Real>& tab, const heads_view<TIn>& in, const heads_view<TOut>& cache,
               const Pos* positions, const Slot* slots, direction dir, rounding rnd) noexcept {
  const std::ptrdiff_t n = in.n_tokens;
  std::ptrdiff_t t = 0;
  while (t < n) {
    const auto s = static_cast<std::ptrdiff_t>(slots[t]);
    if (s < 0) {
      ++t;
      continue;
    }
    std::ptrdiff_t end = t + 1;
    while (end < n && static_cast<std::ptrdiff_t>(slots[end]) == s + (end - t)) ++end;
    const heads_view<TIn> from{in.data + t * in.token_stride, end - t, in.n_heads, in.head_dim,
                               in.token_stride, in.head_stride};
    const heads_view<TOut> to{cache.data + s * cache.token_stride, end - t, cache.n_heads,
                              cache.head_dim, cache.token_stride, cache.head_stride};
    run<Dim>(tab, make_job(from, to, positions + t), dir, rnd);
    t = end;
  }
}

template <std::size_t Dim, class Real, class TIn, class TOut, class Pos, class Slot>
status apply_to_slots_views(const table<Real>& tab, const heads_view<TIn>& in,
                            const heads_view<TOut>& cache, const Pos* positions, const Slot* slots,
                            direction dir, rounding rnd) noexcept {
  if (status st = check_options(dir, rnd); st != status::ok) return st;
  if (status st = check_table<Dim>(tab); st != status::ok) return st;
  if (status st = check_slot_views(in, cache, tab.rotary_dim()); st != status::ok) return st;
  if (empty(in)) return status::ok;
  const std::ptrdiff_t n = in.n_tokens;
  if (status st = check_positions(positions, n, tab.length()); st != status::ok) return st;
  if (status st = check_slots(slots, n, cache.n_tokens); st != status::ok) return st;
  if (positions_overlap(cache, positions, n) || positions_overlap(cache, slots, n))
    return status::overlapping_buffers;
  run_slots<Dim>(tab, in, cache, positions, slots, dir, rnd);
  return status::ok;
}

template <std::size_t Dim, class Real, class TIn, class TQOut, class TKOut, class Pos, class Slot>
status apply_qk_to_slots_views(const table<Real>& tab, const heads_view<TIn>& q_in,
                               const heads_view<TQOut>& q_out, const heads_view<TIn>& k_in,
                               const heads_view<TKOut>& k_cache, const Pos* positions,
                               const Slot* k_slots, direction dir, rounding rnd) noexcept {
  if (status st = check_options(dir, rnd); st != status::ok) return st;
  if (status st = check_table<Dim>(tab); st != status::ok) return st;
  const std::ptrdiff_t d = tab.rotary_dim();
  if (status st = check_pair(q_in, q_out, d); st != status::ok) return st;
  if (status st = check_slot_views(k_in, k_cache, d); st != status::ok) return st;
  if (!empty(q_in) && !empty(k_in) && q_in.n_tokens != k_in.n_tokens)
    return status::bad_dimension;
  if (!rows_disjoint(q_out, k_cache) || !rows_disjoint(q_out, k_in) ||
      !rows_disjoint(k_cache, q_in))
    return status::overlapping_buffers;
  const std::ptrdiff_t n = empty(q_in) ? (empty(k_in) ? 0 : k_in.n_tokens) : q_in.n_tokens;
  if (n == 0) return status::ok;
  if (status st = check_positions(positions, n, tab.length()); st != status::ok) return st;
  const bool keys = !empty(k_in);
  if (keys) {
    if (status st = check_slots(k_slots, n, k_cache.n_tokens); st != status::ok) return st;
  }
  if (positions_overlap(q_out, positions, n) || positions_overlap(k_cache, positions, n) ||
      (keys && (positions_overlap(q_out, k_slots, n) || positions_overlap(k_cache, k_slots, n))))
    return status::overlapping_buffers;
  if (!empty(q_in)) run<Dim>(tab, make_job(q_in, q_out, positions), dir, rnd);
  if (keys) run_slots<Dim>(tab, k_in, k_cache, positions, k_slots, dir, rnd);
  return status::ok;
}

}  // namespace detail

/// Rotates token t of in at positions[t] into token slots[t] of cache (every head; -1: token
/// skipped). cache is a heads_view whose tokens are the cache's slots ([n_slots, H, D] packed,
/// head-major [H, n_slots, D], or any strides), with in's heads and head_dim; TOut its storage
/// type (float, fp16, bf16; computed in compute_type_t<T> and rounded once). Dims past
/// rotary_dim are copied bit for bit. Errors as rope::apply (above), nothing written.
template <class T, std::size_t Dim = dynamic, class TOut, class Pos, class Slot>
[[nodiscard]] status apply_to_slots(const table<compute_type_t<T>>& tab,
                                    const heads_view<const T>& in, const heads_view<TOut>& cache,
                                    const Pos* positions, const Slot* slots,
                                    direction dir = direction::forward,
                                    rounding rnd = rounding::accurate) noexcept {
  return detail::apply_to_slots_views<Dim>(tab, in, cache, positions, slots, dir, rnd);
}

/// From a mutable input view, its storage type deduced (as rope::apply out of place).
template <class TIn, class TOut, class Pos, class Slot,
          std::enable_if_t<!std::is_const<TIn>::value, int> = 0>
[[nodiscard]] status apply_to_slots(const table<compute_type_t<TIn>>& tab,
                                    const heads_view<TIn>& in, const heads_view<TOut>& cache,
                                    const Pos* positions, const Slot* slots,
                                    direction dir = direction::forward,
                                    rounding rnd = rounding::accurate) noexcept {
  return detail::apply_to_slots_views<dynamic>(tab, heads_view<const TIn>(in), cache, positions,
                                               slots, dir, rnd);
}

/// Queries rotated into q_out (in place when q_out is q_in's rows) and keys into cache slots
/// (as apply_to_slots), token t at positions[t] for both; every view and array is validated
/// before either tensor is written. The cache must share no element with q_in, q_out or k_in.
template <class T, std::size_t Dim = dynamic, class TQOut, class TKOut, class Pos, class Slot>
[[nodiscard]] status apply_qk_to_slots(const table<compute_type_t<T>>& tab,
                                       const heads_view<const T>& q_in,
                                       const heads_view<TQOut>& q_out,
                                       const heads_view<const T>& k_in,
                                       const heads_view<TKOut>& k_cache, const Pos* positions,
                                       const Slot* k_slots, direction dir = direction::forward,
                                       rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_to_slots_views<Dim>(tab, q_in, q_out, k_in, k_cache, positions, k_slots,
                                              dir, rnd);
}

/// The storage type deduced from input views of which one or both are mutable (both inputs of
/// one storage type; as rope::apply_qk).
template <class QIn, class TQOut, class KIn, class TKOut, class Pos, class Slot,
          class T = detail::deduced_input_t<QIn, KIn>>
[[nodiscard]] status apply_qk_to_slots(const table<compute_type_t<T>>& tab,
                                       const heads_view<QIn>& q_in, const heads_view<TQOut>& q_out,
                                       const heads_view<KIn>& k_in,
                                       const heads_view<TKOut>& k_cache, const Pos* positions,
                                       const Slot* k_slots, direction dir = direction::forward,
                                       rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_to_slots_views<dynamic>(tab, heads_view<const T>(q_in), q_out,
                                                  heads_view<const T>(k_in), k_cache, positions,
                                                  k_slots, dir, rnd);
}

ROPE_END_NAMESPACE  // rope
