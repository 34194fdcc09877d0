// rope/scaling.hpp: context extension ("RoPE scaling"): linear position interpolation, static
// and dynamic NTK, YaRN, Llama 3.1 and LongRoPE, and Gemma 4's proportional RoPE, from a
// model's HF config; cached tables per complete set of parameters; re-rotation of cached keys.
//
//   rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);     // cold path
//   auto tab = rope::get_table<float>(m.spec, m.scaling, seq_len, positions);  // cached
//   rope::status st = rope::apply<float, 128>(*tab, q_rows, positions_ptr);    // hot path
//
// The formulas are those of shared/rope-formulas.md (HF transformers' current semantics,
// including its quirks), evaluated in double, with the angle p * w_j then formed exactly by the
// table (rope/table.hpp). One departure: shared/rope-formulas.md (section 10) lists HF's
// `proportional` type as out of scope; it is here because Gemma 4's global-attention layers
// use it, and an engine running Gemma 4 would otherwise have no way to express it (its pairs
// span the whole head, which no rotary_dim < head_dim gives; see scaling_type::proportional).
// Every method yields inverse frequencies w_j and an attention factor A. A multiplies cos and
// sin of the rotated dims only (HF convention): the rotated block of q and of k is each scaled
// by A, so attention logits from it are scaled by A^2; pass-through dims [rotary_dim, head_dim)
// are not scaled.
//
// Sequence-length dependence is explicit. `dynamic` and `longrope` frequencies depend on the
// current sequence length L (HF: max(position_ids) + 1); the caller passes it, and the returned
// scaling_choice says what was chosen (the effective base, the LongRoPE list) so an engine can
// store it with its KV cache and re-rotate the cached keys (rope::rerotate) when it changes.
// HF keeps hidden state for these (a dynamic base that only grows, a cached long list); rope
// computes from L alone, which equals HF's result when all positions go through one call.
//
// Thread safety: everything here is a pure function of its arguments, except get_table, which
// goes through the thread-safe rope::table_cache.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rope/apply.hpp"
#include "rope/arch/scalar.hpp"
#include "rope/config.hpp"
#include "rope/fwd.hpp"
#include "rope/spec.hpp"
#include "rope/storage.hpp"
#include "rope/table.hpp"

ROPE_BEGIN_NAMESPACE

/// The scaling methods, named by HF's `rope_type` (`ntk` is not an HF type: the static
/// NTK-aware base change, shared/rope-formulas.md section 5).
enum class scaling_type : unsigned char {
  none = 0,         ///< HF "default": w_j = base^(-2j/d), A = 1
  linear = 1,       ///< position interpolation: w_j / factor
  ntk = 2,          ///< static NTK-aware: base * factor^(d/(d-2))
  dynamic_ntk = 3,  ///< HF "dynamic": dynamic NTK: the base grows with the sequence length beyond M
  yarn = 4,         ///< YaRN: NTK-by-parts ramp + attention temperature
  llama3 = 5,       ///< Llama 3.1 wavelength bands
  longrope = 6,     ///< LongRoPE / Phi-3: per-pair short or long factor lists
  /// HF "proportional" (Gemma 4's global layers): w_j = base^(-2j/d) / factor for the first
  /// rotated_pairs pairs, 0 for the rest (those pass through unchanged), A = 1.
  proportional = 7,
};

inline const char* to_string(scaling_type t) noexcept {
  switch (t) {
    case scaling_type::none:
      return "default";
    case scaling_type::linear:
      return "linear";
    case scaling_type::ntk:
      return "ntk";
    case scaling_type::dynamic_ntk:
      return "dynamic";
    case scaling_type::yarn:
      return "yarn";
    case scaling_type::llama3:
      return "llama3";
    case scaling_type::longrope:
      return "longrope";
    case scaling_type::proportional:
      return "proportional";
  }
  return "unknown";
}

/// All parameters of one scaling method, fully resolved (no HF defaults applied here: see
/// from_config for those). Only the fields of `type` are read. Field names are HF's keys.
/// validate(spec, scaling) throws std::invalid_argument naming the first bad key.
struct scaling {
  scaling_type type = scaling_type::none;
  /// s: linear, ntk, dynamic, yarn, llama3, longrope. Finite and > 0.
  double factor = 1.0;
  /// M of dynamic NTK (the top-level config value). Positive.
  std::int64_t max_position_embeddings = 0;
  /// M0, the pre-training length: yarn, llama3, longrope. Positive.
  std::int64_t original_max_position_embeddings = 0;
  /// yarn: rotation counts that end extrapolation / start interpolation; beta_fast >= beta_slow
  /// > 0. Equal counts (Kimi K2's configs: 1 and 1) make the ramp a step, from floor(c(1)) to
  /// ceil(c(1)) (0.001 wide without truncate), as in HF; beta_fast < beta_slow, which HF only
  /// warns about, is refused (the ramp would run backwards: high frequencies interpolated, low
  /// ones kept). testing.md's bad-input table refuses equal counts too; they are accepted here
  /// because real checkpoints carry them and HF runs them.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  /// yarn: floor/ceil the correction range (HF default true; gpt-oss uses false).
  bool truncate = true;
  /// yarn: DeepSeek-style temperature; 0 means "not set" (HF's falsy test). Used only when
  /// both are set.
  double mscale = 0.0;
  double mscale_all_dim = 0.0;
  /// yarn, longrope: explicit attention factor A, overriding the computed one.
  std::optional<double> attention_factor;
  /// llama3: alpha <= beta of the wavelength bands, both > 0. Equal factors (Llama 4's
  /// configs: 1 and 1) leave no blend band: theta_j / factor where the wavelength 2 pi /
  /// theta_j is at least M0 / alpha, else theta_j (at exactly M0 / alpha HF's blend divides 0
  /// by 0; vLLM takes the blend's weight as 0 there, theta_j / factor, as here). beta < alpha,
  /// which HF only warns about, is an error: the band tests then overlap, and HF's order (low
  /// band first) and llama.cpp's converter (high band first) give different frequencies.
  /// testing.md's bad-input table refuses equal factors too; accepted here for Llama 4.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  /// longrope: rotary_dim/2 positive entries each; short for L <= M0, long for L > M0.
  std::vector<double> short_factor;
  std::vector<double> long_factor;
  /// longrope: the attention factor A with the short / the long list, overriding
  /// attention_factor and the computed A for that list; unset, that list takes those. Finite
  /// and > 0. Phi-3.5-MoE's configs carry them (short_mscale = long_mscale = 1.243163121016122,
  /// where the computed A is sqrt(1 + ln 32 / ln 4096) = 1.1902...), and HF's
  /// PhimoeRotaryEmbedding and vLLM's Phi-3 LongRoPE embedding multiply cos and sin by them.
  /// shared/rope-formulas.md (section 9) has no such keys and one A for both lists; with them
  /// the two lists may differ in A, which rope::rerotate carries (it scales by to.A / from.A).
  std::optional<double> short_mscale;
  std::optional<double> long_mscale;
  /// proportional: how many pairs rotate, the first ones, 1 <= rotated_pairs <= rotary_dim/2;
  /// pairs j >= rotated_pairs get w_j = 0 and pass through. HF derives it from the entry's
  /// partial_rotary_factor rho as int(rho * head_dim // 2), and rotates pairs across the whole
  /// head: rotary_dim = head_dim (Gemma 4: global_head_dim 512, rho 0.25, so 64 of the 256
  /// half-split pairs (j, j + 256) rotate, with w_j = 1e6^(-2j/512)). Where partial RoPE
  /// (rotary_dim < head_dim) pairs j with j + rotary_dim/2 and takes the exponent over
  /// rotary_dim, proportional keeps both over the head; from_config sets both.
  int rotated_pairs = 0;

  static scaling linear_interpolation(double factor) {
    scaling s;
    s.type = scaling_type::linear;
    s.factor = factor;
    return s;
  }
  static scaling ntk_static(double factor) {
    scaling s;
    s.type = scaling_type::ntk;
    s.factor = factor;
    return s;
  }
  static scaling dynamic_ntk(double factor, std::int64_t max_position_embeddings) {
    scaling s;
    s.type = scaling_type::dynamic_ntk;
    s.factor = factor;
    s.max_position_embeddings = max_position_embeddings;
    return s;
  }
  static scaling yarn_scaling(double factor, std::int64_t original_max_position_embeddings) {
    scaling s;
    s.type = scaling_type::yarn;
    s.factor = factor;
    s.original_max_position_embeddings = original_max_position_embeddings;
    return s;
  }
  static scaling llama3_scaling(double factor, double low_freq_factor, double high_freq_factor,
                                std::int64_t original_max_position_embeddings) {
    scaling s;
    s.type = scaling_type::llama3;
    s.factor = factor;
    s.low_freq_factor = low_freq_factor;
    s.high_freq_factor = high_freq_factor;
    s.original_max_position_embeddings = original_max_position_embeddings;
    return s;
  }
  static scaling longrope_scaling(std::vector<double> short_factor, std::vector<double> long_factor,
                                  double factor, std::int64_t original_max_position_embeddings) {
    scaling s;
    s.type = scaling_type::longrope;
    s.short_factor = std::move(short_factor);
    s.long_factor = std::move(long_factor);
    s.factor = factor;
    s.original_max_position_embeddings = original_max_position_embeddings;
    return s;
  }
  static scaling proportional_rotation(int rotated_pairs, double factor = 1.0) {
    scaling s;
    s.type = scaling_type::proportional;
    s.rotated_pairs = rotated_pairs;
    s.factor = factor;
    return s;
  }
};

/// True for the methods whose frequencies depend on the sequence length (dynamic, longrope).
constexpr bool depends_on_seq_len(scaling_type t) noexcept {
  return t == scaling_type::dynamic_ntk || t == scaling_type::longrope;
}

/// Which LongRoPE factor list was used.
enum class factor_list : unsigned char { none = 0, short_factors = 1, long_factors = 2 };

/// What a sequence-length-dependent method chose: store it with the KV cache; keys rotated
/// under a different choice need rope::rerotate before they are used with the new one.
struct scaling_choice {
  scaling_type type = scaling_type::none;
  /// The base the frequencies were formed with: spec.base, or b' for ntk and dynamic.
  double effective_base = 0.0;
  /// dynamic: max(seq_len, M) (the L' of the formula); longrope: seq_len; otherwise 0.
  std::int64_t effective_seq_len = 0;
  /// longrope: the list used; otherwise none.
  factor_list list = factor_list::none;

  friend bool operator==(const scaling_choice& a, const scaling_choice& b) noexcept {
    return a.type == b.type && a.effective_base == b.effective_base && a.list == b.list &&
           (a.type != scaling_type::dynamic_ntk || a.effective_seq_len == b.effective_seq_len);
  }
  friend bool operator!=(const scaling_choice& a, const scaling_choice& b) noexcept {
    return !(a == b);
  }
};

/// Frequencies for one (spec, scaling, seq_len) and what was chosen.
struct scaled_frequencies {
  rope::frequencies frequencies;
  scaling_choice choice;
};

