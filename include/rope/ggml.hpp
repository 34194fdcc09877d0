// rope/ggml.hpp: the frequencies of ggml's rope operator (llama.cpp) from its parameters, for
// engines that load GGUF checkpoints and take their RoPE settings from the GGUF metadata and
// llama.cpp's context parameters (shared/rope-formulas.md section 11).
//
//   rope::ggml_rope_params p;
//   p.n_dims = 128;                 // rope.dimension_count
//   p.freq_base = 1e6;              // rope.freq_base
//   p.freq_scale = 1.0 / 4;         // 1 / rope.scaling.factor
//   p.ext_factor = 1;               // yarn (llama.cpp's default for rope.scaling.type yarn)
//   p.n_ctx_orig = 32768;           // rope.scaling.original_context_length
//   const rope::frequencies f = rope::ggml_frequencies(p);                      // cold path
//   auto tab = rope::table_cache::global().get<float>(f, rope::layout::half_split, n_ctx);
//
// ggml rotates pair j (its element i0 = 2j) at position p by the angle
//   theta_e = p * theta_j / f_j                      (f_j: freq_factors, else 1)
//   theta_i = freq_scale * theta_e
//   theta   = theta_i * (1 - m_j) + theta_e * m_j,   m_j = ext_factor * (1 - r_j)
//   r_j     = clamp((j - lo) / max(0.001, hi - lo), 0, 1)
//   lo, hi  = max(0, floor(c(beta_fast))), min(n_dims - 1, ceil(c(beta_slow))),
//   c(b)    = n_dims * ln(n_ctx_orig / (2 pi b)) / (2 ln freq_base)
// and multiplies cos and sin by attn_factor, and by 1 + 0.1 ln(1 / freq_scale) too when
// ext_factor != 0. theta is p times a frequency, so the result is the table of
//   w_j = (theta_j / f_j) * (freq_scale * (1 - m_j) + m_j),   A = attn_factor [* (1 + ...)],
// and rope::apply runs it as any other table. Where ggml's results differ from these numbers:
//  - ggml forms theta_j = freq_base^(-2j/n_dims) by repeated multiplication in float32 and
//    every angle in float32 (about 0.06 rad off at p = 1e6); here w_j is the formula's value
//    rounded once to double (long double arithmetic, as rope::compute_frequencies), the angle
//    p * w_j exact in the table. The same choice as for HF's float32 code (README "Accuracy
//    contract").
//  - lo and hi are evaluated as ggml evaluates them, in float32 (logf), so that a c(b) within
//    float's rounding of an integer floors and ceils to ggml's integers.
// The differences from HF's YaRN (compute_frequencies, scaling_type::yarn) are ggml's, kept: the
// temperature 1 + 0.1 ln(1 / freq_scale) is multiplied by attn_factor, not replaced by it, and
// has no s <= 1 clamp; max(0.001, hi - lo) instead of HF's hi + 0.001 where hi == lo (the same
// ramp there) and instead of a negative denominator where hi < lo (r_j then 0 for j <= lo and 1
// above: every pair extrapolated, m_j = ext_factor, when lo is past the last pair; pair 0 alone
// when hi < 0 = lo). With ext_factor = 1, attn_factor = 1 and no factors, freq_scale = 1/s
// gives HF's yarn(s) frequencies (with truncate: ggml always floors and ceils the ramp's ends,
// so gpt-oss's truncate false is not llama.cpp's) and attention factor; with ext_factor = 0,
// linear(s); Llama 3.1's band factors (as llama.cpp's converter forms them, in double) and a
// LongRoPE list as freq_factors give HF's llama3 and longrope frequencies (tests/scaling_test.cpp,
// Ggml.*).
//
// Stricter than ggml, which computes whatever it is given: ext_factor outside [0, 1] (llama.cpp's
// context parameter -1 means "1 for yarn, else 0": resolve it first) and, with ext_factor != 0,
// beta_fast < beta_slow (the ramp would run backwards, as refused for HF's yarn), a temperature
// that is not positive (freq_scale >= e^10) or that times attn_factor rounds to 0 or overflows,
// and a freq_base or beta that is not a normal float32 value (the ramp's ends are formed in
// float32) are errors.
//
// Layout: ggml's mode 0 (LLAMA_ROPE_TYPE_NORM: GGUF Llama and others converted from HF with the
// q/k permutation; DeepSeek-2, Command R, ChatGLM / GLM-4 and ERNIE-4.5 are interleaved in HF
// already) is rope::layout::interleaved; mode 2 (NEOX: Qwen, Phi, Gemma, GPT-NeoX, ...)
// is rope::layout::half_split; the M-RoPE modes 8 and 40 (Qwen2-VL's sections, Qwen3-VL's
// interleaved ones) go through rope::apply_mrope with half_split (in mode 40 ggml turns the pairs
// no section reaches, Qwen3-VL's 61 and 62, by a fourth position: llama.cpp gives text tokens
// their one position in all four, as HF and apply_mrope turn them, and image embeddings 0
// there, where HF and apply_mrope take the temporal one). The vision mode (24) pairs x[i] with
// x[i + n_dims] and restarts the frequencies per section: not this.
//
// The parameters are the values handed to ggml_rope_ext, which llama.cpp derives from the GGUF
// keys and its context parameters: attn_factor in particular is not a GGUF key's value as is
// (llama.cpp combines rope.scaling.attn_factor and, for DeepSeek-style YaRN, the mscale keys
// with ggml's built-in temperature, differently in different versions; since its PR #17945
// YaRN contexts pass HF's attention factor / (1 + 0.1 ln s): README, "GGUF checkpoints"):
// pass what the llama.cpp you match passes. beta_fast / beta_slow: the GGUF keys
// rope.scaling.yarn_beta_fast / yarn_beta_slow where present, else 32 / 1. ggml takes them as
// float32: to match its angles, give the float values (a double 1/3 for freq_scale is about
// 1e-8 relative off float's, an angle off by that much).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rope/config.hpp"
#include "rope/scaling.hpp"
#include "rope/spec.hpp"

