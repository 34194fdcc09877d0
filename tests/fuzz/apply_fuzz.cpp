// libFuzzer target for rope's hot path (and the spec validation in front of it).
//
// Every input decodes into: a storage type, a layout, head_dim (0..1024), rotary_dim (valid or
// not), a base (valid or not), a scaling (rope::scaling's types, or ggml_rope_params of
// rope/ggml.hpp, valid or not), a table (length and mode), an entry point (apply out of place,
// apply in place, apply_qk, the single-vector forms, apply_to_slots and apply_qk_to_slots of
// rope/slots.hpp, apply_mrope and apply_qk_mrope of rope/mrope.hpp, shift_positions and
// rerotate of rope/scaling.hpp), q and k head counts, strides (packed, padded, head-major, or
// raw values including zero, negative and overlapping), an element offset, positions (int32 or
// int64: negative, huge, near 2^24, 2^31 and 2^32), a direction and 16-bit rounding
// (rope::rounding; now and then a value outside its enumeration), and payload bytes (which give
// NaN, Inf and denormals).
//
// Buffers are allocated with exactly the elements the views span (ASan flags any access past
// them), and the gaps between rows are filled too, so a write anywhere it should not be is
// seen. Every input must end in one of two ways, otherwise the target aborts:
//  - an error: the spec is refused with std::invalid_argument exactly when it is invalid, or
//    the hot path returns a status; then not one byte of any buffer has changed, and the
//    status has a cause in the input (checked independently for out-of-range positions and
//    slots, null pointers, mismatched shapes, overlapping buffers and options outside their
//    enumeration);
//  - success: the call was valid (positions in range, rows of each view disjoint, shapes
//    matching, checked independently), out of place == in place bitwise, apply_qk == two
//    apply calls bitwise, dims [rotary_dim, head_dim) untouched in place and copied bit for
//    bit out of place, nothing outside the rows written, and each finite rotated pair within
//    the accuracy bound of rope/apply.hpp against a long double rotation. With runtime
//    dispatch (the fuzz preset, the baseline build's replay) the bit-for-bit reference for a
//    tensor is computed on the scalar path, so the dispatched vector path is checked against
//    scalar on every accepted input (strides, offsets, dims, positions, types, and the
//    single-vector entry points). The slots entry points: keys into a cache view with its own
//    geometry, token (slot) count and storage type (float keys also into fp16/bf16 caches),
//    int32 or int64 slots (runs, -1, repeats, out of range), now and then the cache inside the
//    keys' buffer or the slots or positions inside the cache's (apply_qk_to_slots: the cache
//    inside q's buffer, q_out inside the cache's or k's; accepted only with no shared element,
//    refused only where the rows' ranges meet); on success each written cache
//    row is rope::apply of its token alone (scalar path) and the later token's for a repeated
//    slot, the queries rope::apply's, and every other byte (rows of unwritten slots, gaps, the
//    input) unchanged. M-RoPE: the apply and apply_qk checks, with sections (consecutive or
//    interleaved, now and then invalid) and three position streams (now and then one null or
//    inside the output's buffer), each pair's reference rope::apply at its stream's position.
//    shift_positions and rerotate: see run_shift. "Bitwise" means every rotated result's bits,
//    except that a NaN result need only be NaN (same_results); the pass-through block and
//    everything outside the rows stay byte for byte.
//
// Build: cmake --workflow --preset fuzz (Clang, -fsanitize=fuzzer,address,undefined); the
// replay driver (replay_main.cpp) runs the same function over tests/fuzz/corpus in every build.
// The checks are in apply_fuzz.hpp; fp16 and bf16 storage are instantiated in
// apply_fuzz_16bit.cpp (two translation units, which a two-core build compiles at once).
#include "apply_fuzz.hpp"

long rope_fuzz_outcomes[9] = {};

namespace rope_fuzz {

double decode_scaling_number(reader& in) {
  switch (in.u8() % 12) {
    case 0: return 0.0;
    case 1: return -1.5;
    case 2: return std::numeric_limits<double>::quiet_NaN();
    case 3: return std::numeric_limits<double>::infinity();
    case 4: return in.raw<double>();  // any bit pattern
    default: return 1.0 + static_cast<double>(in.u8() % 64) / 4.0;
  }
}

// Printed at exit.
entry_summary entry_summary_at_exit;

}  // namespace rope_fuzz

// fp16 and bf16 storage: instantiated in apply_fuzz_16bit.cpp.
extern template void rope_fuzz::run_type_index<2>(rope_fuzz::reader&, const rope::spec&,
                                                  const rope::frequencies&);
extern template void rope_fuzz::run_type_index<3>(rope_fuzz::reader&, const rope::spec&,
                                                  const rope::frequencies&);

