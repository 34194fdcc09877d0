// rope/mrope.hpp: multimodal RoPE (M-RoPE) of Qwen2-VL, Qwen2.5-VL, Qwen3-VL, ERNIE-4.5-VL,
// Bailing's VL models and openPangu-VL:
// each token has three positions (temporal, height, width) and each rotated pair takes its
// angle from one of them, chosen by the model's mrope_section.
//
//   const rope::mrope_sections sec{16, 24, 24};            // Qwen2-VL / Qwen2.5-VL, d = 128
//   rope::status st = rope::apply_mrope<float>(*tab, sec, q_rows, pos_t, pos_h, pos_w);
//
// Pair j (frequency w_j of the table, as rope::apply) is rotated by p_k(t) * w_j, where k is
// its stream:
//   sections (Qwen2-VL, Qwen2.5-VL): j < t -> temporal, t <= j < t + h -> height, the rest width;
//   interleaved (Qwen3-VL, mrope_interleaved): j % 3 == 1 and j < 3h -> height, j % 3 == 2 and
//     j < 3w -> width, every other pair temporal;
//   hw_alternating (ERNIE-4.5-VL, Bailing; h == w): j < h + w -> height for even j, width for
//     odd j, the last t pairs temporal (HF permutes inv_freq so that, after its recomposition,
//     pair j still turns by w_j: the same rotation);
//   balanced (openPangu's mrope_interleaved): a greedy list (rope::mrope_sections), the last
//     pair temporal.
// (HF builds cos/sin per stream and splits their last dim by mrope_section * 2, chunk i taking
// stream i % 3: the same pairs in its half_split layout.) A token whose three positions are
// equal (every text token) is rotated exactly as rope::apply rotates it at that position, bit
// for bit; runs of such tokens go through rope::apply's kernels (SIMD, at its speed). Tokens
// with different positions (image and video tokens) go through the same kernels with a row
// gathered per token from the three positions' table rows (each entry the value rope::apply
// uses at its stream's position): each pair is rope::apply's result at its stream's position,
// bit for bit, on every path, at 1.02-1.17x rope::apply's time (benchmarks/mrope_bench: 32
// heads of 128; a vision encoder's 16 heads of 80, 1.14-1.32x).
//
// XD-RoPE (HunyuanOCR, Hunyuan-VL; rope::apply_xdrope, rope::xdrope_sections) is the same with
// four positions per token (sequence position, column, row, image index), each taking a
// consecutive section of the pairs, and runs on the same gathered rows.
//
// rope::apply_qk_mrope rotates queries and keys in one call (as rope::apply_qk). A context
// shift of M-RoPE keys is rope::shift_positions with any one stream's positions: a shift by
// delta turns every pair by delta * w_j, whatever its stream.
//
// Hot path: noexcept, no allocation, no lock; everything is validated before the first write
// (the errors of rope::apply, plus status::bad_dimension for sections that do not match the
// table's rotary_dim / 2 pairs, and the position checks on every stream: three for M-RoPE,
// four for XD-RoPE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "rope/apply.hpp"
#include "rope/arch/scalar.hpp"
#include "rope/config.hpp"
#include "rope/spec.hpp"
#include "rope/table.hpp"

ROPE_BEGIN_NAMESPACE