ROPE_BEGIN_NAMESPACE

/// ggml_rope_ext's parameters (llama.cpp's names); ggml_frequencies turns them into a table's
/// frequencies.
struct ggml_rope_params {
  /// Rotated dims (GGUF rope.dimension_count; the head's dims past it are copied). Even, in
  /// [2, max_rotary_dim].
  int n_dims = 0;
  /// GGUF rope.freq_base. Finite and > 1.
  double freq_base = 10000.0;
  /// 1 / rope.scaling.factor for linear and yarn scaling, else 1. Finite and > 0.
  double freq_scale = 1.0;
  /// The extrapolation weight of yarn's ramp: 1 for yarn, 0 otherwise (llama.cpp's defaults).
  /// In [0, 1].
  double ext_factor = 0.0;
  /// Multiplies cos and sin (with ext_factor != 0, ggml's temperature too). Finite and > 0. For
  /// HF's YaRN attention factor A with ext_factor 1, attn_factor = A / (1 + 0.1 ln(1/freq_scale)).
  double attn_factor = 1.0;
  /// Rotation counts of the ramp's ends (llama.cpp's yarn_beta_fast / yarn_beta_slow); read
  /// when ext_factor != 0. beta_fast >= beta_slow > 0.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  /// The training context of the ramp (GGUF rope.scaling.original_context_length, else the
  /// model's context length); read when ext_factor != 0. Positive.
  std::int64_t n_ctx_orig = 0;
  /// Per-pair divisors of theta_j, n_dims / 2 entries, each finite and > 0; empty for none: the
  /// rope_freqs.weight tensor (Llama 3.1's bands, written by llama.cpp's converter in float32),
  /// or rope_factors_long.weight / rope_factors_short.weight (Phi-3's LongRoPE lists; llama.cpp
  /// takes the long one when the context per sequence exceeds n_ctx_orig, where HF chooses by the
  /// sequence length: rope::compute_frequencies). Exactly n_dims / 2: a longer list, which ggml
  /// accepts and reads only the start of, is refused here (pass its first n_dims / 2 entries).
  std::vector<double> freq_factors;
};

namespace detail {

/// ggml_rope_yarn_corr_dim in float32, as ggml evaluates it.
inline float ggml_corr_dim(int n_dims, std::int64_t n_ctx_orig, double beta, double base) {
  const float pi = 3.14159265358979323846f;
  return static_cast<float>(n_dims) *
         std::log(static_cast<float>(n_ctx_orig) / (static_cast<float>(beta) * 2 * pi)) /
         (2 * std::log(static_cast<float>(base)));
}

/// ggml's YaRN temperature, 1 + 0.1 ln(1 / freq_scale) (validate checks it, ggml_frequencies
/// multiplies attn_factor by it).
inline double ggml_temperature(double freq_scale) {
  return 1.0 + 0.1 * std::log(1.0 / freq_scale);
}

}  // namespace detail