namespace detail {

[[noreturn]] inline void scaling_error(const std::string& key, const std::string& value,
                                       const std::string& why) {
  raise(error_kind::invalid_argument, key + "=" + value + " " + why);
}

inline void check_positive(const char* key, double v, const char* type) {
  if (!(v > 0.0) || !detail::finite(v))
    scaling_error(key, format_double(v), std::string("must be finite and > 0 (") + type + ")");
}

inline void check_positive_int(const char* key, std::int64_t v, const char* type) {
  if (v <= 0)
    scaling_error(key, std::to_string(v), std::string("must be a positive integer (") + type + ")");
}

/// A list of one positive factor per pair (pairs = `dims`/2; type: the method, for the message).
inline void check_factor_list(const char* key, const std::vector<double>& list, std::size_t pairs,
                              const char* dims = "rotary_dim", const char* type = "longrope") {
  if (list.size() != pairs)
    scaling_error(key, "<list of " + std::to_string(list.size()) + ">",
                  "must have " + std::string(dims) + "/2 = " + std::to_string(pairs) +
                      " entries (" + type + ")");
  for (std::size_t j = 0; j < list.size(); ++j)
    if (!(list[j] > 0.0) || !detail::finite(list[j]))
      scaling_error(std::string(key) + "[" + std::to_string(j) + "]", format_double(list[j]),
                    std::string("must be finite and > 0 (") + type + ")");
}

/// HF's yarn get_mscale: 1 for s <= 1, else 0.1 * mscale * ln(s) + 1 (same operation order).
inline double yarn_mscale(double s, double mscale) {
  if (s <= 1.0) return 1.0;
  return 0.1 * mscale * std::log(s) + 1.0;
}

inline double yarn_attention_factor(const scaling& sc) {
  if (sc.attention_factor) return *sc.attention_factor;
  if (sc.mscale != 0.0 && sc.mscale_all_dim != 0.0)
    return yarn_mscale(sc.factor, sc.mscale) / yarn_mscale(sc.factor, sc.mscale_all_dim);
  return yarn_mscale(sc.factor, 1.0);
}

inline double longrope_attention_factor(const scaling& sc) {
  if (sc.attention_factor) return *sc.attention_factor;
  if (sc.factor <= 1.0) return 1.0;
  return std::sqrt(1.0 + std::log(sc.factor) /
                             std::log(static_cast<double>(sc.original_max_position_embeddings)));
}

/// pi in long double (yarn's correction range and llama3's blend, compute_frequencies).
constexpr long double pi_ld = 3.141592653589793238462643383279502884L;

/// b * g^(d/(d-2)) in long double (the frequencies are formed from it before its rounding).
inline long double ntk_base_ld(double base, long double g, int rotary_dim) {
  using ld = long double;
  const ld d = static_cast<ld>(rotary_dim);
  return static_cast<ld>(base) * std::pow(g, d / (d - 2));
}

}  // namespace detail

/// Throws std::invalid_argument naming the first bad key of sc (or spec field). Checks:
/// factor finite and > 0; the lengths each method reads positive; yarn beta_fast >= beta_slow
/// > 0, mscale/mscale_all_dim/attention_factor finite (a resulting attention factor must be
/// finite and > 0); llama3 low_freq_factor <= high_freq_factor, both finite and > 0; longrope
/// lists of rotary_dim/2 finite entries > 0, attention_factor, short_mscale and long_mscale
/// finite and > 0 where set, and M0 > 1 where the attention factor divides by ln M0 (factor >
/// 1, no attention_factor, and a list without its mscale); ntk and dynamic need rotary_dim >= 4;
/// proportional rotated_pairs in [1, rotary_dim/2].
inline void validate(const spec& s, const scaling& sc) {
  validate(s);
  const char* name = to_string(sc.type);
  const std::size_t pairs = static_cast<std::size_t>(s.rotary_dim / 2);
  switch (sc.type) {
    case scaling_type::none:
      return;
    case scaling_type::linear:
      detail::check_positive("factor", sc.factor, name);
      return;
    case scaling_type::ntk:
    case scaling_type::dynamic_ntk:
      detail::check_positive("factor", sc.factor, name);
      if (s.rotary_dim < 4)
        detail::scaling_error(
            "rotary_dim", std::to_string(s.rotary_dim),
            std::string("must be >= 4 for ") + name + " (the exponent d/(d-2) of the base change)");
      if (sc.type == scaling_type::dynamic_ntk)
        detail::check_positive_int("max_position_embeddings", sc.max_position_embeddings, name);
      return;
    case scaling_type::yarn: {
      detail::check_positive("factor", sc.factor, name);
      detail::check_positive_int("original_max_position_embeddings",
                                 sc.original_max_position_embeddings, name);
      detail::check_positive("beta_fast", sc.beta_fast, name);
      detail::check_positive("beta_slow", sc.beta_slow, name);
      if (!(sc.beta_fast >= sc.beta_slow))
        detail::scaling_error("beta_fast", detail::format_double(sc.beta_fast),
                              "must be at least beta_slow=" + detail::format_double(sc.beta_slow) +
                                  " (yarn)");
      if (!detail::finite(sc.mscale))
        detail::scaling_error("mscale", detail::format_double(sc.mscale), "must be finite (yarn)");
      if (!detail::finite(sc.mscale_all_dim))
        detail::scaling_error("mscale_all_dim", detail::format_double(sc.mscale_all_dim),
                              "must be finite (yarn)");
      if (sc.attention_factor)
        detail::check_positive("attention_factor", *sc.attention_factor, name);
      const double a = detail::yarn_attention_factor(sc);
      if (!(a > 0.0) || !detail::finite(a))
        detail::scaling_error("mscale", detail::format_double(sc.mscale),
                              "with mscale_all_dim=" + detail::format_double(sc.mscale_all_dim) +
                                  " gives attention factor " + detail::format_double(a) +
                                  ", which must be finite and > 0 (yarn)");
      return;
    }
    case scaling_type::llama3:
      detail::check_positive("factor", sc.factor, name);
      detail::check_positive("low_freq_factor", sc.low_freq_factor, name);
      detail::check_positive("high_freq_factor", sc.high_freq_factor, name);
      if (!(sc.low_freq_factor <= sc.high_freq_factor))
        detail::scaling_error("low_freq_factor", detail::format_double(sc.low_freq_factor),
                              "must not exceed high_freq_factor=" +
                                  detail::format_double(sc.high_freq_factor) +
                                  " (llama3: reversed bands overlap)");
      detail::check_positive_int("original_max_position_embeddings",
                                 sc.original_max_position_embeddings, name);
      return;
    case scaling_type::longrope:
      detail::check_factor_list("short_factor", sc.short_factor, pairs);
      detail::check_factor_list("long_factor", sc.long_factor, pairs);
      detail::check_positive("factor", sc.factor, name);
      detail::check_positive_int("original_max_position_embeddings",
                                 sc.original_max_position_embeddings, name);
      if (sc.short_mscale) detail::check_positive("short_mscale", *sc.short_mscale, name);
      if (sc.long_mscale) detail::check_positive("long_mscale", *sc.long_mscale, name);
      if (sc.attention_factor)
        detail::check_positive("attention_factor", *sc.attention_factor, name);
      else if (sc.factor > 1.0 && sc.original_max_position_embeddings == 1 &&
               !(sc.short_mscale && sc.long_mscale))
        detail::scaling_error("original_max_position_embeddings", "1",
                              "makes ln M0 = 0 in the attention factor sqrt(1 + ln factor / ln "
                              "M0) (longrope, factor > 1 and no attention_factor)");
      return;
    case scaling_type::proportional:
      detail::check_positive("factor", sc.factor, name);
      if (sc.rotated_pairs < 1 || static_cast<std::size_t>(sc.rotated_pairs) > pairs)
        detail::scaling_error(
            "rotated_pairs", std::to_string(sc.rotated_pairs),
            "must be in [1, rotary_dim/2 = " + std::to_string(pairs) + "] (proportional)");
      return;
  }
  detail::scaling_error("rope_type", std::to_string(static_cast<int>(sc.type)),
                        "is not a rope::scaling_type");
}