namespace detail {

/// The "positions" of a job of tokens whose positions differ (image and video tokens): the
/// three (M-RoPE) or four (XD-RoPE) streams from the job's first token on, and which stream
/// each row entry takes. rope::detail::token_rows forms token t's row from its positions' rows,
/// and every path's kernels (rope::apply's: SIMD, row held in registers) rotate the token's
/// heads with it. N, the stream count, is a template parameter so that fetch's loop over the
/// streams unrolls (a run-time count made M-RoPE's image tokens 8-15% slower in mrope_bench).
template <class Real, class Pos, std::size_t N>
struct gathered_tokens {
  const Pos* streams[N];  // M-RoPE's three or XD-RoPE's four
  // Consecutive sections (Qwen2-VL, Qwen2.5-VL, XD-RoPE): stream k's row entries are
  // [first[k], first[k + 1]) of each of C, S and their low parts. Interleaved (Qwen3-VL),
  // alternating (ERNIE-4.5-VL, Bailing) and balanced (openPangu): entry i takes stream
  // entry_stream[i].
  std::size_t first[N + 1];
  const unsigned char* entry_stream;  // null for consecutive sections
  Real* scratch;                      // a row with its low parts, for a compact table's rows
};

/// Copies entries [from, to) of each of the row's parts into out (parts of m entries each).
template <bool Precise, class Real>
ROPE_ALWAYS_INLINE void copy_entries(const row_ptrs<Real>& src, Real* out, std::size_t m,
                                     std::size_t from, std::size_t to) noexcept {
  const std::size_t n = (to - from) * sizeof(Real);
  std::memcpy(out + from, src.c + from, n);
  std::memcpy(out + m + from, src.s + from, n);
  if constexpr (Precise) {
    std::memcpy(out + 2 * m + from, src.c_lo + from, n);
    std::memcpy(out + 3 * m + from, src.s_lo + from, n);
  }
}

template <class Real, class Pos, std::size_t N>
struct token_rows<gathered_tokens<Real, Pos, N>> {
  /// Token t's row in out (C, S and, Precise, their low parts: m entries each), every entry
  /// from its stream's row: the values rope::apply would use at that stream's position, so
  /// each pair's result is rope::apply's at its stream's position, bit for bit.
  template <bool Precise>
  static row_ptrs<Real> fetch(const table<Real>& tab, const gathered_tokens<Real, Pos, N>* g,
                              std::size_t t, Real* out, std::size_t m) noexcept {
    for (std::size_t k = 0; k < N; ++k) {
      if (!g->entry_stream && g->first[k] == g->first[k + 1]) continue;
      const row_ptrs<Real> src =
          fetch_row<Precise>(tab, static_cast<std::int64_t>(g->streams[k][t]), g->scratch, m);
      if (!g->entry_stream) {
        copy_entries<Precise>(src, out, m, g->first[k], g->first[k + 1]);
      } else if (k == 0) {
        copy_entries<Precise>(src, out, m, 0, m);  // then streams 1 and 2 over their entries
      } else {
        const unsigned char* e = g->entry_stream;
        const unsigned char kk = static_cast<unsigned char>(k);
        for (std::size_t i = 0; i < m; ++i) {
          out[i] = e[i] == kk ? src.c[i] : out[i];
          out[m + i] = e[i] == kk ? src.s[i] : out[m + i];
          if constexpr (Precise) {
            out[2 * m + i] = e[i] == kk ? src.c_lo[i] : out[2 * m + i];
            out[3 * m + i] = e[i] == kk ? src.s_lo[i] : out[3 * m + i];
          }
        }
      }
    }
    return {out, out + m, Precise ? out + 2 * m : nullptr, Precise ? out + 3 * m : nullptr};
  }
};

/// The job's tokens [t0, t1) as a job of their own (positions: stream 0's).
template <class TIn, class TOut, class Pos>
job<TIn, TOut, Pos> sub_job(const job<TIn, TOut, Pos>& jb, std::size_t t0,
                            std::size_t t1) noexcept {
  job<TIn, TOut, Pos> sub = jb;
  sub.in = jb.in + t0 * jb.in_token_stride;
  sub.out = jb.out + t0 * jb.out_token_stride;
  sub.n_tokens = t1 - t0;
  sub.positions = jb.positions + t0;
  return sub;
}

/// A call's position streams (unused ones null), passed on as an array.
template <class Pos>
struct stream_ptrs {
  const Pos* p[4];
};

/// Streams per token: M-RoPE's three, XD-RoPE's four.
template <class Sections>
inline constexpr std::size_t stream_count = std::is_same<Sections, xdrope_sections>::value ? 4 : 3;

inline bool sections_match(const mrope_sections& s, std::ptrdiff_t rotary_dim) noexcept {
  return mrope_sections_match(s, rotary_dim);
}
inline bool sections_match(const xdrope_sections& s, std::ptrdiff_t rotary_dim) noexcept {
  return xdrope_sections_match(s, rotary_dim);
}

/// Pair counts of consecutive sections, in stream order (XD-RoPE's always are; M-RoPE's
/// interleaved, hw_alternating and balanced pairs pick their stream one by one: mrope_streams).
inline void consecutive_counts(const mrope_sections& s, std::size_t count[4]) noexcept {
  const int c[4] = {s.temporal, s.height, s.width, 0};
  for (int k = 0; k < 4; ++k) count[k] = static_cast<std::size_t>(c[k]);
}
inline void consecutive_counts(const xdrope_sections& s, std::size_t count[4]) noexcept {
  const int c[4] = {s.position, s.width, s.height, s.image};
  for (int k = 0; k < 4; ++k) count[k] = static_cast<std::size_t>(c[k]);
}

/// The gathered_tokens of streams (each from the job's first token) under sections sec, for a
/// table of layout l and rotary dim d. entry_stream: room for d entries; scratch: for a row,
/// 2 * d values (4 * d where the kernels read low parts: precise_store).
template <class Real, class Pos, class Sections, std::size_t N = stream_count<Sections>>
gathered_tokens<Real, Pos, N> gather_streams(const Sections& sec, layout l, std::size_t d,
                                             const Pos* const streams[4],
                                             [[maybe_unused]] unsigned char* entry_stream,
                                             Real* scratch) noexcept {
  const bool per_element = l == layout::interleaved;
  const std::size_t m = per_element ? d : d / 2;  // entries per part of a row
  gathered_tokens<Real, Pos, N> g{};
  for (std::size_t k = 0; k < N; ++k) g.streams[k] = streams[k];
  for (std::size_t k = 1; k <= N; ++k) g.first[k] = m;
  g.scratch = scratch;
  if constexpr (std::is_same<Sections, mrope_sections>::value) {
    if (sec.interleaved || sec.hw_alternating || sec.balanced) {
      // Pair streams into the first d / 2 entries; interleaved rows repeat each for both
      // elements of its pair (filled from the end, so no pair's stream is overwritten first).
      mrope_streams(sec, d / 2, entry_stream);
      if (per_element)
        for (std::size_t i = m; i-- > 0;) entry_stream[i] = entry_stream[i / 2];
      g.entry_stream = entry_stream;
      return g;
    }
  }  // XD-RoPE's sections are consecutive: entry_stream unused
  std::size_t count[4];
  consecutive_counts(sec, count);
  const std::size_t per_pair = per_element ? 2 : 1;
  for (std::size_t k = 1; k < N; ++k) g.first[k] = g.first[k - 1] + per_pair * count[k - 1];
  return g;
}

/// Tokens [t0, t1) of a validated job whose positions differ between streams, on rope::apply's
/// kernels with rows gathered by token_rows. Out of line: its scratch row and entry streams
/// (17 KB with a run-time dim, besides the kernel's own row of 16 KB) stay off the text
/// tokens' path.
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos, class Sections>
ROPE_NOINLINE void run_gathered(const table<Real>& tab, const job<TIn, TOut, Pos>& jb,
                                const Pos* const streams[4], const Sections& sec,
                                std::size_t t0, std::size_t t1, direction dir,
                                rounding rnd) noexcept {
  constexpr std::size_t cap = Dim ? Dim : static_cast<std::size_t>(max_rotary_dim);
  alignas(64) Real scratch[(precise_store<Real, TOut>() ? 4 : 2) * cap];
  unsigned char entry_stream[cap];
  constexpr std::size_t N = stream_count<Sections>;
  const Pos* from_t0[4] = {nullptr, nullptr, nullptr, nullptr};
  for (std::size_t k = 0; k < N; ++k) from_t0[k] = streams[k] + t0;
  const gathered_tokens<Real, Pos, N> g =
      gather_streams(sec, tab.layout(), static_cast<std::size_t>(tab.rotary_dim()), from_t0,
                     entry_stream, scratch);
  const job<TIn, TOut, Pos> sub = sub_job(jb, t0, t1);
  run<Dim>(tab,
           job<TIn, TOut, gathered_tokens<Real, Pos, N>>{
               sub.in, sub.out, sub.n_tokens, sub.n_heads, sub.in_token_stride, sub.in_head_stride,
               sub.out_token_stride, sub.out_head_stride, sub.head_dim, &g, sub.copy_tail},
           dir, rnd);
}

/// Runs a validated job: runs of tokens whose positions all agree through rope::apply's
/// kernels, the others through the gathered rows.
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos, class Sections>
void run_mrope(const table<Real>& tab, const Sections& sec, const job<TIn, TOut, Pos>& jb,
               const Pos* const streams[4], direction dir, rounding rnd) noexcept {
  const std::size_t n = jb.n_tokens;
  constexpr std::size_t n_streams = stream_count<Sections>;
  const auto agree = [&](std::size_t i) {
    for (std::size_t k = 1; k < n_streams; ++k)
      if (streams[k][i] != streams[0][i]) return false;
    return true;
  };
  std::size_t t = 0;
  while (t < n) {
    const bool same = agree(t);
    std::size_t end = t + 1;
    while (end < n && agree(end) == same) ++end;
    if (same) {
      run<Dim>(tab, sub_job(jb, t, end), dir, rnd);
    } else {
      run_gathered<Dim>(tab, jb, streams, sec, t, end, dir, rnd);
    }
    t = end;
  }
}

/// The n_streams position streams of n tokens: in the table's range, none inside an output.
template <class TA, class TB, class Pos>
status check_streams(const Pos* const streams[4], std::size_t n_streams, std::ptrdiff_t n,
                     std::int64_t length, const heads_view<TA>& out_a,
                     const heads_view<TB>& out_b) noexcept {
  for (std::size_t k = 0; k < n_streams; ++k) {
    if (status st = check_positions(streams[k], n, length); st != status::ok) return st;
    if (positions_overlap(out_a, streams[k], n) || positions_overlap(out_b, streams[k], n))
      return status::overlapping_buffers;
  }
  return status::ok;
}

// streams: the positions, one pointer per stream (stream_count<Sections> of them).
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos, class Sections>
status apply_mrope_views(const table<Real>& tab, const Sections& sec, const heads_view<TIn>& in,
                         const heads_view<TOut>& out, const Pos* const streams[4], direction dir,
                         rounding rnd) noexcept {
  if (status st = check_options(dir, rnd); st != status::ok) return st;
  if (status st = check_table<Dim>(tab); st != status::ok) return st;
  if (!sections_match(sec, tab.rotary_dim())) return status::bad_dimension;
  if (status st = check_pair(in, out, tab.rotary_dim()); st != status::ok) return st;
  if (empty(in)) return status::ok;
  if (status st = check_streams(streams, stream_count<Sections>, in.n_tokens, tab.length(), out,
                                out);
      st != status::ok)
    return st;
  run_mrope<Dim>(tab, sec, make_job(in, out, streams[0]), streams, dir, rnd);
  return status::ok;
}

template <std::size_t Dim, class Real, class TIn, class TQOut, class TKOut, class Pos,
          class Sections>
status apply_qk_mrope_views(const table<Real>& tab, const Sections& sec,
                            const heads_view<TIn>& q_in, const heads_view<TQOut>& q_out,
                            const heads_view<TIn>& k_in, const heads_view<TKOut>& k_out,
                            const Pos* const streams[4], direction dir, rounding rnd) noexcept {
  if (status st = check_options(dir, rnd); st != status::ok) return st;
  if (status st = check_table<Dim>(tab); st != status::ok) return st;
  if (!sections_match(sec, tab.rotary_dim())) return status::bad_dimension;
  const std::ptrdiff_t d = tab.rotary_dim();
  if (status st = check_pair(q_in, q_out, d); st != status::ok) return st;
  if (status st = check_pair(k_in, k_out, d); st != status::ok) return st;
  if (!empty(q_in) && !empty(k_in) && q_in.n_tokens != k_in.n_tokens) return status::bad_dimension;
  if (!rows_disjoint(q_out, k_out) || !rows_disjoint(q_out, k_in) || !rows_disjoint(k_out, q_in))
    return status::overlapping_buffers;
  const std::ptrdiff_t n = empty(q_in) ? (empty(k_in) ? 0 : k_in.n_tokens) : q_in.n_tokens;
  if (n == 0) return status::ok;
  if (status st = check_streams(streams, stream_count<Sections>, n, tab.length(), q_out, k_out);
      st != status::ok)
    return st;
  if (!empty(q_in)) run_mrope<Dim>(tab, sec, make_job(q_in, q_out, streams[0]), streams, dir, rnd);
  if (!empty(k_in)) run_mrope<Dim>(tab, sec, make_job(k_in, k_out, streams[0]), streams, dir, rnd);
  return status::ok;
}

}  // namespace detail