namespace {

using namespace rope_fuzz;

template <std::size_t... I>
void dispatch(std::size_t type_index, reader& in, const rope::spec& s, const rope::frequencies& f,
              std::index_sequence<I...>) {
  ((type_index == I ? run_type_index<I>(in, s, f) : void()), ...);
}

std::int64_t decode_length(reader& in) {
  constexpr std::int64_t kLengths[] = {0, -3, 1, 512, 1024, 4096, 32768};
  return kLengths[in.u8() % (sizeof kLengths / sizeof kLengths[0])];
}

std::vector<double> decode_factor_list(reader& in, int pairs) {
  const std::uint8_t shape = in.u8() % 8;
  const int n = shape == 0 ? pairs + 1 : shape == 1 ? (pairs > 0 ? pairs - 1 : 0) : pairs;
  std::vector<double> v(static_cast<std::size_t>(n > 0 ? n : 0));
  for (auto& e : v) e = in.u8() % 32 == 0 ? decode_scaling_number(in) : 1.0 + in.u8() / 64.0;
  return v;
}

// The scaling method byte: 0-4 none, 5 ggml's parameters (decode_ggml), 6-12 linear ..
// proportional (decode_scaling).
constexpr std::uint8_t kGgmlMethod = 5;

rope::scaling decode_scaling(reader& in, int pairs, std::uint8_t type) {
  rope::scaling sc;
  if (type < 6) return sc;
  sc.type = static_cast<rope::scaling_type>(type - 5);  // linear .. proportional
  sc.factor = decode_scaling_number(in);
  sc.max_position_embeddings = decode_length(in);
  sc.original_max_position_embeddings = decode_length(in);
  if (in.u8() % 4 == 0) {
    sc.beta_fast = decode_scaling_number(in);
    sc.beta_slow = decode_scaling_number(in);
  }
  sc.truncate = in.u8() % 2 == 0;
  if (in.u8() % 4 == 0) {
    sc.mscale = decode_scaling_number(in);
    sc.mscale_all_dim = decode_scaling_number(in);
  }
  if (in.u8() % 4 == 0) sc.attention_factor = decode_scaling_number(in);
  sc.low_freq_factor = in.u8() % 4 == 0 ? decode_scaling_number(in) : 1.0;
  sc.high_freq_factor = in.u8() % 4 == 0 ? decode_scaling_number(in) : 4.0;
  if (sc.type == rope::scaling_type::longrope) {
    sc.short_factor = decode_factor_list(in, pairs);
    sc.long_factor = decode_factor_list(in, pairs);
  }
  if (sc.type == rope::scaling_type::proportional)  // -1 .. pairs + 1
    sc.rotated_pairs = static_cast<int>(in.u8() % static_cast<unsigned>(pairs + 3)) - 1;
  return sc;
}

// ggml_rope_ext's parameters (rope/ggml.hpp): n_dims the spec's rotary dim most of the time,
// else odd, 0, past max_rotary_dim or another even dim; llama.cpp's usual values (ext_factor 0
// or 1, betas 32 and 1) most of the time, else the scaling numbers above, ext_factor outside
// [0, 1] and betas outside float32's normal range; now and then a freq_factors list (of the
// wrong length too).
rope::ggml_rope_params decode_ggml(reader& in, const rope::spec& s) {
  rope::ggml_rope_params p;
  switch (in.u8() % 8) {
    case 5:
      p.n_dims = s.rotary_dim + 1;
      break;
    case 6:  // 0, or 2 .. 1536
      p.n_dims = 2 * (in.u8() % 4 == 0 ? 0 : 1 + in.u8() * 3);
      break;
    case 7:
      p.n_dims = std::max(2, s.rotary_dim - 2);
      break;
    default:
      p.n_dims = s.rotary_dim;
  }
  p.freq_base = in.u8() % 4 == 0 ? decode_scaling_number(in) : s.base;
  p.freq_scale = in.u8() % 2 == 0 ? 1.0 : 1.0 / decode_scaling_number(in);
  constexpr double kExt[] = {0.0, 1.0, 1.0, 0.5, -1.0, 1.5};
  const std::uint8_t ext = in.u8() % 8;
  p.ext_factor = ext < 6 ? kExt[ext] : ext == 6 ? in.u8() / 255.0 : decode_scaling_number(in);
  if (in.u8() % 4 == 0) p.attn_factor = 1.0 / decode_scaling_number(in);
  const std::uint8_t betas = in.u8() % 8;
  if (betas == 1) {
    p.beta_fast = decode_scaling_number(in);
    p.beta_slow = decode_scaling_number(in);
  } else if (betas == 2) {  // one end outside float32's normal range
    p.beta_fast = in.u8() % 2 ? 1e39 : 32.0;
    p.beta_slow = in.u8() % 2 ? 1e-39 : 0.5;
  } else if (betas == 3) {  // crossed, or equal
    p.beta_fast = 1.0;
    p.beta_slow = in.u8() % 2 ? 32.0 : 1.0;
  }
  p.n_ctx_orig = decode_length(in);
  if (in.u8() % 4 == 0) p.freq_factors = decode_factor_list(in, p.n_dims > 0 ? p.n_dims / 2 : 0);
  return p;
}

// ggml_rope_params the library must accept, from the contract at each field of rope/ggml.hpp,
// restated here: anything else must be refused.
bool ggml_params_valid(const rope::ggml_rope_params& p) {
  const auto positive = [](double v) { return v > 0.0 && std::isfinite(v); };
  const auto normal_float = [](double v) {
    return v >= static_cast<double>(std::numeric_limits<float>::min()) &&
           v <= static_cast<double>(std::numeric_limits<float>::max());
  };
  if (p.n_dims < 2 || p.n_dims % 2 != 0 || p.n_dims > rope::max_rotary_dim) return false;
  if (!(p.freq_base > 1.0) || !std::isfinite(p.freq_base) || !positive(p.freq_scale) ||
      !(p.ext_factor >= 0.0 && p.ext_factor <= 1.0) || !positive(p.attn_factor))
    return false;
  if (p.ext_factor != 0.0) {
    if (!positive(p.beta_fast) || !positive(p.beta_slow) || p.beta_fast < p.beta_slow ||
        p.n_ctx_orig <= 0 || !normal_float(p.freq_base) || !normal_float(p.beta_fast) ||
        !normal_float(p.beta_slow))
      return false;
    // ggml's temperature 1 + 0.1 ln(1 / freq_scale) (its value is tested in scaling_test): the
    // header's own function, so that a temperature near 0 is judged on the same double.
    const double attention = p.attn_factor * rope::detail::ggml_temperature(p.freq_scale);
    if (!(attention > 0.0) || !std::isfinite(attention)) return false;
  }
  if (p.freq_factors.empty()) return true;
  if (p.freq_factors.size() != static_cast<std::size_t>(p.n_dims / 2)) return false;
  for (double v : p.freq_factors)
    if (!positive(v)) return false;
  return true;
}

#if ROPE_HAS_EXCEPTIONS  // without exceptions the target does not call ggml_frequencies
// What every accepted parameter set must give: n_dims / 2 frequencies, each between the
// interpolated theta_j / f_j * freq_scale and the extrapolated theta_j / f_j (yarn's blend of
// the two; with ext_factor 0 the first), to within an ulp; the attention factor attn_factor,
// times 1 + 0.1 ln(1 / freq_scale) with ext_factor != 0.
void check_ggml_frequencies(const rope::ggml_rope_params& p, const rope::frequencies& f) {
  using ld = long double;
  FUZZ_CHECK(
      f.rotary_dim == p.n_dims && f.inv_freq.size() == static_cast<std::size_t>(p.n_dims / 2),
      f.rotary_dim, p.n_dims);
  for (std::size_t j = 0; j < f.inv_freq.size(); ++j) {
    ld theta =
        std::pow(static_cast<ld>(p.freq_base), -static_cast<ld>(2 * j) / static_cast<ld>(p.n_dims));
    if (!p.freq_factors.empty()) theta /= static_cast<ld>(p.freq_factors[j]);
    const ld interpolated = theta * static_cast<ld>(p.freq_scale);
    const ld a = p.ext_factor == 0.0 ? interpolated : std::min(interpolated, theta);
    const ld b = p.ext_factor == 0.0 ? interpolated : std::max(interpolated, theta);
    const double w = f.inv_freq[j];
    FUZZ_CHECK(
        w >= std::nextafter(static_cast<double>(a), 0.0) &&
            w <= std::nextafter(static_cast<double>(b), std::numeric_limits<double>::infinity()),
        static_cast<long long>(j), p.n_dims);
  }
  // A, to a few roundings of the terms of 1 + 0.1 ln(1 / freq_scale) (which cancel near 0).
  const double log_term = p.ext_factor == 0.0 ? 0.0 : 0.1 * std::log(1.0 / p.freq_scale);
  const double a = p.attn_factor * (p.ext_factor == 0.0 ? 1.0 : 1.0 + log_term);
  FUZZ_CHECK(std::fabs(f.attention_factor - a) <=
                 8e-16 * p.attn_factor * (1.0 + std::fabs(log_term)) + 1e-320,
             p.n_dims, 0);
}
#endif

std::int64_t decode_seq_len(reader& in) {
  constexpr std::int64_t kSeq[] = {0, 1, 700, 1025, 5000, std::int64_t{1} << 20, -1};
  return kSeq[in.u8() % (sizeof kSeq / sizeof kSeq[0])];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  reader in{data, size};
  constexpr std::size_t n_types = std::tuple_size<storage_types>::value;
  const std::size_t type_index = in.u8() % n_types;
  const std::uint8_t layout_byte = in.u8();
  rope::spec s;
  s.layout = layout_byte % 16 == 15
                 ? static_cast<rope::layout>(layout_byte % 4)  // 0 and 3: invalid
                 : (layout_byte % 2 ? rope::layout::interleaved : rope::layout::half_split);
  s.head_dim = static_cast<int>(in.raw<std::uint16_t>() % 1025);
  s.rotary_dim = decode_rotary_dim(in, s.head_dim);
  s.base = decode_base(in);

  const bool valid = spec_is_valid(s);
#if ROPE_HAS_EXCEPTIONS
  try {
    rope::validate(s);
    FUZZ_CHECK(valid, s.head_dim, s.rotary_dim);
  } catch (const std::invalid_argument&) {
    FUZZ_CHECK(!valid, s.head_dim, s.rotary_dim);
    ++rope_fuzz_outcomes[0];
    return 0;
  }
#else
  if (!valid) {
    ++rope_fuzz_outcomes[0];
    return 0;  // would go to the error handler, which does not return
  }
#endif

  // Scaling: a method (none most of the time; rope::scaling's types, or ggml's parameters) and
  // its parameters, including 0, negative, NaN, Inf and raw values and lists of the wrong
  // length. Either std::invalid_argument naming the key ("key=value ..."), or frequencies the
  // table accepts; some inputs are invalid whatever the implementation and must be refused.
  const std::uint8_t method = in.u8() % 13;
  rope::frequencies f;
  if (method == kGgmlMethod) {
    // ggml's parameters (rope/ggml.hpp): std::invalid_argument naming the field exactly when
    // the parameters break its contract; accepted ones give frequencies within their bounds
    // (check_ggml_frequencies), which go on to the same checks as the others when n_dims is
    // the spec's rotary dim. A frequency past double's range (a factor near 0 and a huge
    // freq_scale) is for the table's check to refuse.
    const rope::ggml_rope_params p = decode_ggml(in, s);
    const bool ggml_valid = ggml_params_valid(p);
#if ROPE_HAS_EXCEPTIONS
    try {
      f = rope::ggml_frequencies(p);
      FUZZ_CHECK(ggml_valid, p.n_dims, 1);
    } catch (const std::invalid_argument& e) {
      FUZZ_CHECK(!ggml_valid && std::strchr(e.what(), '=') != nullptr, p.n_dims, 2);
      ++rope_fuzz_outcomes[0];
      return 0;
    }
    check_ggml_frequencies(p, f);
    try {
      rope::detail::check_frequencies(f);
    } catch (const std::invalid_argument& e) {
      FUZZ_CHECK(std::strstr(e.what(), "inv_freq[") != nullptr, p.n_dims, 3);
      ++rope_fuzz_outcomes[0];
      return 0;
    }
    if (p.n_dims != s.rotary_dim) return 0;  // no spec of this input to apply them to
#else
    (void)ggml_valid;
    return 0;  // errors would reach the handler
#endif
  } else {
    const rope::scaling sc = decode_scaling(in, s.rotary_dim / 2, method);
    const std::int64_t seq_len = decode_seq_len(in);
#if ROPE_HAS_EXCEPTIONS
    try {
      f = rope::compute_frequencies(s, sc, seq_len).frequencies;
      rope::detail::check_frequencies(f);  // what the table build checks, as a clear error
    } catch (const std::invalid_argument& e) {
      FUZZ_CHECK(std::strchr(e.what(), '=') != nullptr, static_cast<long long>(sc.type), 0);
      ++rope_fuzz_outcomes[0];
      return 0;
    }
    FUZZ_CHECK(sc.type == rope::scaling_type::none || (sc.factor > 0 && std::isfinite(sc.factor)),
               static_cast<long long>(sc.type), 1);
    FUZZ_CHECK(sc.type != rope::scaling_type::longrope ||
                   (sc.short_factor.size() == static_cast<std::size_t>(s.rotary_dim / 2) &&
                    sc.long_factor.size() == static_cast<std::size_t>(s.rotary_dim / 2)),
               static_cast<long long>(sc.type), 2);
    FUZZ_CHECK(sc.type != rope::scaling_type::llama3 || sc.low_freq_factor <= sc.high_freq_factor,
               static_cast<long long>(sc.type), 3);
    FUZZ_CHECK(sc.type != rope::scaling_type::proportional ||
                   (sc.rotated_pairs >= 1 && sc.rotated_pairs <= s.rotary_dim / 2),
               static_cast<long long>(sc.type), 4);
#else
    (void)seq_len;
    if (sc.type != rope::scaling_type::none) return 0;  // errors would reach the handler
    f = rope::default_frequencies(s);
#endif
  }

  dispatch(type_index, in, s, f, std::make_index_sequence<n_types>{});
  return 0;
}