/// The frequencies and attention factor of spec s under scaling sc for sequence length
/// seq_len (HF: max(position_ids) + 1; read only by dynamic and longrope, which require
/// seq_len >= 1). Validates (std::invalid_argument naming the key).
///
/// `frequencies.identity` encodes the method and every parameter (list entries included) and
/// the sequence-length choice, so the table cache never shares a table between two
/// configurations that differ in any parameter; `frequencies.description` names the choice,
/// e.g. "longrope:long", "dynamic:base=...". scaling_type::none gives exactly
/// default_frequencies(s) (and shares its tables).
inline scaled_frequencies compute_frequencies(const spec& s, const scaling& sc,
                                              std::int64_t seq_len = 0) {
  validate(s, sc);
  if (depends_on_seq_len(sc.type) && seq_len < 1)
    detail::scaling_error("seq_len", std::to_string(seq_len),
                          std::string("must be >= 1: ") + to_string(sc.type) +
                              " frequencies depend on the sequence length");
  scaled_frequencies out;
  out.frequencies = default_frequencies(s);
  out.choice.type = sc.type;
  out.choice.effective_base = s.base;
  if (sc.type == scaling_type::none) return out;

  frequencies& f = out.frequencies;
  std::vector<double>& w = f.inv_freq;
  const std::size_t pairs = w.size();
  const int d = s.rotary_dim;
  const double id = static_cast<double>(static_cast<int>(sc.type));
  switch (sc.type) {
    case scaling_type::none:
      break;
    case scaling_type::linear:
      // Every method divides or recomputes theta_j in long double before its rounding, and
      // rounds w_j once: within half an ulp of its formula (in double, theta_j's rounding and
      // the division's made about 1 ulp, and double outputs at large angles can then pass
      // their bound against the formula; yarn's ramp, below, showed it up to 17.5 ulps).
      for (std::size_t j = 0; j < pairs; ++j)
        w[j] = static_cast<double>(detail::default_inv_freq_ld(s.base, j, d) /
                                   static_cast<long double>(sc.factor));
      f.identity = {id, s.base, sc.factor};
      f.description = "linear:factor=" + detail::format_double(sc.factor);
      break;
    case scaling_type::ntk:
    case scaling_type::dynamic_ntk: {
      long double g = static_cast<long double>(sc.factor);
      if (sc.type == scaling_type::dynamic_ntk) {
        const std::int64_t m = sc.max_position_embeddings;
        const std::int64_t lp = std::max(seq_len, m);
        out.choice.effective_seq_len = lp;
        g = static_cast<long double>(sc.factor) * static_cast<long double>(lp) /
                static_cast<long double>(m) -
            (static_cast<long double>(sc.factor) - 1.0L);
      }
      const long double b_ld = detail::ntk_base_ld(s.base, g, d);
      const double b = static_cast<double>(b_ld);
      if (!(b > 1.0) || !detail::finite(b))
        detail::scaling_error("factor", detail::format_double(sc.factor),
                              std::string("gives the base ") + detail::format_double(b) +
                                  ", which must be finite and > 1 (" + to_string(sc.type) + ")");
      out.choice.effective_base = b;
      for (std::size_t j = 0; j < pairs; ++j)
        w[j] = static_cast<double>(detail::default_inv_freq_ld(b_ld, j, d));
      if (sc.type == scaling_type::ntk) {
        f.identity = {id, s.base, sc.factor};
        f.description = "ntk:base=" + detail::format_double(b);
      } else {
        f.identity = {id, s.base, sc.factor, static_cast<double>(sc.max_position_embeddings),
                      static_cast<double>(out.choice.effective_seq_len)};
        f.description = "dynamic:base=" + detail::format_double(b);
      }
      break;
    }
    case scaling_type::yarn: {
      // Correction range c(n) = d ln(M0 / (2 pi n)) / (2 ln b), in HF's operation order so
      // that floor/ceil land where HF's do.
      const double pi = 3.141592653589793;
      const double dd = static_cast<double>(d);
      const double m0 = static_cast<double>(sc.original_max_position_embeddings);
      // With truncate (the default) the ends are floor/ceil of c in double, as HF's, so they
      // are the same integers. Without it (gpt-oss) they stay fractional and a rounding of c
      // is amplified in w_j by 1 / (1 - r_j + r_j / s), about 20x at D = 64, s = 32 (an audit:
      // w_17 17.5 ulps off the formula in double, double outputs 28-32x past their bound at
      // p = 2^17..2^20), so c, the ramp and the blend are evaluated in long double, from
      // theta_j before its rounding, and w_j rounded once (a long double as wide as double, as
      // MSVC's, gives the double result). Pairs at r_j = 0 keep theta_j's bits.
      using ld = long double;
      auto correction = [&](double n) {
        return dd * std::log(m0 / (n * 2 * pi)) / (2 * std::log(s.base));
      };
      auto correction_ld = [&](double n) {
        return static_cast<ld>(dd) *
               std::log(static_cast<ld>(m0) / (static_cast<ld>(n) * 2 * detail::pi_ld)) /
               (2 * std::log(static_cast<ld>(s.base)));
      };
      ld lo = sc.truncate ? static_cast<ld>(std::floor(correction(sc.beta_fast)))
                          : correction_ld(sc.beta_fast);
      ld hi = sc.truncate ? static_cast<ld>(std::ceil(correction(sc.beta_slow)))
                          : correction_ld(sc.beta_slow);
      lo = std::max(lo, static_cast<ld>(0));
      hi = std::min(hi, static_cast<ld>(dd - 1));  // d - 1, not d/2 - 1: HF's (and ggml's) quirk
      if (hi == lo) hi = static_cast<ld>(static_cast<double>(hi) + 0.001);
      for (std::size_t j = 0; j < pairs; ++j) {
        const ld ramp =
            std::min(std::max((static_cast<ld>(j) - lo) / (hi - lo), static_cast<ld>(0)),
                     static_cast<ld>(1));
        // HF: interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor,
        // with extrapolation_factor = 1 - ramp.
        // A factor that puts w_j / s past double's range is refused below, as in double.
        const double interpolated = w[j] / sc.factor;
        const ld wj = detail::default_inv_freq_ld(s.base, j, d);  // theta_j, not yet rounded
        w[j] = !detail::finite(interpolated)
                   ? interpolated
                   : static_cast<double>(wj / static_cast<ld>(sc.factor) * ramp + wj * (1 - ramp));
      }
      f.attention_factor = detail::yarn_attention_factor(sc);
      f.identity = {id,
                    s.base,
                    sc.factor,
                    static_cast<double>(sc.original_max_position_embeddings),
                    sc.beta_fast,
                    sc.beta_slow,
                    sc.truncate ? 1.0 : 0.0,
                    sc.mscale,
                    sc.mscale_all_dim,
                    sc.attention_factor ? 1.0 : 0.0,
                    sc.attention_factor.value_or(0.0)};
      f.description = "yarn:factor=" + detail::format_double(sc.factor) + ",ramp=[" +
                      detail::format_double(static_cast<double>(lo)) + "," +
                      detail::format_double(static_cast<double>(hi)) + "]";
      break;
    }
    case scaling_type::llama3: {
      const double pi = 3.141592653589793;
      const double m0 = static_cast<double>(sc.original_max_position_embeddings);
      const double low_wavelen = m0 / sc.low_freq_factor;
      const double high_wavelen = m0 / sc.high_freq_factor;
      for (std::size_t j = 0; j < pairs; ++j) {
        const double theta = w[j];
        const double wavelen = 2 * pi / theta;
        if (wavelen < high_wavelen) continue;  // high frequencies: unchanged
        // Low frequencies: interpolated (with equal factors, the wavelength M0 / alpha too).
        if (wavelen > low_wavelen || sc.low_freq_factor == sc.high_freq_factor) {
          w[j] = static_cast<double>(detail::default_inv_freq_ld(s.base, j, d) /
                                     static_cast<long double>(sc.factor));
          continue;
        }
        // The bands are chosen in double, as HF does; the blend is evaluated in long double
        // from theta_j before its rounding, and rounded once (as yarn's ramp, above: it was
        // 1.7-2.0 ulps from the formula in double, where theta_j's rounding enters twice).
        using ld = long double;
        const ld t = detail::default_inv_freq_ld(s.base, j, d);  // theta_j, not yet rounded
        const ld smooth = (static_cast<ld>(m0) * t / (2 * detail::pi_ld) - sc.low_freq_factor) /
                          (static_cast<ld>(sc.high_freq_factor) - sc.low_freq_factor);
        const double interpolated = theta / sc.factor;  // past double's range: refused below
        const ld blend = (1 - smooth) * t / static_cast<ld>(sc.factor) + smooth * t;
        w[j] = !detail::finite(interpolated) ? interpolated : static_cast<double>(blend);
      }
      f.identity = {id, s.base, sc.factor, sc.low_freq_factor, sc.high_freq_factor, m0};
      f.description = "llama3:factor=" + detail::format_double(sc.factor);
      break;
    }
    case scaling_type::longrope: {
      const bool use_long = seq_len > sc.original_max_position_embeddings;
      const std::vector<double>& e = use_long ? sc.long_factor : sc.short_factor;
      for (std::size_t j = 0; j < pairs; ++j)
        w[j] = static_cast<double>(detail::default_inv_freq_ld(s.base, j, d) /
                                   static_cast<long double>(e[j]));
      const std::optional<double>& list_a = use_long ? sc.long_mscale : sc.short_mscale;
      f.attention_factor = list_a ? *list_a : detail::longrope_attention_factor(sc);
      out.choice.list = use_long ? factor_list::long_factors : factor_list::short_factors;
      out.choice.effective_seq_len = seq_len;
      f.identity = {id,
                    s.base,
                    sc.factor,
                    static_cast<double>(sc.original_max_position_embeddings),
                    sc.attention_factor ? 1.0 : 0.0,
                    sc.attention_factor.value_or(0.0),
                    use_long ? 1.0 : 0.0,
                    sc.short_mscale ? 1.0 : 0.0,
                    sc.short_mscale.value_or(0.0),
                    sc.long_mscale ? 1.0 : 0.0,
                    sc.long_mscale.value_or(0.0),
                    static_cast<double>(pairs)};
      f.identity.insert(f.identity.end(), sc.short_factor.begin(), sc.short_factor.end());
      f.identity.insert(f.identity.end(), sc.long_factor.begin(), sc.long_factor.end());
      f.description = use_long ? "longrope:long" : "longrope:short";
      break;
    }
    case scaling_type::proportional: {
      // As linear for the rotated pairs (theta_j divided in long double, rounded once); exact
      // zeros beyond, whose cos and sin are exactly 1 and 0, so those pairs come out unchanged.
      const auto k = static_cast<std::size_t>(sc.rotated_pairs);
      for (std::size_t j = 0; j < pairs; ++j)
        w[j] = j < k ? static_cast<double>(detail::default_inv_freq_ld(s.base, j, d) /
                                           static_cast<long double>(sc.factor))
                     : 0.0;
      f.identity = {id, s.base, sc.factor, static_cast<double>(k)};
      f.description =
          "proportional:pairs=" + std::to_string(k) + ",factor=" + detail::format_double(sc.factor);
      break;
    }
  }
  // A factor (or LongRoPE list entry) so small that a frequency divided by it passes double's
  // range (a subnormal is > 0, so validate accepts it): named by that key, not by inv_freq.
  for (std::size_t j = 0; j < pairs; ++j) {
    if (detail::finite(w[j])) continue;
    const bool list = sc.type == scaling_type::longrope;
    const bool use_long = list && out.choice.list == factor_list::long_factors;
    const std::string key = !list ? std::string("factor")
                                  : (use_long ? "long_factor[" : "short_factor[") +
                                        std::to_string(j) + "]";
    const double value = !list ? sc.factor : (use_long ? sc.long_factor : sc.short_factor)[j];
    detail::scaling_error(key, detail::format_double(value),
                          "divides a frequency past double's range (inv_freq[" +
                              std::to_string(j) + "] is not finite; rope_type " +
                              to_string(sc.type) + ")");
  }
  detail::check_frequencies(f);
  return out;
}

/// A table from `cache` for spec s under scaling sc at sequence length seq_len, covering at
/// least `positions` positions (see table_cache::get: shared, grows, old handles stay valid).
/// The table's frequencies() carry the identity and description; compute_frequencies gives the
/// scaling_choice. Use table_mode::compact (or automatic, which switches to it beyond
/// ROPE_DENSE_TABLE_MAX_BYTES) for long contexts: 2^20 positions at rotary_dim 128 take 2 MiB.
template <class Real>
std::shared_ptr<const table<Real>> get_table(table_cache& cache, const spec& s, const scaling& sc,
                                             std::int64_t seq_len, std::int64_t positions,
                                             table_mode mode = table_mode::automatic) {
  return cache.get<Real>(compute_frequencies(s, sc, seq_len).frequencies, s.layout, positions,
                         mode);
}

/// The same through the process-wide cache (table_cache::global()).
template <class Real>
std::shared_ptr<const table<Real>> get_table(const spec& s, const scaling& sc, std::int64_t seq_len,
                                             std::int64_t positions,
                                             table_mode mode = table_mode::automatic) {
  return get_table<Real>(table_cache::global(), s, sc, seq_len, positions, mode);
}

// ---------------------------------------------------------------------------------------------
// From a model's config.

/// One value of a `rope_scaling` / `rope_parameters` entry as the engine's JSON parser gives
/// it: a number, a list of numbers, a bool, a string (rope_type) or null. A null counts as an
/// absent key where HF reads both the same way (`.get(key) or default`, `is None` tests). Where
/// it does not, from_config follows HF: yarn's `factor` null means max_position_embeddings /
/// original_max_position_embeddings (HF main), yarn's `truncate` null means false (`if
/// truncate:`), and a null rope_theta (no RoPE: OLMo Hybrid), partial_rotary_factor,
/// mrope_section, original_max_position_embeddings of yarn / llama3 / longrope (without the
/// top-level field), rope_type and proportional's factor are refused (HF fails on them, or
/// builds no rotary embedding).
class config_value {
 public:
  enum class kind : unsigned char { number, list, boolean, text, null };

  /// A number 0 (so that std::map::operator[] works).
  config_value() noexcept : kind_(kind::number) {}
  config_value(double v) : kind_(kind::number), number_(v) {}  // NOLINT: implicit on purpose
  template <class I,
            std::enable_if_t<std::is_integral<I>::value && !std::is_same<I, bool>::value, int> = 0>
  config_value(I v) : kind_(kind::number), number_(static_cast<double>(v)) {}      // NOLINT
  config_value(bool v) : kind_(kind::boolean), boolean_(v) {}                      // NOLINT
  config_value(std::vector<double> v) : kind_(kind::list), list_(std::move(v)) {}  // NOLINT
  config_value(std::initializer_list<double> v) : kind_(kind::list), list_(v) {}   // NOLINT
  config_value(std::string v) : kind_(kind::text), text_(std::move(v)) {}          // NOLINT
  config_value(const char* v) : kind_(kind::text), text_(v) {}                     // NOLINT
  config_value(std::nullptr_t) noexcept : kind_(kind::null) {}                      // NOLINT

  kind type() const noexcept { return kind_; }
  double number() const noexcept { return number_; }
  const std::vector<double>& list() const noexcept { return list_; }
  bool boolean() const noexcept { return boolean_; }
  const std::string& text() const noexcept { return text_; }

 private:
  kind kind_;
  double number_ = 0.0;
  bool boolean_ = false;
  std::vector<double> list_;
  std::string text_;
};