/// The stream (0 temporal, 1 height, 2 width) each of the rotary_dim / 2 pairs takes under
/// sec, into out[0, rotary_dim / 2): the map apply_mrope uses, for an engine that builds its
/// own (a GPU kernel's). False, nothing written, where sec does not assign exactly
/// rotary_dim / 2 pairs (apply_mrope's status::bad_dimension) or out is null.
[[nodiscard]] inline bool mrope_pair_streams(const mrope_sections& sec, int rotary_dim,
                                             unsigned char* out) noexcept {
  if (!out || rotary_dim < 2 || rotary_dim % 2 != 0 || rotary_dim > max_rotary_dim ||
      !detail::mrope_sections_match(sec, rotary_dim))
    return false;
  detail::mrope_streams(sec, static_cast<std::size_t>(rotary_dim / 2), out);
  return true;
}

/// Rotates in -> out (out of place, or in place when out is the same rows as in) with M-RoPE:
/// token t at positions pos_t[t] (temporal), pos_h[t] (height), pos_w[t] (width), each pair
/// taking its stream's position by `sec` (above). HF's position_ids of shape [3, n_tokens] are
/// pos_t = ids, pos_h = ids + n_tokens, pos_w = ids + 2 * n_tokens. The table is the model's
/// plain (or scaled) table, as for rope::apply; the layout is the table's (HF's Qwen-VL code is
/// half_split). Types, rounding and errors as rope::apply; sections that do not assign the
/// table's rotary_dim / 2 pairs give status::bad_dimension, nothing written.
template <class T, std::size_t Dim = dynamic, class TOut, class Pos>
[[nodiscard]] status apply_mrope(const table<compute_type_t<T>>& tab, const mrope_sections& sec,
                                 const heads_view<const T>& in, const heads_view<TOut>& out,
                                 const Pos* pos_t, const Pos* pos_h, const Pos* pos_w,
                                 direction dir = direction::forward,
                                 rounding rnd = rounding::accurate) noexcept {
  return detail::apply_mrope_views<Dim>(
      tab, sec, in, out, detail::stream_ptrs<Pos>{{pos_t, pos_h, pos_w, nullptr}}.p, dir, rnd);
}