/// Throws std::invalid_argument naming the first bad field of p (the checks at each field).
inline void validate(const ggml_rope_params& p) {
  const char* type = "ggml";
  if (p.n_dims < 2 || p.n_dims % 2 != 0 || p.n_dims > max_rotary_dim)
    detail::scaling_error("n_dims", std::to_string(p.n_dims),
                          "must be even and in [2, " + std::to_string(max_rotary_dim) + "] (ggml)");
  if (!(p.freq_base > 1.0) || !detail::finite(p.freq_base))
    detail::scaling_error("freq_base", detail::format_double(p.freq_base),
                          "must be finite and greater than 1 (ggml)");
  detail::check_positive("freq_scale", p.freq_scale, type);
  if (!(p.ext_factor >= 0.0 && p.ext_factor <= 1.0) || !detail::finite(p.ext_factor))
    detail::scaling_error("ext_factor", detail::format_double(p.ext_factor),
                          "must be in [0, 1] (ggml; llama.cpp's -1 means 1 for yarn, else 0)");
  detail::check_positive("attn_factor", p.attn_factor, type);
  if (p.ext_factor != 0.0) {
    detail::check_positive("beta_fast", p.beta_fast, type);
    detail::check_positive("beta_slow", p.beta_slow, type);
    if (p.beta_fast < p.beta_slow)
      detail::scaling_error("beta_fast", detail::format_double(p.beta_fast),
                            "must be >= beta_slow=" + detail::format_double(p.beta_slow) +
                                " (ggml): the ramp would run backwards");
    detail::check_positive_int("n_ctx_orig", p.n_ctx_orig, type);
    // The ramp's ends are evaluated in float32, as ggml does: its parameters must be floats.
    const auto check_float = [](const char* key, double v) {
      if (v < static_cast<double>(std::numeric_limits<float>::min()) ||
          v > static_cast<double>(std::numeric_limits<float>::max()))
        detail::scaling_error(key, detail::format_double(v),
                              "must be a normal float32 value (ggml's parameters are float32)");
    };
    check_float("freq_base", p.freq_base);
    check_float("beta_fast", p.beta_fast);
    check_float("beta_slow", p.beta_slow);
    const double t = detail::ggml_temperature(p.freq_scale);
    // attn_factor > 0 here: a <= 0 when t <= 0, and 0 when t is tiny and attn_factor subnormal.
    const double a = p.attn_factor * t;
    if (!(a > 0.0) || !detail::finite(a))
      detail::scaling_error(
          "freq_scale", detail::format_double(p.freq_scale),
          "gives the temperature 1 + 0.1 ln(1 / freq_scale) = " + detail::format_double(t) +
              ", which (times attn_factor) must be finite and > 0 (ggml)");
  }
  if (!p.freq_factors.empty())
    detail::check_factor_list("freq_factors", p.freq_factors,
                              static_cast<std::size_t>(p.n_dims / 2), "n_dims", type);
}

/// The frequencies and attention factor of ggml's rope with parameters p (formulas in the file
/// comment), for rope::table::build or rope::table_cache::get. Validates p
/// (std::invalid_argument naming the field). The identity covers every parameter, so the
/// cache shares a table only between equal parameter sets.
inline frequencies ggml_frequencies(const ggml_rope_params& p) {
  validate(p);
  using ld = long double;
  const std::size_t pairs = static_cast<std::size_t>(p.n_dims / 2);
  frequencies f;
  f.rotary_dim = p.n_dims;
  f.inv_freq.resize(pairs);
  const bool yarn = p.ext_factor != 0.0;
  ld lo = 0, hi = 0;
  if (yarn) {
    lo = std::max(static_cast<ld>(0), static_cast<ld>(std::floor(detail::ggml_corr_dim(
                                          p.n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base))));
    hi = std::min(static_cast<ld>(p.n_dims - 1),
                  static_cast<ld>(std::ceil(
                      detail::ggml_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base))));
  }
  const ld fs = static_cast<ld>(p.freq_scale);
  for (std::size_t j = 0; j < pairs; ++j) {
    ld theta = detail::default_inv_freq_ld(p.freq_base, j, p.n_dims);
    if (!p.freq_factors.empty()) theta /= static_cast<ld>(p.freq_factors[j]);
    ld m = 0;
    if (yarn) {
      const ld r = std::min(
          std::max((static_cast<ld>(j) - lo) / std::max(0.001L, hi - lo), static_cast<ld>(0)),
          static_cast<ld>(1));
      m = static_cast<ld>(p.ext_factor) * (1 - r);
    }
    f.inv_freq[j] = static_cast<double>(theta * (fs * (1 - m) + m));
  }
  f.attention_factor =
      yarn ? p.attn_factor * detail::ggml_temperature(p.freq_scale) : p.attn_factor;
  f.identity = {64.0 /* method: ggml */,
                p.freq_base,
                p.freq_scale,
                p.ext_factor,
                p.attn_factor,
                p.beta_fast,
                p.beta_slow,
                static_cast<double>(p.n_ctx_orig),
                static_cast<double>(p.freq_factors.size())};
  f.identity.insert(f.identity.end(), p.freq_factors.begin(), p.freq_factors.end());
  f.description = "ggml:base=" + detail::format_double(p.freq_base) +
                  ",freq_scale=" + detail::format_double(p.freq_scale) +
                  ",ext_factor=" + detail::format_double(p.ext_factor);
  if (yarn)
    f.description += ",ramp=[" + detail::format_double(static_cast<double>(lo)) + "," +
                     detail::format_double(static_cast<double>(hi)) + "]";
  if (!p.freq_factors.empty()) f.description += ",freq_factors";
  return f;
}

ROPE_END_NAMESPACE  // rope