/// The RoPE-related fields of an HF `config.json` (the engine parses its own JSON).
struct model_config {
  double rope_theta = 10000.0;
  /// head_dim, or 0 to use hidden_size / num_attention_heads. Gemma 4's full-attention layers
  /// use global_head_dim (512) instead: set it here for their entry (HF passes head_dim_key
  /// "global_head_dim" for those layers only).
  int head_dim = 0;
  int hidden_size = 0;
  int num_attention_heads = 0;
  /// rho in (0, 1]; rotary_dim = int(head_dim * rho) must be even. rope_type proportional
  /// reads it as the share of the head's pairs that rotate: rotary_dim = head_dim, and
  /// int(rho * head_dim // 2) >= 1 pairs rotate.
  double partial_rotary_factor = 1.0;
  /// Top-level max_position_embeddings (0 = absent): M of dynamic NTK; default M0 of yarn and
  /// longrope; the default longrope factor is max_position_embeddings / M0.
  std::int64_t max_position_embeddings = 0;
  /// Top-level original_max_position_embeddings (Phi-3 has it there; 0 = absent). When present
  /// it takes priority over the key inside rope_scaling (HF's config standardisation).
  std::int64_t original_max_position_embeddings = 0;
  /// `rope_scaling` (v4) or `rope_parameters` (v5), key -> value; empty for plain RoPE. Keys:
  /// rope_type (alias: type), factor, original_max_position_embeddings, beta_fast, beta_slow,
  /// truncate, mscale, mscale_all_dim, attention_factor, low_freq_factor, high_freq_factor,
  /// short_factor, long_factor, short_mscale, long_mscale (longrope: Phi-3.5-MoE's A per
  /// list), alpha (dynamic: Hunyuan's fixed NTK base, read as ntk), attn_factor
  /// (telechat3-yarn: TeleChat3's YaRN, A = (1 + 0.07 ln factor) * attn_factor), mrope_section,
  /// mrope_interleaved, xdrope_section (HunyuanOCR's XD-RoPE: four pair counts;
  /// HF's v5 HunYuanVL config calls it mrope_section, read so under a hunyuan_vl model_type),
  /// freq_allocation (Baidu's ERNIE-4.5-VL configs have it at the top
  /// level: put it here; with an ERNIE-4.5-VL model_type only); v5 also puts rope_theta and
  /// partial_rotary_factor here (they then override the top-level fields). Other keys are
  /// ignored, as HF does. rope_type "mrope" (Qwen2-VL) and "original" (Grok-2, whose config
  /// has it and unused YaRN-like keys at the top level) mean default frequencies, and "su"
  /// (LongRoPE's first name, in Phi-3 configs) means longrope. Phi-3's other legacy name,
  /// "yarn" with short_factor and long_factor lists, is read as YaRN here (HF renames it only
  /// inside Phi3Config): give such a config rope_type "longrope".
  std::map<std::string, config_value> rope_scaling;
  /// Multi-head latent attention (DeepSeek-V2/V3): qk_rope_head_dim, the width rotated in
  /// each query/key head (64; the other qk_nope_head_dim dims are not rotated), or 0 = absent.
  /// When > 0 it is the head dim RoPE sees, before head_dim and hidden_size /
  /// num_attention_heads (HF's DeepSeek configs set head_dim to it; DeepSeek-V3 has no
  /// head_dim, and 7168 / 128 = 56 would be wrong). View each head's rotated part as heads of
  /// this width (DeepSeek: q_pe, the last 64 dims of each query head, and the one shared k_pe;
  /// interleaved pairs, HF's rope_interleave). With it, a partial_rotary_factor other than 1
  /// must give it as a share of head_dim (head_dim * rho == qk_rope_head_dim: Bailing's Ring /
  /// Ling 2.5 and V3, Mistral 4), and all of it rotates; any other factor is refused.
  /// Last, so positional initialisers stay valid.
  int qk_rope_head_dim = 0;
  /// HF's top-level model_type, read only where HF gives rope keys a meaning by model: a
  /// model_type starting with "ernie4_5_vl" or "ernie4_5_moe_vl" (ERNIE-4.5-VL's text model;
  /// not one ending in "_vision") reads mrope_section as [height, width, temporal] with
  /// height and width alternating (mrope_sections::hw_alternating), and requires it or
  /// Baidu's freq_allocation f (the sections [(d/2 - f)/2, (d/2 - f)/2, f]), with rope_type
  /// default (HF raises for any other). A model_type starting with "bailing" (Ling / Ring
  /// and their VL models) reads mrope_section as [temporal, height, width], height and width
  /// alternating, with rope_type default (vLLM's Bailing M-RoPE; so does `video_rope: true`
  /// beside mrope_section with any other model_type, sglang's switch, but ERNIE-4.5-VL's,
  /// where it is refused; a `factor` > 1 there is refused: sglang runs YaRN by it, vLLM
  /// ignores it); one starting with
  /// "openpangu" or "pangu" reads mrope_interleaved as openPangu's balanced order
  /// (mrope_sections::balanced), as does rope_type "openpangu" (vLLM's name for it) with any
  /// model_type. The bailing, openpangu and pangu prefixes match in any case (PanguEmbedded).
  /// Empty: Qwen's reading. "new" (GTE's embedding models) reads rope_type ntk as GTE's code
  /// and vLLM compute it, w_j = (b s)^(-2j/d) / s^(2/d) (rope's own ntk, the default reading,
  /// is b s^(d/(d-2))).
  std::string model_type;
};

/// A model's spec (rotation) and scaling, its M-RoPE sections (all zero unless the config has
/// mrope_section: Qwen2-VL, Qwen2.5-VL, Qwen3-VL, ERNIE-4.5-VL, Bailing, openPangu;
/// rope/mrope.hpp) and its XD-RoPE
/// sections (all zero unless it has four xdrope_section counts: HunyuanOCR, Hunyuan-VL).
struct scaled_spec {
  rope::spec spec;
  rope::scaling scaling;
  rope::mrope_sections mrope;
  rope::xdrope_sections xdrope;
};

namespace detail {

class scaling_keys {
 public:
  explicit scaling_keys(const std::map<std::string, config_value>& m, const char* type)
      : map_(m), type_(type) {}

  // The key's value, or nullptr when it is absent or null.
  const config_value* find(const char* key) const {
    auto it = map_.find(key);
    return it == map_.end() || it->second.type() == config_value::kind::null ? nullptr
                                                                             : &it->second;
  }

  bool is_null(const char* key) const {
    auto it = map_.find(key);
    return it != map_.end() && it->second.type() == config_value::kind::null;
  }

  std::optional<double> number(const char* key) const {
    const config_value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type() != config_value::kind::number)
      scaling_error(key, "<" + kind_name(*v) + ">",
                    std::string("must be a number (") + type_ + ")");
    return v->number();
  }

  double required_number(const char* key) const {
    std::optional<double> v = number(key);
    if (!v)
      raise(error_kind::invalid_argument,
            std::string("missing required key ") + key + " (rope_type " + type_ + ")");
    return *v;
  }

  std::optional<std::int64_t> length(const char* key) const {
    std::optional<double> v = number(key);
    if (!v) return std::nullopt;
    if (!(*v > 0) || !detail::finite(*v) || std::floor(*v) != *v || *v > 9.0e15)
      scaling_error(key, format_double(*v),
                    std::string("must be a positive integer (") + type_ + ")");
    return static_cast<std::int64_t>(*v);
  }

  const std::vector<double>& required_list(const char* key) const {
    const config_value* v = find(key);
    if (!v)
      raise(error_kind::invalid_argument,
            std::string("missing required key ") + key + " (rope_type " + type_ + ")");
    if (v->type() != config_value::kind::list)
      scaling_error(key, "<" + kind_name(*v) + ">",
                    std::string("must be a list of numbers (") + type_ + ")");
    return v->list();
  }

  std::optional<bool> boolean(const char* key) const {
    const config_value* v = find(key);
    if (!v) return std::nullopt;
    if (v->type() != config_value::kind::boolean)
      scaling_error(key, "<" + kind_name(*v) + ">",
                    std::string("must be true or false (") + type_ + ")");
    return v->boolean();
  }

  static std::string kind_name(const config_value& v) {
    switch (v.type()) {
      case config_value::kind::number:
        return format_double(v.number());
      case config_value::kind::list:
        return "list";
      case config_value::kind::boolean:
        return v.boolean() ? "true" : "false";
      case config_value::kind::text:
        return "\"" + v.text() + "\"";
      case config_value::kind::null:
        return "null";
    }
    return "?";
  }

 private:
  const std::map<std::string, config_value>& map_;
  const char* type_;
};

/// The scaling type a config's rope_type (or its alias `type`, named by key) names.
inline scaling_type parse_rope_type(const std::string& t, const char* key) {
  // mrope: Qwen2-VL's alias. original: Grok-2's (at its config's top level, beside YaRN-like
  // keys it does not use: sglang's Grok code takes the unscaled frequencies and no attention
  // factor for it, and vLLM's maps it to default). openpangu: vLLM's name for openPangu's
  // default frequencies with its balanced M-RoPE order (from_config sets the order).
  if (t == "default" || t == "mrope" || t == "original" || t == "openpangu")
    return scaling_type::none;
  if (t == "linear") return scaling_type::linear;
  if (t == "ntk") return scaling_type::ntk;
  // xdrope: HunyuanOCR / Hunyuan-VL, HF's dynamic (with its alpha: Hunyuan's fixed NTK base)
  // plus xdrope_section, which from_config reads.
  if (t == "dynamic" || t == "xdrope") return scaling_type::dynamic_ntk;
  // telechat3-yarn (TeleChat3): YaRN with its own attention factor; from_config reads it.
  if (t == "yarn" || t == "telechat3-yarn") return scaling_type::yarn;
  if (t == "llama3") return scaling_type::llama3;
  // "su": LongRoPE's first name, still in Phi-3 configs; HF's Phi3Config renames it longrope.
  if (t == "longrope" || t == "su") return scaling_type::longrope;
  if (t == "proportional") return scaling_type::proportional;  // Gemma 4
  scaling_error(key, "\"" + t + "\"",
                "is not known (default, linear, ntk, dynamic, xdrope, yarn, telechat3-yarn, "
                "llama3, longrope, proportional; aliases: type for rope_type, mrope and original "
                "for default, su for longrope)");
}

}  // namespace detail