/// Out of place from a mutable input view, its storage type deduced (as rope::apply).
template <class TIn, class TOut, class Pos, std::enable_if_t<!std::is_const<TIn>::value, int> = 0>
[[nodiscard]] status apply_mrope(const table<compute_type_t<TIn>>& tab, const mrope_sections& sec,
                                 const heads_view<TIn>& in, const heads_view<TOut>& out,
                                 const Pos* pos_t, const Pos* pos_h, const Pos* pos_w,
                                 direction dir = direction::forward,
                                 rounding rnd = rounding::accurate) noexcept {
  return detail::apply_mrope_views<dynamic>(
      tab, sec, heads_view<const TIn>(in), out,
      detail::stream_ptrs<Pos>{{pos_t, pos_h, pos_w, nullptr}}.p, dir, rnd);
}

/// In place.
template <class T, std::size_t Dim = dynamic, class Pos>
[[nodiscard]] status apply_mrope(const table<compute_type_t<T>>& tab, const mrope_sections& sec,
                                 const heads_view<T>& x, const Pos* pos_t, const Pos* pos_h,
                                 const Pos* pos_w, direction dir = direction::forward,
                                 rounding rnd = rounding::accurate) noexcept {
  return detail::apply_mrope_views<Dim>(
      tab, sec, x, x, detail::stream_ptrs<Pos>{{pos_t, pos_h, pos_w, nullptr}}.p, dir, rnd);
}

