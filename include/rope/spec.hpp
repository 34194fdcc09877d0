// rope/spec.hpp: what one model's rotation is (rope::spec), its inverse frequencies
// (rope::frequencies), and the status codes the hot path returns.
//
//   rope::spec s = rope::make_spec(/*head_dim=*/128, /*rotary_dim=*/128, /*base=*/1e4,
//                                  rope::layout::half_split);
//
// The rotation convention (RoFormer; HF transformers; shared/rope-formulas.md section 2):
// pair j of the first rotary_dim coordinates is turned by the angle phi = p * w_j with
// w_j = base^(-2j/rotary_dim):
//
//     (u, v) -> (u cos phi - v sin phi,  u sin phi + v cos phi)
//
// Which coordinates form pair j is the layout, and the user must name it: a wrong layout gives
// plausible but wrong numbers, so there is no default.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>

#include "rope/config.hpp"
#include "rope/fwd.hpp"

ROPE_BEGIN_NAMESPACE

/// Which two coordinates of the rotary block form pair j (j in [0, rotary_dim/2)).
enum class layout : unsigned char {
  /// pair j = (x[2j], x[2j+1]): RoFormer, GPT-J, Meta's original LLaMA checkpoints, ggml NORM.
  interleaved = 1,
  /// pair j = (x[j], x[j + rotary_dim/2]): GPT-NeoX, HF Llama/Mistral/Qwen `rotate_half`,
  /// ggml NEOX.
  half_split = 2,
};

/// Forward rotation by +phi, or the inverse (transpose) rotation by -phi. Any other value (an
/// integer cast to it) is refused with status::bad_option, nothing written. Both multiply by
/// the table's attention factor A (the entries are A cos, A sin), so inverse after forward
/// gives A^2 x on the rotated dims (rope-formulas 2.3); x itself only where A = 1.
enum class direction : unsigned char { forward = 0, inverse = 1 };

/// How a float result is stored into fp16 or bf16 (other outputs ignore it).
///  - accurate (default): with the table's low parts (rope/arch/scalar.hpp, "16-bit outputs"):
///    every output within 1 ulp of the exact result correctly rounded, and about 99.99% of
///    them correctly rounded, also where a pair cancels (|out| << its pair's norm r); the
///    limits: fp16 for pairs with A r < 2^19, bf16 above 2^-35 r (below it within 1 ulp +
///    6.4 * 2^-48 r).
///  - fast: the float result rounded once, to nearest even. 1.6-2.0x as fast in place, 1.0-2.1x
///    out of place from float (Zen 5; benchmarks/apply_bench, the README's run). Nearly as
///    accurate on uniform inputs (tests/storage_test.cpp: 99.98% of fp16 outputs correctly
///    rounded, at most 5 ulp off), but an output that cancels to 2^-k of its pair's norm is off
///    by up to ~2^(k-11) fp16 ulps (2^(k-14) bf16): hundreds of ulps where a pair nearly cancels.
/// Any other value (an integer cast to it) is refused with status::bad_option, nothing written.
enum class rounding : unsigned char { accurate = 0, fast = 1 };

/// Largest rotary dimension the library accepts. The hot path keeps one table row on the stack
/// for compact tables, so the bound is what makes that row's size known.
inline constexpr int max_rotary_dim = 1024;

/// M-RoPE (rope/mrope.hpp; Qwen2-VL, Qwen2.5-VL, Qwen3-VL, ERNIE-4.5-VL, Bailing, openPangu):
/// how many of the rotary_dim / 2 pairs take each of a token's three positions (Qwen's
/// mrope_section: temporal, height, width), in one of four orders:
///  - consecutive sections (Qwen2-VL, Qwen2.5-VL): temporal, then height, then width;
///  - interleaved (Qwen3-VL's mrope_interleaved): pair j % 3 == 1 height, == 2 width, below
///    3 * height and 3 * width, the others temporal;
///  - hw_alternating (ERNIE-4.5-VL, whose mrope_section lists height, width, temporal; Bailing
///    and Ling's VL models, whose list is temporal, height, width): pair j < height + width
///    takes height for even j and width for odd j, the rest the temporal position;
///    height == width;
///  - balanced (openPangu's mrope_interleaved, vLLM's MRotaryEmbeddingInterleaved): the last
///    pair temporal; before it, pair by pair, the stream with pairs left, other than the
///    previous pair's where another has some, whose share placed / count is smallest (the
///    lower stream on ties), over counts (temporal - 1, height, width); temporal >= 1.
/// At most one of the three flags. All zero: not an M-RoPE model.
struct mrope_sections {
  int temporal = 0;             ///< pairs that take the temporal position (mrope_section[0])
  int height = 0;               ///< pairs that take the height position (mrope_section[1])
  int width = 0;                ///< pairs that take the width position (mrope_section[2])
  bool interleaved = false;     ///< Qwen3-VL's mrope_interleaved
  bool hw_alternating = false;  ///< ERNIE-4.5-VL's and Bailing's order
  bool balanced = false;        ///< openPangu's order
};