/// The spec and scaling of a model from its config fields, resolving HF's defaults as HF's
/// current code does (shared/rope-formulas.md sections 3-9, 13): yarn beta_fast/beta_slow 0
/// mean 32/1 and mscale/mscale_all_dim 0 mean unset (HF's falsy test); yarn, llama3 and
/// longrope M0 defaults to max_position_embeddings; the longrope factor defaults to
/// max_position_embeddings / M0, and so does a yarn factor given as null; a top-level
/// original_max_position_embeddings takes priority over the rope_scaling key; nulls as
/// config_value says (most read as absent; some refused, yarn's truncate false). The layout is
/// not in the config: name it.
///
/// Throws std::invalid_argument naming the key: unknown rope_type, a missing required key, a
/// value of the wrong kind, a null refused (config_value), NaN/Inf in any number or list,
/// factor <= 0, alpha < 0, beta_fast < beta_slow, low_freq_factor > high_freq_factor, a list of
/// the wrong length or with an entry <= 0, rotary_dim < 4 for ntk/dynamic, a proportional
/// partial_rotary_factor that rotates no pair, a partial_rotary_factor beside qk_rope_head_dim
/// that is not qk_rope_head_dim / head_dim, and bad head dimensions (head_dim,
/// qk_rope_head_dim, hidden_size / num_attention_heads; odd for proportional) or base, and for
/// telechat3-yarn the keys vLLM does not read or fails on and a factor that disagrees with
/// max_position_embeddings / M0;
/// M-RoPE sections that do not fit their order (naming mrope_section), a Bailing M-RoPE config
/// with a rope_type other than default, with mrope_interleaved or with a factor > 1, and
/// video_rope true beside XD-RoPE's sections or ERNIE-4.5-VL's order.
/// proportional's factor defaults to 1. type xdrope (HunyuanOCR) reads as dynamic, and its
/// four xdrope_section counts into scaled_spec::xdrope.
inline scaled_spec from_config(const model_config& cfg, rope::layout l) {
  const auto& m = cfg.rope_scaling;
  // NaN/Inf anywhere in the map, named by key (also in keys this function does not read).
  for (const auto& [key, v] : m) {
    if (v.type() == config_value::kind::number && !detail::finite(v.number()))
      detail::scaling_error(key, detail::format_double(v.number()), "must be finite");
    if (v.type() == config_value::kind::list)
      for (std::size_t j = 0; j < v.list().size(); ++j)
        if (!detail::finite(v.list()[j]))
          detail::scaling_error(key + "[" + std::to_string(j) + "]",
                                detail::format_double(v.list()[j]), "must be finite");
  }
  std::string type_name = "default";
  const char* type_key = m.count("rope_type") ? "rope_type" : (m.count("type") ? "type" : nullptr);
  if (type_key) {
    const config_value& v = m.at(type_key);
    if (v.type() != config_value::kind::text)
      detail::scaling_error(type_key, detail::scaling_keys::kind_name(v), "must be a string");
    type_name = v.text();
  }
  scaled_spec out;
  scaling& sc = out.scaling;
  sc.type = detail::parse_rope_type(type_name, type_key ? type_key : "rope_type");
  // TeleChat3's YaRN (read in the yarn case below); its messages name it.
  const bool telechat3 = type_name == "telechat3-yarn";
  const detail::scaling_keys keys(m, telechat3 ? "telechat3-yarn" : to_string(sc.type));

  // The spec. An explicit null rope_theta is no RoPE, not a default base: HF v5 keeps it
  // (setdefault), OLMo Hybrid then builds no rotary embedding and other models fail in their
  // init, so rotating by cfg.rope_theta would be wrong for every reader.
  if (keys.is_null("rope_theta"))
    detail::scaling_error("rope_theta", "null",
                          "means the model has no RoPE (OLMo Hybrid builds no rotary embedding "
                          "then; HF's other models fail): do not rotate its queries and keys");
  const double theta = keys.number("rope_theta").value_or(cfg.rope_theta);
  // Two more keys whose null is not read as absent: partial_rotary_factor (HF's scaled types'
  // functions read .get("partial_rotary_factor", 1.0), which returns the null, and fail; some
  // v5 versions replace it by a top-level value first) and mrope_section (HF's M-RoPE models
  // read it and fail; vLLM and sglang test `"mrope_section" in ...` and build M-RoPE, which runs
  // text positions as plain RoPE and fails on three rows).
  if (keys.is_null("partial_rotary_factor"))
    detail::scaling_error("partial_rotary_factor", "null",
                          "is not a share of the head (HF reads the null and fails): give a "
                          "number, or leave the key out to use "
                          "model_config::partial_rotary_factor");
  if (keys.is_null("mrope_section"))
    detail::scaling_error("mrope_section", "null",
                          "gives M-RoPE no sections (HF's M-RoPE models fail on it; vLLM runs "
                          "text positions as plain RoPE and fails on three rows): give the "
                          "counts, or leave the key out for plain RoPE");
  if (!(theta > 1.0) || !detail::finite(theta))
    detail::scaling_error("rope_theta", detail::format_double(theta), "must be finite and > 1");
  if (cfg.qk_rope_head_dim < 0)
    detail::scaling_error("qk_rope_head_dim", std::to_string(cfg.qk_rope_head_dim),
                          "must be positive (0 = absent)");
  // The key a bad head dimension is reported under: the field it came from.
  const char* head_key = cfg.qk_rope_head_dim > 0 ? "qk_rope_head_dim" : "head_dim";
  int head_dim = cfg.qk_rope_head_dim > 0 ? cfg.qk_rope_head_dim : cfg.head_dim;
  if (head_dim == 0) {
    if (cfg.hidden_size <= 0 || cfg.num_attention_heads <= 0)
      detail::scaling_error("head_dim", "0",
                            "needs hidden_size (" + std::to_string(cfg.hidden_size) +
                                ") and num_attention_heads (" +
                                std::to_string(cfg.num_attention_heads) + ") both positive");
    head_dim = cfg.hidden_size / cfg.num_attention_heads;
  }
  if (head_dim <= 0)
    detail::scaling_error(head_key, std::to_string(head_dim), "must be positive");
  const double rho = keys.number("partial_rotary_factor").value_or(cfg.partial_rotary_factor);
  if (!(rho > 0.0) || !(rho <= 1.0) || !detail::finite(rho))
    detail::scaling_error("partial_rotary_factor", detail::format_double(rho), "must be in (0, 1]");
  // proportional (Gemma 4) rotates pairs across the whole head and reads rho as the share of
  // them that rotate: rotary_dim = head_dim, rotated_pairs = int(rho * head_dim // 2) (HF).
  const bool proportional = sc.type == scaling_type::proportional;
  // Multi-head latent attention with a partial_rotary_factor: in every checkpoint seen the
  // factor gives qk_rope_head_dim as a share of head_dim (Bailing's Ring / Ling 2.5 and V3:
  // head_dim 128, 0.5, qk_rope_head_dim 64; Mistral 4's config sets qk_rope_head_dim /
  // head_dim), and all qk_rope_head_dim dims rotate with w_j = theta^(-2j / qk_rope_head_dim)
  // (Bailing's own code runs HF's default init over head_dim * 0.5; vLLM drops the factor for
  // each). Applied to qk_rope_head_dim it would halve the rotated width and move every
  // frequency, so it is read only where it names qk_rope_head_dim, refused elsewhere.
  bool mla_share = false;
  if (cfg.qk_rope_head_dim > 0 && rho != 1.0 && !proportional) {
    const double share = static_cast<double>(cfg.head_dim) * rho;
    if (cfg.head_dim > 0 && std::fabs(share - cfg.qk_rope_head_dim) < 1e-6)
      mla_share = true;
    else
      detail::scaling_error(
          "partial_rotary_factor", detail::format_double(rho),
          "with qk_rope_head_dim=" + std::to_string(cfg.qk_rope_head_dim) +
              " must be 1 or qk_rope_head_dim / head_dim (head_dim=" +
              std::to_string(cfg.head_dim) +
              "; set head_dim where the config has it): multi-head latent attention rotates all "
              "of qk_rope_head_dim");
  }
  const double rd = proportional || mla_share
                        ? static_cast<double>(head_dim)
                        : std::floor(static_cast<double>(head_dim) * rho);  // HF: int()
  const int rotary_dim = static_cast<int>(rd);
  if ((rotary_dim < 2 || rotary_dim % 2 != 0) &&
      (rho == 1.0 || proportional || mla_share))  // odd head dim
    detail::scaling_error(head_key, std::to_string(head_dim),
                          "gives rotary_dim=" + std::to_string(rotary_dim) +
                              (proportional ? " (proportional rotates pairs across the head)"
                               : mla_share  ? " (multi-head latent attention rotates all of it)"
                                            : " (partial_rotary_factor=1)") +
                              ", which must be even and >= 2");
  if (rotary_dim < 2 || rotary_dim % 2 != 0)
    detail::scaling_error("partial_rotary_factor", detail::format_double(rho),
                          "gives rotary_dim=int(" + std::to_string(head_dim) + " * rho)=" +
                              std::to_string(rotary_dim) + ", which must be even and >= 2");
  out.spec = make_spec(head_dim, rotary_dim, theta, l);
  // M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL; ERNIE-4.5-VL by model_type): three pair counts
  // assigning every rotated pair. Without them an M-RoPE config must not read as plain RoPE
  // (an engine would then rotate image tokens by one position): rope_type "mrope" (HF raises
  // too), mrope_interleaved set (HF's Qwen3-VL falls back to its own [24, 20, 20]: a model's
  // default, not ours) or an ERNIE-4.5-VL model_type (HF falls back to [22, 22, 20]) without
  // mrope_section (or, for ERNIE, Baidu's freq_allocation) is an error.
  // ERNIE-4.5-VL (HF's Ernie4_5_VLMoeTextRotaryEmbedding, vLLM's Ernie4_5_VLRotaryEmbedding)
  // lists [height, width, temporal], height and width alternating over the first pairs; its
  // vision tower's model_type (..._vision) has no M-RoPE.
  const std::string& type = cfg.model_type;
  const auto starts = [&](const std::string& prefix) { return type.rfind(prefix, 0) == 0; };
  const auto ends = [&](const std::string& suffix) {
    return type.size() >= suffix.size() &&
           type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const bool ernie = (starts("ernie4_5_vl") || starts("ernie4_5_moe_vl")) && !ends("_vision");
  // Bailing's models (Ling / Ring and their VL models: model_type bailing_moe_v3_vl,
  // bailing_hybrid, bailingmm...) list [temporal, height, width] and alternate height and width
  // over the first pairs as ERNIE-4.5-VL does (vLLM's BailingMRotaryEmbedding; sglang reorders
  // the list onto ERNIE's kernel); vLLM accepts only rope_type default there. openPangu
  // (model_type openpangu..., PanguEmbedded, any case) with mrope_interleaved runs its own
  // balanced order (vLLM's MRotaryEmbeddingInterleaved, Huawei's get_mrope_interleaved_id_list),
  // which Qwen3-VL's differs from for most sections (e.g. openPangu-VL's [16, 8, 8]).
  std::string lower = type;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto lower_starts = [&](const char* prefix) { return lower.rfind(prefix, 0) == 0; };
  const bool bailing_type = lower_starts("bailing") && !ends("_vision");
  // sglang's get_rope picks Bailing's M-RoPE by `video_rope: true` beside mrope_section, under
  // any model_type (its Bailing VL config classes add the key; vLLM has no such key and picks
  // Bailing's class by architecture): read so here too, never as Qwen's order.
  const bool video_rope = keys.boolean("video_rope").value_or(false);
  const bool pangu = ((lower_starts("openpangu") || lower_starts("pangu")) && !ends("_vision")) ||
                     type_name == "openpangu";
  const bool interleaved = keys.boolean("mrope_interleaved").value_or(false);
  // sglang's mrope_interleaved_glm: a round-robin over the streams that skips a spent one (no
  // checkpoint seen); ignored, its sections would read as consecutive.
  if (keys.boolean("mrope_interleaved_glm").value_or(false))
    detail::scaling_error("mrope_interleaved_glm", "true",
                          "(sglang's round-robin M-RoPE order) is not supported");
  if (type_name == "openpangu" && !interleaved)  // vLLM's MRotaryEmbeddingInterleaved raises
    detail::scaling_error("mrope_interleaved", "absent or false",
                          "must be true for rope_type openpangu");
  const char* const order = ernie ? "height, width, temporal" : "temporal, height, width";
  // HF's Ernie4_5_VLMoeTextRotaryEmbedding raises for any rope_type but default, and vLLM's
  // ERNIE-4.5-VL takes no scaling: a scaled ERNIE config is not one either would run.
  if (ernie && type_name != "default")
    detail::scaling_error(type_key, "\"" + type_name + "\"",
                          "must be default for model_type " + cfg.model_type +
                              " (HF's ERNIE-4.5-VL raises for any other)");
  if (ernie && rho != 1.0)  // HF, vLLM and Baidu rotate the whole head and ignore it
    detail::scaling_error("partial_rotary_factor", detail::format_double(rho),
                          "must be 1 for model_type " + cfg.model_type +
                              " (ERNIE-4.5-VL rotates the whole head)");
  if (ernie && interleaved)
    detail::scaling_error("mrope_interleaved", "true",
                          "does not apply to model_type " + cfg.model_type +
                              " (ERNIE-4.5-VL alternates height and width)");
  // Baidu's own ERNIE-4.5-VL configs (model_type ernie4_5_moe_vl) give the temporal pair count
  // as a top-level freq_allocation f, which an engine puts in this map: the sections are
  // [(d/2 - f) / 2, (d/2 - f) / 2, f] (vLLM's and Baidu's reading). Only for ERNIE: its meaning
  // differs by model (Baidu's FastDeploy also reads it for Qwen's contiguous sections), and
  // ignored it would leave image tokens at plain RoPE's positions.
  std::vector<double> from_f;
  if (const std::optional<double> fa = keys.number("freq_allocation")) {
    const double f = *fa;
    const std::string fs = detail::format_double(f);
    if (!ernie)
      detail::scaling_error("freq_allocation", fs,
                            "is read only for an ERNIE-4.5-VL model_type (ernie4_5_moe_vl, "
                            "ernie4_5_vl_moe; its meaning differs by model; model_type is \"" +
                                cfg.model_type + "\"): give mrope_section");
    const double half = rotary_dim / 2, hw = (half - f) / 2;
    if (!(f > 0) || !(f <= half) || std::floor(f) != f || std::floor(hw) != hw)
      detail::scaling_error("freq_allocation", fs,
                            "must be an integer in [1, rotary_dim / 2 = " +
                                std::to_string(rotary_dim / 2) +
                                "] leaving an even number of pairs to height and width");
    from_f = {hw, hw, f};
  }
  // A list as the messages show it: [a,b,c].
  const auto list_text = [](const std::vector<double>& v) {
    std::string t = "[";
    for (double e : v) t += (t.size() > 1 ? "," : "") + detail::format_double(e);
    return t + "]";
  };
  // XD-RoPE (HunyuanOCR, Hunyuan-VL: type xdrope): xdrope_section, which HF's HunYuanVL config
  // renames mrope_section (both given, they must agree): four consecutive pair counts
  // (position, width, height, image index), as Tencent's code (cos/sin split by
  // xdrope_section * 2, the list repeated, chunk i taking stream i % 4), vLLM and mlx-vlm read
  // them. transformers' HunYuanVL (both versions seen, v5's too) doubles each count instead,
  // which turns a pair's two coordinates by different positions wherever a token's positions
  // differ: not a rotation, and not what the model's authors run. Three counts (HF's 3-axis
  // mode, doubled too; no checkpoint seen) are refused rather than guessed.
  const bool hunyuan_vl = starts("hunyuan_vl") && !ends("_vision");
  const config_value* xd = keys.find("xdrope_section");
  const config_value* ms = keys.find("mrope_section");
  if (xd && ms && !(xd->type() == config_value::kind::list &&
                    ms->type() == config_value::kind::list && xd->list() == ms->list()))
    detail::scaling_error("xdrope_section",
                          xd->type() == config_value::kind::list
                              ? list_text(xd->list())
                              : detail::scaling_keys::kind_name(*xd),
                          "disagrees with mrope_section=" +
                              (ms->type() == config_value::kind::list
                                   ? list_text(ms->list())
                                   : detail::scaling_keys::kind_name(*ms)) +
                              " (HF raises)");
  const config_value* xs = xd ? xd : (hunyuan_vl || type_name == "xdrope" ? ms : nullptr);
  if (type_name == "xdrope" && !xs)
    detail::raise(error_kind::invalid_argument,
                  "missing required key xdrope_section (type xdrope: four pair counts, position, "
                  "width, height, image index)");
  if (xs) {
    const char* key = xd ? "xdrope_section" : "mrope_section";
    std::string text = detail::scaling_keys::kind_name(*xs);
    bool ok = xs->type() == config_value::kind::list && xs->list().size() == 4;
    if (xs->type() == config_value::kind::list) {
      text = list_text(xs->list());
      for (double e : xs->list()) ok = ok && e >= 0 && e <= max_rotary_dim && std::floor(e) == e;
    }
    if (!ok)
      detail::scaling_error(key, text,
                            "must be four pair counts (position, width, height, image index): "
                            "integers >= 0");
    if (interleaved || ernie || !from_f.empty())
      detail::scaling_error(key, text, "is XD-RoPE's, which takes no mrope_interleaved, "
                                       "freq_allocation or ERNIE-4.5-VL model_type");
    const auto& e = xs->list();
    const auto at = [&](std::size_t i) { return static_cast<int>(e[i]); };
    out.xdrope = {at(0), at(1), at(2), at(3)};
    if (!detail::xdrope_sections_match(out.xdrope, rotary_dim))
      detail::scaling_error(key, text,
                            "must assign the rotary_dim / 2 = " + std::to_string(rotary_dim / 2) +
                                " pairs (their sum)");
  }
  const config_value* section = xs ? nullptr : ms;
  // Beside another model's own order (ERNIE-4.5-VL's, XD-RoPE's sections) it is refused; beside
  // openPangu's mrope_interleaved, as any mrope_interleaved, below.
  if (video_rope && (xs || (section && ernie)))
    detail::scaling_error("video_rope", "true",
                          "(sglang's switch to Bailing's M-RoPE order) conflicts with " +
                              std::string(xs ? "XD-RoPE's sections" : "ERNIE-4.5-VL's order") +
                              " (model_type \"" + cfg.model_type + "\")");
  const bool bailing = bailing_type || (video_rope && section);
  const std::string bailing_why =
      bailing_type ? "model_type " + cfg.model_type : std::string("video_rope true");
  if (bailing && section && type_name != "default")
    detail::scaling_error(type_key ? type_key : "rope_type", "\"" + type_name + "\"",
                          "must be default for " + bailing_why + " with mrope_section (" +
                              (bailing_type ? "vLLM's Bailing M-RoPE raises for any other"
                                            : "sglang runs Bailing's M-RoPE with YaRN under "
                                              "yarn: not supported") +
                              ")");
  if (bailing && section && interleaved)
    detail::scaling_error("mrope_interleaved", "true",
                          "does not apply to " + bailing_why +
                              " (Bailing alternates height and width)");
  // A factor beside Bailing's sections under rope_type default: sglang's Bailing M-RoPE runs
  // YaRN by it (its config classes rewrite rope_type to default and keep the yarn keys), vLLM
  // and HF's default ignore it. Neither reading is the other's: refused rather than guessed.
  if (bailing && section)
    if (const std::optional<double> f = keys.number("factor"); f && *f > 1.0)
      detail::scaling_error("factor", detail::format_double(*f),
                            "with Bailing's M-RoPE (" + bailing_why +
                                ") and rope_type default is read two ways (sglang runs YaRN by "
                                "it, vLLM ignores it): not supported; remove it or set 1");
  if (!xs && !section && from_f.empty() &&
      (type_name == "mrope" || type_name == "openpangu" || interleaved || ernie))
    detail::raise(error_kind::invalid_argument,
                  std::string("missing required key mrope_section (") +
                      (ernie ? "model_type " + cfg.model_type
                       : type_name == "mrope" ? std::string("rope_type mrope")
                                              : std::string("mrope_interleaved is true")) +
                      ": three pair counts, " + order +
                      (ernie ? "; or Baidu's freq_allocation)" : ")"));
  if (section || !from_f.empty()) {
    std::string text = section ? detail::scaling_keys::kind_name(*section) : "";
    bool ok = !section || (section->type() == config_value::kind::list &&
                           section->list().size() == 3);
    if (section && section->type() == config_value::kind::list) {
      text = list_text(section->list());
      for (double e : section->list())
        ok = ok && e >= 0 && e <= max_rotary_dim && std::floor(e) == e;
    }
    if (!ok)
      detail::scaling_error("mrope_section", text,
                            std::string("must be three pair counts (") + order +
                                "): integers >= 0");
    if (section && !from_f.empty() && section->list() != from_f)
      detail::scaling_error("freq_allocation", detail::format_double(from_f[2]),
                            "gives " + list_text(from_f) +
                                ", which disagrees with mrope_section=" + text);
    const auto& e = section ? section->list() : from_f;
    const auto at = [&](std::size_t i) { return static_cast<int>(e[i]); };
    if (ernie)
      out.mrope = {at(2), at(0), at(1), false, true, false};
    else if (bailing)
      out.mrope = {at(0), at(1), at(2), false, true, false};
    else
      out.mrope = {at(0), at(1), at(2), interleaved && !pangu, false, interleaved && pangu};
    // HF's ERNIE-4.5-VL slices inv_freq[:-temporal], empty at 0, and raises; Baidu asserts it.
    if (!detail::mrope_sections_match(out.mrope, rotary_dim) || (ernie && out.mrope.temporal == 0))
      detail::scaling_error(
          "mrope_section", text,
          ernie || bailing
              ? std::string("must be [") + order + "] (" +
                    (ernie ? "model_type " + cfg.model_type : bailing_why) +
                    ") with height == width" + (ernie ? ", temporal > 0" : "") +
                    " and a sum of rotary_dim / 2 = " + std::to_string(rotary_dim / 2) + " pairs"
              : "must assign the rotary_dim / 2 = " + std::to_string(rotary_dim / 2) +
                    " pairs (their sum" +
                    (out.mrope.interleaved
                         ? "; interleaved, height and width at most a third of them)"
                     : out.mrope.balanced
                         ? "; openPangu's balanced order keeps the last pair temporal: "
                           "temporal >= 1)"
                         : ")"));
  }
  if (cfg.max_position_embeddings < 0)
    detail::scaling_error("max_position_embeddings", std::to_string(cfg.max_position_embeddings),
                          "must be positive (0 = absent)");
  if (cfg.original_max_position_embeddings < 0)
    detail::scaling_error("original_max_position_embeddings",
                          std::to_string(cfg.original_max_position_embeddings),
                          "must be positive (0 = absent)");

  // vLLM's and GTE's mixed NTK (w_j = theta_j / exp(a (j + 1)^b)) is not a method of rope's:
  // read as the fixed one it would give other frequencies.
  if (const config_value* b = keys.find("mixed_b"))
    detail::scaling_error("mixed_b", detail::scaling_keys::kind_name(*b),
                          "(vLLM's mixed NTK, w_j = theta_j / exp(a (j + 1)^mixed_b)) is not "
                          "supported: build rope::frequencies with those w_j");
  // FoPE (Intern-S1-Pro; vLLM's and sglang's FourierRotaryEmbedding, switched on by any of
  // these keys not null, or use_fope): cos and sin are learned per-head mixtures loaded with
  // the weights, not one angle per pair. Ignored, the config would read as plain RoPE.
  for (const char* key : {"fope_init_factor", "fope_sep_head", "num_inv_freq", "use_fope"}) {
    const config_value* v = keys.find(key);
    if (!v || (std::string(key) == "use_fope" && v->type() == config_value::kind::boolean &&
               !v->boolean()))
      continue;
    detail::scaling_error(key, detail::scaling_keys::kind_name(*v),
                          "switches on FoPE (Fourier position embedding: learned per-head "
                          "mixtures of cos and sin), which rope does not compute");
  }

  // M0 (yarn, llama3, longrope): top-level, else the key, else max_position_embeddings.
  auto resolve_m0 = [&]() -> std::int64_t {
    if (cfg.original_max_position_embeddings > 0) return cfg.original_max_position_embeddings;
    // A null key is not absent: HF's standardisation keeps it (setdefault; only a top-level
    // value replaces it) and the rope function fails on it.
    if (keys.is_null("original_max_position_embeddings"))
      detail::scaling_error("original_max_position_embeddings", "null",
                            std::string("is not read as absent (rope_type ") +
                                (telechat3 ? "telechat3-yarn" : to_string(sc.type)) +
                                ": HF keeps the null and fails): give M0, or leave the key out "
                                "for max_position_embeddings");
    if (auto v = keys.length("original_max_position_embeddings")) return *v;
    if (cfg.max_position_embeddings > 0) return cfg.max_position_embeddings;
    detail::raise(error_kind::invalid_argument,
                  std::string("missing required key original_max_position_embeddings (rope_type ") +
                      to_string(sc.type) + "; max_position_embeddings is absent too)");
  };
  // HF's default factor, max_position_embeddings / M0: yarn's when `factor` is null, longrope's
  // when it is absent. `missing` is the error when max_position_embeddings is absent (checked
  // before M0, so that error names the factor).
  auto factor_from_lengths = [&](const std::string& missing) -> double {
    if (cfg.max_position_embeddings <= 0) detail::raise(error_kind::invalid_argument, missing);
    return static_cast<double>(cfg.max_position_embeddings) / static_cast<double>(resolve_m0());
  };

  switch (sc.type) {
    case scaling_type::none:
      break;
    case scaling_type::linear:
    case scaling_type::ntk:
      sc.factor = keys.required_number("factor");
      // GTE (model_type "new": gte-large-en-v1.5, gte-multilingual-base) means by "ntk" what its
      // own code and vLLM's NTKScalingRotaryEmbedding compute: w_j = (b * s)^(-2j/d) / s^(2/d),
      // not rope's ntk (b * s^(d/(d-2))): the same frequencies as the base b * s with linear
      // scaling by s^(2/d) (each w_j then within 2 ulps of the formula: two roundings).
      if (sc.type == scaling_type::ntk && type == "new") {
        detail::check_positive("factor", sc.factor, "ntk of model_type new (GTE)");
        const double gte_base = out.spec.base * sc.factor;
        if (!(gte_base > 1.0) || !detail::finite(gte_base))
          detail::scaling_error("factor", detail::format_double(sc.factor),
                                "gives GTE's base rope_theta * factor = " +
                                    detail::format_double(gte_base) +
                                    ", which must be finite and > 1");
        out.spec.base = gte_base;
        sc.type = scaling_type::linear;
        sc.factor = std::pow(sc.factor, 2.0 / static_cast<double>(rotary_dim));
      }
      break;
    case scaling_type::dynamic_ntk:
      // Hunyuan (A13B, 7B, MT): "dynamic" with `alpha` is a fixed NTK base change, base *
      // alpha^(d/(d-2)), whatever the length (HF's HunYuan rotary classes at construction, vLLM's
      // DynamicNTKAlphaRotaryEmbedding, mlx-lm); its `factor` (1.0) is not read. HF's
      // dynamic update would recompute past max_position_embeddings without alpha; vLLM's
      // fixed base is followed here. alpha = 0 is "not set", as HF's truthiness test reads it.
      if (auto alpha = keys.number("alpha"); alpha && *alpha != 0.0) {
        detail::check_positive("alpha", *alpha, "dynamic with alpha");
        // The checks validate makes of an ntk factor, named by the config's key.
        if (out.spec.rotary_dim < 4)
          detail::scaling_error("alpha", detail::format_double(*alpha),
                                "needs rotary_dim >= 4 (the exponent d/(d-2) of the base "
                                "change; rotary_dim is " +
                                    std::to_string(out.spec.rotary_dim) + ")");
        const double b = static_cast<double>(
            detail::ntk_base_ld(out.spec.base, *alpha, out.spec.rotary_dim));
        if (!(b > 1.0) || !detail::finite(b))
          detail::scaling_error("alpha", detail::format_double(*alpha),
                                "gives the base " + detail::format_double(b) +
                                    ", which must be finite and > 1 (dynamic with alpha)");
        sc.type = scaling_type::ntk;
        sc.factor = *alpha;
        break;
      }
      sc.factor = keys.required_number("factor");
      if (cfg.max_position_embeddings <= 0)
        detail::raise(
            error_kind::invalid_argument,
            "missing required key max_position_embeddings (top level; M of rope_type dynamic)");
      sc.max_position_embeddings = cfg.max_position_embeddings;
      break;
    case scaling_type::yarn: {
      sc.factor = keys.is_null("factor")  // HF main: max_position_embeddings / M0
                      ? factor_from_lengths("factor=null needs max_position_embeddings, which "
                                            "gives its value (yarn), and it is absent")
                      : keys.required_number("factor");
      sc.original_max_position_embeddings = resolve_m0();
      const double bf = keys.number("beta_fast").value_or(0.0);
      const double bs = keys.number("beta_slow").value_or(0.0);
      sc.beta_fast = bf != 0.0 ? bf : 32.0;  // HF: `value or default`
      sc.beta_slow = bs != 0.0 ? bs : 1.0;
      // HF: `if truncate:` on .get("truncate", True), so a null does not truncate (as false).
      sc.truncate = keys.is_null("truncate") ? false : keys.boolean("truncate").value_or(true);
      sc.mscale = keys.number("mscale").value_or(0.0);
      sc.mscale_all_dim = keys.number("mscale_all_dim").value_or(0.0);
      sc.attention_factor = keys.number("attention_factor");
      if (telechat3) {
        // TeleChat3 (Tele-AI; e.g. Telechat3-36B: theta 1e6, factor 4, M0 8192, max 32768). The
        // one implementation that reads this type as its own, vLLM's
        // TeleChat3RoPEScaledRotaryEmbedding, keeps YaRN's frequencies (truncated range) and
        // multiplies cos and sin by A = (0.07 ln s + 1) * attn_factor (attn_factor alone for
        // s <= 1), not 0.1 ln s + 1; mlx-lm reads it as plain yarn, and TeleAI's own modeling
        // code was not available to check. vLLM takes s = max_position_embeddings / M0 when the
        // config has M0 (its config patching copies a top-level M0 into the map), `factor`
        // otherwise: the two must agree here. What vLLM does not read (attention_factor,
        // truncate: false or null, M-RoPE keys), reads differently by version
        // (extrapolation_factor) or fails on (mscale, mscale_all_dim, betas of 0, a null factor)
        // is refused.
        for (const char* k : {"mscale", "mscale_all_dim", "attention_factor", "mrope_section",
                              "mrope_interleaved", "freq_allocation"})
          if (const config_value* v = keys.find(k))
            detail::scaling_error(k, detail::scaling_keys::kind_name(*v),
                                  "is not read by rope_type telechat3-yarn (vLLM's "
                                  "TeleChat3RoPEScaledRotaryEmbedding: YaRN's frequencies, "
                                  "attention factor (0.07 ln factor + 1) * attn_factor)");
        if (keys.is_null("factor"))
          detail::scaling_error("factor", "null", "must be a number (telechat3-yarn)");
        for (const char* k : {"beta_fast", "beta_slow"})
          if (keys.number(k) == 0.0)
            detail::scaling_error(k, "0",
                                  "must be > 0 (telechat3-yarn: vLLM divides by it; HF's yarn "
                                  "reads 0 as the default)");
        if (!sc.truncate)
          detail::scaling_error("truncate", keys.is_null("truncate") ? "null" : "false",
                                "is not read by rope_type telechat3-yarn (vLLM always truncates "
                                "the correction range)");
        if (auto e = keys.number("extrapolation_factor"); e && *e != 1.0)
          detail::scaling_error("extrapolation_factor", detail::format_double(*e),
                                "must be 1 for rope_type telechat3-yarn (vLLM's versions differ: "
                                "older ones weight the ramp by it, newer ones ignore it)");
        detail::check_positive("factor", sc.factor, "telechat3-yarn");
        const bool has_m0 = cfg.original_max_position_embeddings > 0 ||
                            keys.find("original_max_position_embeddings");
        if (has_m0 && cfg.max_position_embeddings > 0) {
          const double from_lengths = static_cast<double>(cfg.max_position_embeddings) /
                                      static_cast<double>(sc.original_max_position_embeddings);
          if (from_lengths != sc.factor)
            detail::scaling_error(
                "factor", detail::format_double(sc.factor),
                "disagrees with max_position_embeddings / original_max_position_embeddings = " +
                    std::to_string(cfg.max_position_embeddings) + " / " +
                    std::to_string(sc.original_max_position_embeddings) + " = " +
                    detail::format_double(from_lengths) +
                    ", the factor vLLM uses for telechat3-yarn: set factor to that for vLLM's "
                    "numbers, or give rope_type yarn for mlx-lm's (it reads factor)");
        }
        const double attn = keys.number("attn_factor").value_or(1.0);
        detail::check_positive("attn_factor", attn, "telechat3-yarn");
        sc.attention_factor = (sc.factor <= 1.0 ? 1.0 : 0.07 * std::log(sc.factor) + 1.0) * attn;
      }
      break;
    }
    case scaling_type::llama3:
      sc.factor = keys.required_number("factor");
      sc.low_freq_factor = keys.required_number("low_freq_factor");
      sc.high_freq_factor = keys.required_number("high_freq_factor");
      // Required in HF v4.x; HF main falls back to max_position_embeddings (formulas section 8).
      sc.original_max_position_embeddings = resolve_m0();
      break;
    case scaling_type::longrope: {
      sc.short_factor = keys.required_list("short_factor");
      sc.long_factor = keys.required_list("long_factor");
      sc.original_max_position_embeddings = resolve_m0();
      const std::optional<double> f = keys.number("factor");
      sc.factor = f ? *f
                    : factor_from_lengths("missing required key factor (rope_type longrope; "
                                          "max_position_embeddings, which gives its default, is "
                                          "absent too)");
      sc.attention_factor = keys.number("attention_factor");
      sc.short_mscale = keys.number("short_mscale");  // Phi-3.5-MoE
      sc.long_mscale = keys.number("long_mscale");
      break;
    }
    case scaling_type::proportional: {
      // HF: int(rope_proportion * head_dim // 2), the product rounded, then floored by 2.
      const double k = std::floor(static_cast<double>(head_dim) * rho / 2.0);
      if (k < 1)
        detail::scaling_error("partial_rotary_factor", detail::format_double(rho),
                              "gives int(rho * head_dim // 2) = 0 rotated pairs (proportional, "
                              "head_dim " +
                                  std::to_string(head_dim) + "): at least one must rotate");
      sc.rotated_pairs = static_cast<int>(k);
      // HF: .get("factor", 1.0), which returns a null (then `inv_freq /= None` fails).
      if (keys.is_null("factor"))
        detail::scaling_error("factor", "null",
                              "must be a number (proportional; leave the key out for 1)");
      sc.factor = keys.number("factor").value_or(1.0);
      break;
    }
  }
  validate(out.spec, sc);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Re-rotation of cached keys (hot path: noexcept, no allocation, validation before any write).

namespace detail {

// s + t = a + b exactly (opaque after every step: -ffast-math's reassociation would fold t to
// zero or regroup a - (s - bb) inexactly).
inline void two_sum(double a, double b, double& s, double& t) noexcept {
  s = opaque(a + b);
  const double bb = opaque(s - a);
  t = opaque(a - opaque(s - bb)) + opaque(b - bb);
}

/// cos and sin of q*wb - p*wa, with both products and their difference formed in
/// double-double, so the angle is accurate to about 2^-53 of itself however large p is.
inline void cos_sin_of_difference(double q, double wb, double p, double wa, double& c,
                                  double& s) noexcept {
  const double hb = opaque(q * wb), lb = exact_fma(q, wb, -hb);  // see two_sum, exact_fma
  const double ha = opaque(p * wa), la = exact_fma(p, wa, -ha);
  double sum, err;
  two_sum(hb, -ha, sum, err);
  const double tail = err + (lb - la);
  const double hi = opaque(sum + tail);
  cos_sin_of_sum(hi, tail - opaque(hi - sum), c, s);
}

/// Valid frequencies whose angles p * w_j stay finite for every position below 2^32 (and their
/// differences too): each w_j below 2^990, a margin below 2^992.
inline bool frequencies_ok(const frequencies& f) noexcept {
  if (f.rotary_dim < 2 || f.rotary_dim % 2 != 0 || f.rotary_dim > max_rotary_dim) return false;
  if (f.inv_freq.size() != static_cast<std::size_t>(f.rotary_dim / 2)) return false;
  for (double w : f.inv_freq)
    if (!(w >= 0.0) || !(w < 0x1p990) || !detail::finite(w)) return false;
  return f.attention_factor > 0.0 && detail::finite(f.attention_factor);
}

/// Keys at positions p rotated with `from` become keys at p + delta rotated with `to`.
template <std::size_t Dim, layout L, class TIn, class TOut, class Pos>
void rerotate_rows(const frequencies& from, const frequencies& to, const job<TIn, TOut, Pos>& jb,
                   std::int64_t delta, bool backwards) noexcept {
  const std::size_t d = static_cast<std::size_t>(to.rotary_dim);
  const std::size_t P = d / 2;
  const std::size_t m = L == layout::interleaved ? d : P;
  constexpr std::size_t cap = Dim ? Dim : static_cast<std::size_t>(max_rotary_dim);
  alignas(64) double row[2 * cap];
  alignas(64) double x[cap];
  const double ratio = to.attention_factor / from.attention_factor;
  using load_in = storage_traits<TIn>;
  using store_out = storage_traits<TOut>;
  using R = compute_type_t<TOut>;
  for (std::size_t step = 0; step < jb.n_tokens; ++step) {
    const std::size_t t = backwards ? jb.n_tokens - 1 - step : step;
    const std::int64_t p = static_cast<std::int64_t>(jb.positions[t]);
    const double pa = static_cast<double>(p), pb = static_cast<double>(p + delta);
    for (std::size_t j = 0; j < P; ++j) {
      double c, s;
      cos_sin_of_difference(pb, to.inv_freq[j], pa, from.inv_freq[j], c, s);
      c *= ratio;
      s *= ratio;
      if constexpr (L == layout::interleaved) {
        row[2 * j] = row[2 * j + 1] = c;
        row[m + 2 * j] = -s;
        row[m + 2 * j + 1] = s;
      } else {
        row[j] = c;
        row[m + j] = s;
      }
    }
    for (std::size_t h = 0; h < jb.n_heads; ++h) {
      const TIn* in = jb.in + t * jb.in_token_stride + h * jb.in_head_stride;
      TOut* out = jb.out + t * jb.out_token_stride + h * jb.out_head_stride;
      // The keys are widened to double, rotated in double by the scalar kernel and rounded
      // once: the re-rotation adds about half an ulp to the error the keys already carry.
      for (std::size_t i = 0; i < d; ++i) x[i] = static_cast<double>(load_in::load(in[i]));
      arch::scalar::rotate_row<Dim, L, false>(x, x, row, row + m, d);
      for (std::size_t i = 0; i < d; ++i) out[i] = store_out::store(static_cast<R>(x[i]));
      if (jb.copy_tail) copy_tail(in, out, d, jb.head_dim);
    }
  }
}

/// True when out is in's rows moved by a whole number k != 0 of tokens within one buffer (the
/// same type, shape and strides; out.data = in.data - k token strides) and the rows of the two
/// views keep to their own heads: whole tokens apart ([T, H, D]), or each head's rows of both
/// views within one head stride ([H, T, D]). Then out's row (t, h) is in's row (t - k, h) or
/// no row of in, so visiting the tokens upwards (k > 0: the rows move down, as when a cache
/// drops tokens) or downwards (k < 0, `backwards`) reads every row before it is overwritten.
template <class TIn, class TOut>
bool shifted_within(const heads_view<TIn>& in, const heads_view<TOut>& out,
                    bool& backwards) noexcept {
  if (!std::is_same<std::remove_const_t<TIn>, std::remove_const_t<TOut>>::value) return false;
  if (in.n_tokens < 2 || in.n_tokens != out.n_tokens || in.n_heads != out.n_heads ||
      in.head_dim != out.head_dim || in.token_stride != out.token_stride ||
      (in.n_heads > 1 && in.head_stride != out.head_stride))
    return false;
  const auto ts = static_cast<std::intptr_t>(in.token_stride) *
                  static_cast<std::intptr_t>(sizeof(TIn));  // > 0: >= head_dim (check_view)
  const std::intptr_t bytes = reinterpret_cast<std::intptr_t>(static_cast<const void*>(in.data)) -
                              reinterpret_cast<std::intptr_t>(static_cast<const void*>(out.data));
  if (ts <= 0 || bytes % ts != 0 || bytes == 0) return false;
  const std::ptrdiff_t k = static_cast<std::ptrdiff_t>(bytes / ts);
  const std::ptrdiff_t span = in.n_tokens - 1 + (k > 0 ? k : -k);  // tokens of one head, both views
  const bool token_major = in.token_stride >= (in.n_heads - 1) * in.head_stride + in.head_dim;
  const bool heads_apart =
      in.n_heads == 1 || (product_fits(span, in.token_stride, PTRDIFF_MAX - in.head_dim) &&
                          in.head_stride >= span * in.token_stride + in.head_dim);
  if (!token_major && !heads_apart) return false;
  backwards = k < 0;
  return true;
}

template <std::size_t Dim, class T, class TOut, class Pos>
status rerotate_checked(const frequencies& from, const frequencies& to, layout l,
                        const heads_view<const T>& in, const heads_view<TOut>& out,
                        const Pos* positions, std::int64_t delta) noexcept {
  static_assert(Dim % 2 == 0 && Dim <= static_cast<std::size_t>(max_rotary_dim),
                "Dim (the rotary dim) must be even and <= rope::max_rotary_dim");
  if (l != layout::interleaved && l != layout::half_split) return status::bad_option;
  if (!frequencies_ok(from) || !frequencies_ok(to) || from.rotary_dim != to.rotary_dim ||
      !detail::finite(to.attention_factor / from.attention_factor))
    return status::bad_dimension;
  if (Dim != 0 && static_cast<std::size_t>(to.rotary_dim) != Dim) return status::bad_dimension;
  // Out of place within one cache (keys moved by whole tokens) is accepted where the order of
  // the rows makes it safe (shifted_within); other overlaps stay refused.
  bool backwards = false;
  if (status st = check_pair(in, out, to.rotary_dim);
      st != status::ok && !(st == status::overlapping_buffers && shifted_within(in, out, backwards)))
    return st;
  if (empty(in)) return status::ok;
  if (positions == nullptr) return status::null_pointer;
  if (delta <= -max_table_length || delta >= max_table_length) return status::position_out_of_range;
  for (std::ptrdiff_t t = 0; t < in.n_tokens; ++t) {
    const std::int64_t p = static_cast<std::int64_t>(positions[t]);
    if (p < 0 || p >= max_table_length || p + delta < 0 || p + delta >= max_table_length)
      return status::position_out_of_range;
  }
  if (positions_overlap(out, positions, in.n_tokens)) return status::overlapping_buffers;
  const auto jb = make_job(in, out, positions);
  if (l == layout::interleaved)
    rerotate_rows<Dim, layout::interleaved>(from, to, jb, delta, backwards);
  else
    rerotate_rows<Dim, layout::half_split>(from, to, jb, delta, backwards);
  return status::ok;
}

}  // namespace detail

/// Keys rotated with frequencies `from` at positions[t] become keys rotated with `to` at the
/// same positions (e.g. LongRoPE short -> long list, a new dynamic-NTK base, a new attention
/// factor), out of place or in place (out == in). The result equals rotating the original
/// keys with `to` within 4 * 2^-24 * r (float; r the pair's norm times max(1, A_to)): the
/// per-token angle q*w_to - p*w_from is formed in double-double, the magnitude is
/// A_to / A_from, and the keys are rotated in double and rounded once (fp16/bf16: through
/// float, at most 2^-14 ulp past half an ulp). Keys cached in fp16 or bf16 by rope::apply
/// (within 1 ulp) end within (1 + 2 sqrt 2) u r of the float keys rotated exactly with `to`
/// (u = 2^-11 fp16, 2^-8 bf16): the cache's own error, kept in norm, plus one rounding.
/// Dims [rotary_dim, head_dim) are untouched (copied out of place).
///
/// noexcept, no allocation. Errors (nothing written): status::bad_option for a layout outside
/// its enumeration (checked first); status::bad_dimension for invalid frequencies (a frequency
/// of 2^990 or more included: a margin below 2^992, where angles at positions up to 2^32 pass
/// double's range; and an A_to / A_from past double's range), different rotary dims,
/// Dim != rotary_dim or head_dim < rotary_dim; status::position_out_of_range for a position < 0
/// or >= 2^32; status::overlapping_buffers for positions inside the output; and the view errors
/// of rope::apply.
template <class T, std::size_t Dim = dynamic, class TOut, class Pos>
[[nodiscard]] status rerotate(const frequencies& from, const frequencies& to, layout l,
                              heads_view<const T> in, heads_view<TOut> out,
                              const Pos* positions) noexcept {
  return detail::rerotate_checked<Dim>(from, to, l, in, out, positions, 0);
}

/// In place.
template <class T, std::size_t Dim = dynamic, class Pos>
[[nodiscard]] status rerotate(const frequencies& from, const frequencies& to, layout l,
                              heads_view<T> keys, const Pos* positions) noexcept {
  return detail::rerotate_checked<Dim>(from, to, l, heads_view<const T>(keys), keys, positions, 0);
}

/// Context shift (sliding window with attention sinks, dropped tokens): keys rotated with f at
/// positions[t] become keys rotated with f at positions[t] + delta (delta may be negative; the
/// new position must be >= 0 and < 2^32, else status::position_out_of_range and nothing is
/// written). Same accuracy and contract as rerotate.
template <class T, std::size_t Dim = dynamic, class Pos>
[[nodiscard]] status shift_positions(const frequencies& f, layout l, heads_view<T> keys,
                                     const Pos* positions, std::int64_t delta) noexcept {
  return detail::rerotate_checked<Dim>(f, f, l, heads_view<const T>(keys), keys, positions, delta);
}

/// Out of place. out may also be in's rows moved by a whole number of tokens within one cache
/// (same type and strides; e.g. after dropping tokens [a, b), the keys of tokens [b, n) shifted
/// to slots [a, n - b + a) with delta = a - b, in one pass): accepted when the cache is
/// token-major ([T, H, D]: rows of a token together) or each head's rows of both views lie
/// within one head stride ([H, T, D]); the rows are visited in the order that reads each before
/// it is overwritten. Other overlaps are status::overlapping_buffers. (rerotate out of place
/// takes such views too.)
template <class T, std::size_t Dim = dynamic, class TOut, class Pos>
[[nodiscard]] status shift_positions(const frequencies& f, layout l, heads_view<const T> in,
                                     heads_view<TOut> out, const Pos* positions,
                                     std::int64_t delta) noexcept {
  return detail::rerotate_checked<Dim>(f, f, l, in, out, positions, delta);
}

ROPE_END_NAMESPACE  // rope