/// Queries and keys in one call (grouped-query attention: their own head counts and strides),
/// out of place or in place per tensor (out the rows of in), each output its own type (e.g.
/// queries in place, keys rounded once into an fp16 cache); both validated before either is
/// written, as rope::apply_qk.
template <class T, std::size_t Dim = dynamic, class TQOut, class TKOut, class Pos>
[[nodiscard]] status apply_qk_mrope(const table<compute_type_t<T>>& tab, const mrope_sections& sec,
                                    const heads_view<const T>& q_in, const heads_view<TQOut>& q_out,
                                    const heads_view<const T>& k_in, const heads_view<TKOut>& k_out,
                                    const Pos* pos_t, const Pos* pos_h, const Pos* pos_w,
                                    direction dir = direction::forward,
                                    rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_mrope_views<Dim>(
      tab, sec, q_in, q_out, k_in, k_out,
      detail::stream_ptrs<Pos>{{pos_t, pos_h, pos_w, nullptr}}.p, dir, rnd);
}

/// The storage type deduced from input views of which one or both are mutable (both inputs of
/// one storage type; as rope::apply_qk).
template <class QIn, class TQOut, class KIn, class TKOut, class Pos,
          class T = detail::deduced_input_t<QIn, KIn>>
[[nodiscard]] status apply_qk_mrope(const table<compute_type_t<T>>& tab, const mrope_sections& sec,
                                    const heads_view<QIn>& q_in, const heads_view<TQOut>& q_out,
                                    const heads_view<KIn>& k_in, const heads_view<TKOut>& k_out,
                                    const Pos* pos_t, const Pos* pos_h, const Pos* pos_w,
                                    direction dir = direction::forward,
                                    rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_mrope_views<dynamic>(
      tab, sec, heads_view<const T>(q_in), q_out, heads_view<const T>(k_in), k_out,
      detail::stream_ptrs<Pos>{{pos_t, pos_h, pos_w, nullptr}}.p, dir, rnd);
}