/// XD-RoPE (rope/mrope.hpp; Tencent's HunyuanOCR and Hunyuan-VL, config type "xdrope" with
/// xdrope_section): four positions per token, each taking a consecutive section of the
/// rotary_dim / 2 pairs in this order: the sequence position, the column (width), the row
/// (height) and the image's index (Tencent's `xdrope_section * 2` split, chunk i taking stream
/// i % 4, as vLLM's XDRotaryEmbedding). All zero: not an XD-RoPE model.
struct xdrope_sections {
  int position = 0;  ///< pairs that take the sequence position (xdrope_section[0])
  int width = 0;     ///< pairs that take the column (xdrope_section[1])
  int height = 0;    ///< pairs that take the row (xdrope_section[2])
  int image = 0;     ///< pairs that take the image's index (xdrope_section[3])
};

/// "interleaved", "half_split", or "unset" for a value that is neither.
inline const char* to_string(layout l) noexcept {
  switch (l) {
    case layout::interleaved: return "interleaved";
    case layout::half_split: return "half_split";
  }
  return "unset";
}

/// One model's rotation. The fields are public for aggregate initialisation; every consumer
/// (make_spec, table builders, the cache) validates them and throws std::invalid_argument
/// naming the bad field.
struct spec {
  int head_dim = 0;       ///< D: length of one head vector.
  int rotary_dim = 0;     ///< d: the rotated leading block, even, 2 <= d <= D.
  double base = 10000.0;  ///< rope_theta, finite and > 1.
  rope::layout layout{};  ///< no default: the zero value is rejected.
};

namespace detail {

inline std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

inline void check_rotary_dim(int rotary_dim, int head_dim) {
  if (rotary_dim <= 0 || rotary_dim % 2 != 0 || rotary_dim > head_dim || rotary_dim > max_rotary_dim)
    raise(error_kind::invalid_argument,
          "rotary_dim=" + std::to_string(rotary_dim) + " must be even, >= 2, <= head_dim (" +
              std::to_string(head_dim) + ") and <= " + std::to_string(max_rotary_dim));
}

/// The stream (0 temporal, 1 height, 2 width) of pair j; not for balanced sections (their
/// streams come as a whole: mrope_streams).
inline int mrope_stream(const mrope_sections& s, std::size_t j) noexcept {
  if (s.hw_alternating) {
    if (j < static_cast<std::size_t>(s.height) + static_cast<std::size_t>(s.width))
      return j % 2 == 0 ? 1 : 2;
    return 0;
  }
  if (s.interleaved) {
    const std::size_t k = j % 3;
    if (k == 1 && j < 3 * static_cast<std::size_t>(s.height)) return 1;
    if (k == 2 && j < 3 * static_cast<std::size_t>(s.width)) return 2;
    return 0;
  }
  if (j < static_cast<std::size_t>(s.temporal)) return 0;
  if (j < static_cast<std::size_t>(s.temporal) + static_cast<std::size_t>(s.height)) return 1;
  return 2;
}

/// The streams of the first `pairs` pairs (pairs: the sections' sum) into out[0, pairs).
inline void mrope_streams(const mrope_sections& s, std::size_t pairs, unsigned char* out) noexcept {
  if (!s.balanced) {
    for (std::size_t j = 0; j < pairs; ++j) out[j] = static_cast<unsigned char>(mrope_stream(s, j));
    return;
  }
  if (pairs == 0 || s.temporal < 1) return;  // not balanced sections (mrope_sections_match)
  // openPangu's greedy order (get_mrope_interleaved_id_list with force_last): shares compared
  // exactly, placed[a] / count[a] < placed[b] / count[b] as placed[a] * count[b] < ...
  const std::size_t count[3] = {static_cast<std::size_t>(s.temporal) - 1,
                                static_cast<std::size_t>(s.height),
                                static_cast<std::size_t>(s.width)};
  std::size_t placed[3] = {0, 0, 0};
  int last = -1;
  for (std::size_t j = 0; j + 1 < pairs; ++j) {
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; ++pass)  // the previous pair's stream last
      for (int k = 0; k < 3; ++k)
        if (placed[k] < count[k] && (pass == 1 || k != last) &&
            (best < 0 || placed[k] * count[best] < placed[best] * count[k]))
          best = k;
    if (best < 0) break;  // pairs past the sections' sum (not matched sections)
    out[j] = static_cast<unsigned char>(best);
    ++placed[best];
    last = best;
  }
  out[pairs - 1] = 0;
}