/// Queries and keys in one call, in place.
template <class T, std::size_t Dim = dynamic, class Pos>
[[nodiscard]] status apply_qk_mrope(const table<compute_type_t<T>>& tab, const mrope_sections& sec,
                                    const heads_view<T>& q, const heads_view<T>& k,
                                    const Pos* pos_t, const Pos* pos_h, const Pos* pos_w,
                                    direction dir = direction::forward,
                                    rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_mrope_views<Dim>(
      tab, sec, q, q, k, k, detail::stream_ptrs<Pos>{{pos_t, pos_h, pos_w, nullptr}}.p, dir, rnd);
}

/// XD-RoPE (HunyuanOCR, Hunyuan-VL: rope::xdrope_sections): token t at positions pos_p[t]
/// (its sequence position), pos_w[t] (column), pos_h[t] (row) and pos_i[t] (the image's index),
/// each pair taking its section's position. HF's position_ids of shape [4, n_tokens] are
/// pos_p = ids, pos_w = ids + n, pos_h = ids + 2 n, pos_i = ids + 3 n. The table is the
/// model's (Hunyuan's fixed NTK base: from_config with type xdrope); a token whose four
/// positions agree (every text token) is rope::apply's result bit for bit, the others are
/// each pair rope::apply's result at its stream's position (as apply_mrope). Types, rounding
/// and errors as rope::apply; sections that do not assign the table's rotary_dim / 2 pairs
/// give status::bad_dimension, nothing written. Out of place or in place (out the rows of in).
template <class T, std::size_t Dim = dynamic, class TOut, class Pos>
[[nodiscard]] status apply_xdrope(const table<compute_type_t<T>>& tab, const xdrope_sections& sec,
                                  const heads_view<const T>& in, const heads_view<TOut>& out,
                                  const Pos* pos_p, const Pos* pos_w, const Pos* pos_h,
                                  const Pos* pos_i, direction dir = direction::forward,
                                  rounding rnd = rounding::accurate) noexcept {
  return detail::apply_mrope_views<Dim>(
      tab, sec, in, out, detail::stream_ptrs<Pos>{{pos_p, pos_w, pos_h, pos_i}}.p, dir, rnd);
}

/// XD-RoPE out of place from a mutable input view, its storage type deduced (as rope::apply).
template <class TIn, class TOut, class Pos, std::enable_if_t<!std::is_const<TIn>::value, int> = 0>
[[nodiscard]] status apply_xdrope(const table<compute_type_t<TIn>>& tab, const xdrope_sections& sec,
                                  const heads_view<TIn>& in, const heads_view<TOut>& out,
                                  const Pos* pos_p, const Pos* pos_w, const Pos* pos_h,
                                  const Pos* pos_i, direction dir = direction::forward,
                                  rounding rnd = rounding::accurate) noexcept {
  return detail::apply_mrope_views<dynamic>(
      tab, sec, heads_view<const TIn>(in), out,
      detail::stream_ptrs<Pos>{{pos_p, pos_w, pos_h, pos_i}}.p, dir, rnd);
}

/// XD-RoPE in place.
template <class T, std::size_t Dim = dynamic, class Pos>
[[nodiscard]] status apply_xdrope(const table<compute_type_t<T>>& tab, const xdrope_sections& sec,
                                  const heads_view<T>& x, const Pos* pos_p, const Pos* pos_w,
                                  const Pos* pos_h, const Pos* pos_i,
                                  direction dir = direction::forward,
                                  rounding rnd = rounding::accurate) noexcept {
  return detail::apply_mrope_views<Dim>(
      tab, sec, x, x, detail::stream_ptrs<Pos>{{pos_p, pos_w, pos_h, pos_i}}.p, dir, rnd);
}

/// XD-RoPE queries and keys in one call, each out of place or in place, both validated before
/// either is written (as apply_qk_mrope).
template <class T, std::size_t Dim = dynamic, class TQOut, class TKOut, class Pos>
[[nodiscard]] status apply_qk_xdrope(const table<compute_type_t<T>>& tab,
                                     const xdrope_sections& sec, const heads_view<const T>& q_in,
                                     const heads_view<TQOut>& q_out,
                                     const heads_view<const T>& k_in,
                                     const heads_view<TKOut>& k_out, const Pos* pos_p,
                                     const Pos* pos_w, const Pos* pos_h, const Pos* pos_i,
                                     direction dir = direction::forward,
                                     rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_mrope_views<Dim>(
      tab, sec, q_in, q_out, k_in, k_out,
      detail::stream_ptrs<Pos>{{pos_p, pos_w, pos_h, pos_i}}.p, dir, rnd);
}

/// XD-RoPE queries and keys, the storage type deduced from input views of which one or both
/// are mutable (as apply_qk_mrope).
template <class QIn, class TQOut, class KIn, class TKOut, class Pos,
          class T = detail::deduced_input_t<QIn, KIn>>
[[nodiscard]] status apply_qk_xdrope(const table<compute_type_t<T>>& tab,
                                     const xdrope_sections& sec, const heads_view<QIn>& q_in,
                                     const heads_view<TQOut>& q_out, const heads_view<KIn>& k_in,
                                     const heads_view<TKOut>& k_out, const Pos* pos_p,
                                     const Pos* pos_w, const Pos* pos_h, const Pos* pos_i,
                                     direction dir = direction::forward,
                                     rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_mrope_views<dynamic>(
      tab, sec, heads_view<const T>(q_in), q_out, heads_view<const T>(k_in), k_out,
      detail::stream_ptrs<Pos>{{pos_p, pos_w, pos_h, pos_i}}.p, dir, rnd);
}

/// XD-RoPE queries and keys in one call, in place.
template <class T, std::size_t Dim = dynamic, class Pos>
[[nodiscard]] status apply_qk_xdrope(const table<compute_type_t<T>>& tab,
                                     const xdrope_sections& sec, const heads_view<T>& q,
                                     const heads_view<T>& k, const Pos* pos_p, const Pos* pos_w,
                                     const Pos* pos_h, const Pos* pos_i,
                                     direction dir = direction::forward,
                                     rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_mrope_views<Dim>(
      tab, sec, q, q, k, k, detail::stream_ptrs<Pos>{{pos_p, pos_w, pos_h, pos_i}}.p, dir, rnd);
}

ROPE_END_NAMESPACE  // rope