/// Sections that assign exactly (temporal, height, width) of the rotary_dim / 2 pairs: their
/// sum, and at most one order flag; interleaved, also height and width within the pairs
/// j % 3 == 1 and j % 3 == 2 there are ((pairs + 1) / 3 and pairs / 3), so that mrope_stream
/// gives each stream its count; hw_alternating, height == width (HF stacks the two halves,
/// vLLM asserts it); balanced, temporal >= 1 (its last pair). O(1): it runs on every
/// apply_mrope call (a loop over the pairs cost a decode call 60%).
inline bool mrope_sections_match(const mrope_sections& s, std::ptrdiff_t rotary_dim) noexcept {
  if (s.temporal < 0 || s.height < 0 || s.width < 0) return false;
  const std::ptrdiff_t pairs = rotary_dim / 2;
  if (static_cast<std::ptrdiff_t>(s.temporal) + s.height + s.width != pairs) return false;
  if (int{s.interleaved} + int{s.hw_alternating} + int{s.balanced} > 1) return false;
  if (s.hw_alternating) return s.height == s.width;
  if (s.balanced) return s.temporal >= 1;
  return !s.interleaved || (s.height <= (pairs + 1) / 3 && s.width <= pairs / 3);
}

/// XD-RoPE sections that assign exactly the rotary_dim / 2 pairs, none negative.
inline bool xdrope_sections_match(const xdrope_sections& s, std::ptrdiff_t rotary_dim) noexcept {
  if (s.position < 0 || s.width < 0 || s.height < 0 || s.image < 0) return false;
  return static_cast<std::ptrdiff_t>(s.position) + s.width + s.height + s.image == rotary_dim / 2;
}

inline void check_base(double base) {
  if (!(base > 1.0) || !detail::finite(base))
    raise(error_kind::invalid_argument,
          "base=" + format_double(base) + " must be finite and greater than 1");
}

}  // namespace detail

/// Throws std::invalid_argument naming the first bad field of s.
inline void validate(const spec& s) {
  if (s.head_dim <= 0)
    detail::raise(error_kind::invalid_argument,
                  "head_dim=" + std::to_string(s.head_dim) + " must be positive");
  detail::check_rotary_dim(s.rotary_dim, s.head_dim);
  detail::check_base(s.base);
  if (s.layout != layout::interleaved && s.layout != layout::half_split)
    detail::raise(error_kind::invalid_argument,
                  "layout=" + std::to_string(static_cast<int>(s.layout)) +
                      " must be layout::interleaved or layout::half_split (there is no default)");
}

/// A validated spec.
inline spec make_spec(int head_dim, int rotary_dim, double base, rope::layout l) {
  spec s{head_dim, rotary_dim, base, l};
  validate(s);
  return s;
}

/// The numbers a table is built from: scaled inverse frequencies w_j (j < rotary_dim/2) and the
/// attention factor A that multiplies cos and sin (HF convention: the rotated block of q and of
/// k is each scaled by A, the pass-through block is not). `identity` encodes every parameter
/// that produced them (method and all its settings); the table cache keys on it together with
/// the numbers, so two configurations never share a table by accident.
struct frequencies {
  int rotary_dim = 0;                 ///< d: the rotated leading block, even.
  std::vector<double> inv_freq;       ///< w_j for j < d/2, radians per position.
  double attention_factor = 1.0;      ///< A, multiplies cos and sin (1 for the default method).
  std::vector<double> identity;       ///< the method and every parameter: the cache key's tail.
  std::string description = "default";  ///< human-readable method and parameters.
};

namespace detail {

/// base^(-2j/d) rounded once to double. The exponent 2j/d is not exact in double (d = 6, 80,
/// 96, ...), and its rounding error is multiplied by ln(base) in the result: evaluating in
/// long double (where available) keeps w_j within about half an ulp, so the angle p*w_j is off
/// by no more than |p*w_j| * 2^-53.
inline long double default_inv_freq_ld(long double base, std::size_t j, int rotary_dim) {
  using ld = long double;
  return std::pow(base, -static_cast<ld>(2 * j) / static_cast<ld>(rotary_dim));
}

inline double default_inv_freq(double base, std::size_t j, int rotary_dim) {
  return static_cast<double>(default_inv_freq_ld(base, j, rotary_dim));
}

}  // namespace detail

/// w_j = base^(-2j/d), j < d/2. Validates s.
inline frequencies default_frequencies(const spec& s) {
  validate(s);
  frequencies f;
  f.rotary_dim = s.rotary_dim;
  const std::size_t pairs = static_cast<std::size_t>(s.rotary_dim / 2);
  f.inv_freq.resize(pairs);
  for (std::size_t j = 0; j < pairs; ++j) f.inv_freq[j] = detail::default_inv_freq(s.base, j, s.rotary_dim);
  f.identity = {0.0 /* method: default */, s.base};
  return f;
}

/// Result of a hot-path call. Every error is detected before the first write: on an error
/// nothing in any output buffer has changed.
enum class status : unsigned char {
  ok = 0,
  null_pointer,           ///< a data or positions pointer is null while there is work to do
  bad_dimension,          ///< head_dim < rotary_dim, negative count, Dim != table's rotary_dim,
                          ///< (rerotate, shift_positions) invalid frequencies, or (apply_mrope)
                          ///< sections that do not assign the rotary_dim / 2 pairs
  bad_stride,             ///< head stride < head_dim, or strides neither token-major nor
                          ///< head-major (rows may overlap; refused even where they do not)
  overlapping_buffers,    ///< in and out (or q and k) partially overlap, or positions in an output
  position_out_of_range,  ///< a position < 0 or >= the table's length; (apply_to_slots) a slot
                          ///< < -1 or >= the cache's token count
  bad_option,             ///< a direction, rounding or layout value outside its enumeration
};

/// The standard error category of a status: invalid argument or out of range.
constexpr error_kind kind(status st) noexcept {
  return st == status::ok                      ? error_kind::none
         : st == status::position_out_of_range ? error_kind::out_of_range
                                               : error_kind::invalid_argument;
}

/// A sentence describing st, for logs and error messages (static storage, never null).
inline const char* message(status st) noexcept {
  switch (st) {
    case status::ok: return "ok";
    case status::null_pointer: return "invalid argument: null pointer with a nonzero count";
    case status::bad_dimension:
      return "invalid argument: head_dim < rotary_dim, a negative count, Dim differs from the "
             "table's rotary_dim, (rerotate, shift_positions) invalid frequencies, or "
             "(apply_mrope) sections that do not assign the rotary_dim / 2 pairs";
    case status::bad_stride:
      return "invalid argument: head stride < head_dim, or token/head strides that are neither "
             "token-major nor head-major (rows that may overlap)";
    case status::overlapping_buffers:
      return "invalid argument: two views share elements without being the same rows (in and out, "
             "or q and k), or the positions lie inside an output";
    case status::position_out_of_range:
      return "out of range: a position is negative or not below the table's length "
             "(rerotate, shift_positions: not below 2^32), or (apply_to_slots) a slot below -1 "
             "or not below the cache's token count";
    case status::bad_option:
      return "invalid argument: a rope::direction, rope::rounding or rope::layout value "
             "outside its enumeration";
  }
  return "unknown status";
}

ROPE_END_NAMESPACE  // rope
