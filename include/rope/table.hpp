// rope/table.hpp: cos/sin tables and the shared table cache (the cold path).
//
//   auto tab = rope::get_table<float>(spec, /*positions=*/4096);   // cached, shared, immutable
//   rope::apply<float, 128>(*tab, position, q);
//
// Accuracy contract. For every position p and pair j the angle p * w_j is formed exactly as a
// double-double (p * w_j = hi + lo via fma). Float tables (float and 16-bit storage): cos and
// sin are evaluated in double and corrected by lo, multiplied by the attention factor A in
// double, and rounded once to float, so an entry is within 2^-24 * A of A*cos(p*w_j) for every
// p below the table length, whatever the position: a float32 angle, as HF and ggml form it, is
// off by ~0.06 rad at p = 1e6. Double tables: cos and sin are carried as double-doubles
// evaluated in long double (form_row_double), so an entry is A*cos(p*w_j) rounded once to
// double, give or take 2^-58 * A: within half an ulp (for A >= 2^-1015; below it entries near
// the subnormal range can be one subnormal ulp off). Double cos/sin alone would put entries up
// to 1.8 ulp(A) off (2.7 compact), and a round trip (which multiplies by c^2 + s^2) past
// testing.md's 6u r. Where long double is no wider than double (MSVC, Apple arm64) they are
// what double tables get.
//
// Low parts (float tables). Next to each float entry hi the table keeps lo = (A*cos - hi)
// rounded to float, so hi + lo carries the value to about 2^-48 * A. Kernels that round their
// float result once more into a 16-bit type use them (rope/arch/scalar.hpp, "16-bit outputs"):
// a float entry alone is off by up to 2^-25 * A, and where a result cancels to far below its
// pair's norm that error is many 16-bit ulps of the result. Dense float tables therefore take
// twice the bytes of their rows (counted in bytes() and in the dense-or-compact choice);
// compact tables form the low parts with the row when a kernel asks for them.
//
// Two storage modes:
//  - dense: one row per position, ready to use (fastest; 2*rotary_dim*sizeof(Real) bytes per
//    position for interleaved, half that for half_split).
//  - compact: two small double tables, coarse angles h*B*w_j and fine angles l*w_j for
//    p = h*B + l with B = 2^k ~ sqrt(length). The hot path forms the row by the angle-addition
//    identity in double (two fused multiply-adds per value; double tables: in double-double)
//    and rounds it once, so the entries meet the same bound. Memory is about
//    16 * rotary_dim/2 * 2*sqrt(length) bytes (twice that for double tables, whose halves keep
//    low parts): 2 MiB for rotary_dim 128 and 2^20 positions (a dense float interleaved table
//    would take 1 GiB).
//  - automatic (default) picks dense while the dense table fits in ROPE_DENSE_TABLE_MAX_BYTES
//    and compact beyond.
//
// Thread safety. A table is immutable after it is built and shared through
// std::shared_ptr<const table>. The cache is safe to use from any number of threads; a key is
// built once, and a request for more positions builds a longer table that replaces the cached
// one without touching the old one, which stays valid for as long as someone holds it.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "rope/config.hpp"
#include "rope/fwd.hpp"
#include "rope/isa.hpp"
#include "rope/spec.hpp"

/// Largest dense table (bytes) that table_mode::automatic builds; beyond it a compact table is
/// built. Define before including rope to change it.
#ifndef ROPE_DENSE_TABLE_MAX_BYTES
#define ROPE_DENSE_TABLE_MAX_BYTES (std::size_t{32} << 20)
#endif

/// Bytes of tables a table_cache keeps before it drops the least recently requested ones (the
/// last table built is always kept); table_cache::set_max_bytes changes it per cache. Define
/// before including rope to change the default.
#ifndef ROPE_TABLE_CACHE_MAX_BYTES
#define ROPE_TABLE_CACHE_MAX_BYTES (std::size_t{256} << 20)
#endif

ROPE_BEGIN_NAMESPACE

/// How a table stores its rows (see the file comment).
enum class table_mode : unsigned char { automatic = 0, dense = 1, compact = 2 };

/// Positions a table can cover: [0, max_table_length).
inline constexpr std::int64_t max_table_length = std::int64_t{1} << 32;

/// Largest dense table an explicit table_mode::dense request may build.
inline constexpr std::size_t max_dense_table_bytes = std::size_t{1} << 30;

namespace detail {

struct aligned_free {
  void operator()(void* p) const noexcept { ::operator delete(p, std::align_val_t{64}); }
};

template <class Real>
std::unique_ptr<Real[], aligned_free> aligned_array(std::size_t n) {
  void* p = ::operator new(n * sizeof(Real), std::align_val_t{64});
  std::memset(p, 0, n * sizeof(Real));
  return std::unique_ptr<Real[], aligned_free>(static_cast<Real*>(p));
}

/// cos and sin of the double-double angle hi + lo (|lo| <= ulp(hi)/2). While |lo| < 2^-26
/// the first-order correction is exact to double precision (the dropped lo^2/2 is below
/// 2^-53); beyond that (angles of about 2^27 rad and more, which only absurd frequencies or
/// positions reach) lo is no longer small, and the full angle-addition formula is used.
/// Explicit fma everywhere keeps the result identical whatever the compiler's contraction
/// setting.
inline void cos_sin_of_sum(double hi, double lo, double& c, double& s) noexcept {
  const double ch = std::cos(hi);
  const double sh = std::sin(hi);
  if (std::fabs(lo) < 0x1p-26) {
    c = std::fma(-sh, lo, ch);
    s = std::fma(ch, lo, sh);
    return;
  }
  const double cl = std::cos(lo);
  const double sl = std::sin(lo);
  c = std::fma(ch, cl, -(sh * sl));
  s = std::fma(sh, cl, ch * sl);
}

/// cos and sin of the exact product p*w: the product is split into hi + lo (exact, by fma).
/// (opaque: under -ffast-math Clang folds fma(p, w, -(p * w)) to 0.)
inline void cos_sin_of_product(double p, double w, double& c, double& s) noexcept {
  const double hi = opaque(p * w);
  cos_sin_of_sum(hi, exact_fma(p, w, -hi), c, s);
}

/// Whether long double carries more digits than double (x86: 64, AArch64 Linux: 113; MSVC and
/// Apple arm64: 53, as double).
inline constexpr bool long_double_is_wider =
    std::numeric_limits<long double>::digits > std::numeric_limits<double>::digits;

/// cos and sin of the exact product p*w in long double (for double tables, where long double
/// is wider than double): cos and sin of the double hi of the angle (std::cos and std::sin of a
/// long double reduce it exactly) rotated by its low part lo. Under GCC's -ffast-math the
/// function is compiled without -funsafe-math-optimizations and calls cosl / sinl itself: with
/// them, GCC inlines x87 fcos / fsin, whose argument reduction is off by about 5e-12 at 4e9 rad.
#if ROPE_FAST_MATH_ && defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-unsafe-math-optimizations")))
#endif
inline void cos_sin_wide(double p, double w, long double& c, long double& s) noexcept {
  using ld = long double;
  const double hi = opaque(p * w), lo = exact_fma(p, w, -hi);
#if ROPE_FAST_MATH_ && defined(__GNUC__) && !defined(__clang__)
  const ld a = ::cosl(static_cast<ld>(hi)), b = ::sinl(static_cast<ld>(hi));
  const ld ca = ::cosl(static_cast<ld>(lo)), sa = ::sinl(static_cast<ld>(lo));
#else
  const ld a = std::cos(static_cast<ld>(hi)), b = std::sin(static_cast<ld>(hi));
  const ld ca = std::cos(static_cast<ld>(lo)), sa = std::sin(static_cast<ld>(lo));
#endif
  c = a * ca - b * sa;
  s = b * ca + a * sa;
}

/// The split of n items into 2^k blocks of about sqrt(n): k = ceil(log2(n) / 2), used for a
/// compact table's positions (p = h * 2^k + l) and for cos_sin_rows' own rows.
inline unsigned sqrt_split_bits(std::uint64_t n) noexcept {
  unsigned bits = 0;
  while ((std::uint64_t{1} << bits) < n) ++bits;
  return (bits + 1) / 2;
}

/// cos and sin of the angles (r * step) * w, r in [0, rows), as double-doubles: c[k] + cl[k]
/// and s[k] + sl[k] at k = r * stride. Where long double is wider than double (x86: 64 bits,
/// AArch64 Linux: 113) each is within a few long double ulps of exact (about 2^-61, a
/// hundredth of a double's half ulp): cos_sin_wide at r = q*K and r = m < K (K ~ sqrt(rows),
/// so 2 sqrt(rows) evaluations, which cost about 0.3 us each on x86) combined by the
/// angle-addition identity in long double. Otherwise (long double is double: MSVC, Apple arm64)
/// c and s are cos_sin_of_product's and cl = sl = 0.
inline void cos_sin_rows(double w, std::uint64_t step, std::uint64_t rows, std::size_t stride,
                         double* c, double* cl, double* s, double* sl) {
  if constexpr (long_double_is_wider) {
    using ld = long double;
    const unsigned kbits = sqrt_split_bits(rows);
    const std::uint64_t K = std::uint64_t{1} << kbits;
    const std::uint64_t Q = (rows + K - 1) >> kbits;
    std::vector<ld> mc(static_cast<std::size_t>(K)), ms(mc.size());
    std::vector<ld> qc(static_cast<std::size_t>(Q)), qs(qc.size());
    for (std::size_t m = 0; m < mc.size(); ++m)
      cos_sin_wide(static_cast<double>(m * step), w, mc[m], ms[m]);
    for (std::size_t q = 0; q < qc.size(); ++q)
      cos_sin_wide(static_cast<double>((std::uint64_t{q} << kbits) * step), w, qc[q], qs[q]);
    for (std::uint64_t r = 0; r < rows; ++r) {
      const std::size_t q = static_cast<std::size_t>(r >> kbits);
      const std::size_t m = static_cast<std::size_t>(r & (K - 1));
      const ld cv = qc[q] * mc[m] - qs[q] * ms[m];
      const ld sv = qs[q] * mc[m] + qc[q] * ms[m];
      const std::size_t k = static_cast<std::size_t>(r) * stride;
      c[k] = opaque(static_cast<double>(cv));  // opaque: -ffast-math may read double(cv) as cv
      cl[k] = static_cast<double>(cv - static_cast<ld>(c[k]));
      s[k] = opaque(static_cast<double>(sv));
      sl[k] = static_cast<double>(sv - static_cast<ld>(s[k]));
    }
  } else {
    for (std::uint64_t r = 0; r < rows; ++r) {
      const std::size_t k = static_cast<std::size_t>(r) * stride;
      cos_sin_of_product(static_cast<double>(r * step), w, c[k], s[k]);
      cl[k] = sl[k] = 0.0;
    }
  }
}

inline void check_frequencies(const frequencies& f) {
  detail::check_rotary_dim(f.rotary_dim, f.rotary_dim);
  if (f.inv_freq.size() != static_cast<std::size_t>(f.rotary_dim / 2))
    raise(error_kind::invalid_argument,
          "inv_freq has " + std::to_string(f.inv_freq.size()) + " entries, rotary_dim/2 = " +
              std::to_string(f.rotary_dim / 2) + " expected");
  for (std::size_t j = 0; j < f.inv_freq.size(); ++j)
    if (!(f.inv_freq[j] >= 0.0) || !detail::finite(f.inv_freq[j]))
      raise(error_kind::invalid_argument, "inv_freq[" + std::to_string(j) +
                                              "]=" + format_double(f.inv_freq[j]) +
                                              " must be finite and >= 0");
  if (!(f.attention_factor > 0.0) || !detail::finite(f.attention_factor))
    raise(error_kind::invalid_argument, "attention_factor=" + format_double(f.attention_factor) +
                                            " must be finite and > 0");
}

inline void check_layout(layout l);

/// Smallest attention factor a table of Real holds to its accuracy contract: entries are off by
/// at most half an ulp, which stays below 2^-24 * A (float hi), 2^-48 * A (float hi + lo) and
/// 2^-53 * A (double) only while those bounds are not below half the smallest subnormal.
template <class Real>
constexpr double min_attention_factor() noexcept {
  return std::is_same<Real, float>::value ? 0x1p-102 : 0x1p-1022;
}

/// A table of Real values for f, l, positions and mode: f valid, A within Real's range (every
/// entry of C and S is A times a cosine or sine: a float table of A > FLT_MAX would hold
/// infinities, one of A < 2^-102 subnormal low parts short of the 2^-48 * A contract), a known
/// layout and mode, a length in [1, max_table_length].
template <class Real>
inline void check_request(const frequencies& f, layout l, std::int64_t positions, table_mode mode) {
  check_frequencies(f);
  const char* real_name = sizeof(Real) == sizeof(float) ? "float" : "double";
  if (f.attention_factor > static_cast<double>(std::numeric_limits<Real>::max()))
    raise(error_kind::invalid_argument, "attention_factor=" + format_double(f.attention_factor) +
                                            " does not fit the table's " + real_name + " entries");
  if (f.attention_factor < min_attention_factor<Real>())
    raise(error_kind::invalid_argument,
          "attention_factor=" + format_double(f.attention_factor) + " is below " +
              format_double(min_attention_factor<Real>()) + ": the table's " + real_name +
              " entries would be subnormal, short of their accuracy");
  check_layout(l);
  if (mode != table_mode::automatic && mode != table_mode::dense && mode != table_mode::compact)
    raise(error_kind::invalid_argument,
          "mode=" + std::to_string(static_cast<int>(mode)) +
              " must be table_mode::automatic, dense or compact");
  if (positions < 1 || positions > max_table_length)
    raise(error_kind::out_of_range,
          "positions=" + std::to_string(positions) + " must be in [1, 2^32]");
  // Every angle p * w_j of the table (dense rows, or a compact table's coarse and fine angles,
  // none beyond (positions - 1) * w_j) must be finite: cos and sin of an infinite angle are NaN.
  // Finite frequencies can pass that only when absurdly large (a linear factor of 1e-308).
  const double last = static_cast<double>(positions - 1);
  for (std::size_t j = 0; j < f.inv_freq.size(); ++j)
    if (!detail::finite(last * f.inv_freq[j]))
      raise(error_kind::invalid_argument,
            "inv_freq[" + std::to_string(j) + "]=" + format_double(f.inv_freq[j]) +
                " times the last position " + std::to_string(positions - 1) +
                " passes double's range: the table's angles would not be finite");
}

inline void check_layout(layout l) {
  if (l != layout::interleaved && l != layout::half_split)
    raise(error_kind::invalid_argument,
          "layout=" + std::to_string(static_cast<int>(l)) +
              " must be layout::interleaved or layout::half_split (there is no default)");
}

}  // namespace detail

/// An immutable cos/sin table for one set of frequencies, one layout and positions
/// [0, length()). Real is float (for float, fp16 and bf16 storage) or double.
///
/// Row format (what row() returns): 2*m values, C[0..m) then S[0..m), with A = attention factor:
///  - half_split, m = rotary_dim/2:  C[j] = A cos(p w_j),  S[j] = A sin(p w_j);
///  - interleaved, m = rotary_dim:   C[2j] = C[2j+1] = A cos(p w_j),
///                                   S[2j] = -A sin(p w_j), S[2j+1] = A sin(p w_j).
/// The interleaved row is spread over the pair so that a vector kernel applies it to x with
/// no shuffle of the table: out = x*C + swap_pairs(x)*S.
template <class Real>
class table {
  static_assert(std::is_same<Real, float>::value || std::is_same<Real, double>::value,
                "rope::table holds float or double");

 public:
  using value_type = Real;  ///< the type of the cos/sin values in a row: float or double.

  /// Builds a table (cold path; not cached: see table_cache). Throws std::invalid_argument for
  /// bad frequencies or layout, std::out_of_range for a length outside [1, max_table_length]
  /// or a dense table larger than max_dense_table_bytes.
  static std::shared_ptr<const table> build(const frequencies& f, rope::layout l,
                                            std::int64_t positions,
                                            table_mode mode = table_mode::automatic) {
    detail::check_request<Real>(f, l, positions, mode);
    detail::note_fixed_path_request();
    std::shared_ptr<table> t(new table());
    t->freqs_ = f;
    t->layout_ = l;
    t->length_ = positions;
    t->pairs_ = static_cast<std::size_t>(f.rotary_dim / 2);
    t->width_ = l == layout::interleaved ? 2 * t->pairs_ : t->pairs_;
    const std::size_t stride = round_up(2 * t->width_, 64 / sizeof(Real));
    const double dense_bytes = static_cast<double>(stride) * sizeof(Real) *
                               static_cast<double>(positions) * (has_low_parts ? 2.0 : 1.0);
    if (mode == table_mode::automatic)
      mode = dense_bytes <= static_cast<double>(ROPE_DENSE_TABLE_MAX_BYTES) ? table_mode::dense
                                                                             : table_mode::compact;
    if (mode == table_mode::dense && dense_bytes > static_cast<double>(max_dense_table_bytes))
      detail::raise(error_kind::out_of_range,
                    "positions=" + std::to_string(positions) + " needs a dense table of " +
                        detail::format_double(dense_bytes) +
                        " bytes, more than max_dense_table_bytes; use table_mode::compact");
    t->mode_ = mode;
    if (mode == table_mode::dense) {
      t->stride_ = stride;
      t->build_dense();
    } else {
      t->build_compact();
    }
    return t;
  }

  /// The pair layout the rows are formed for.
  rope::layout layout() const noexcept { return layout_; }
  /// d: the number of rotated coordinates (2 * the number of pairs).
  int rotary_dim() const noexcept { return freqs_.rotary_dim; }
  /// Positions [0, length()) are valid.
  std::int64_t length() const noexcept { return length_; }
  /// dense or compact (automatic is resolved at build time).
  table_mode mode() const noexcept { return mode_; }
  /// A, already multiplied into every cos and sin value of the rows.
  double attention_factor() const noexcept { return freqs_.attention_factor; }
  /// w_j, j < rotary_dim()/2: the inverse frequencies the rows were formed from.
  const std::vector<double>& inv_freq() const noexcept { return freqs_.inv_freq; }
  /// Everything the table was built from (frequencies, attention factor, identity).
  const rope::frequencies& frequencies() const noexcept { return freqs_; }
  /// m: the number of C (and of S) values in a row.
  std::size_t row_width() const noexcept { return width_; }
  /// Heap bytes the table holds for its rows.
  std::size_t bytes() const noexcept { return bytes_; }

  /// The row of position p (requires 0 <= p < length(); not checked here: rope::apply checks
  /// positions before it calls this). Dense tables return a pointer into the table; compact
  /// tables form the row into `scratch` (2*row_width() values) and return it.
  ROPE_ALWAYS_INLINE const Real* row(std::int64_t p, Real* scratch) const noexcept {
    if (mode_ == table_mode::dense) return dense_.get() + static_cast<std::size_t>(p) * stride_;
    form_compact_row(static_cast<std::uint64_t>(p), scratch, nullptr);
    return scratch;
  }

  /// Float tables keep low parts (see the file comment).
  static constexpr bool has_low_parts = std::is_same<Real, float>::value;

  /// A row and its low parts: hi is what row() returns, lo the same format with lo[k] = the
  /// double value of the entry minus hi[k], rounded to float.
  struct split_row {
    const Real* hi;
    const Real* lo;
  };

  /// The row of position p with its low parts (float tables; same requirement on p as row()).
  /// Compact tables form both into `scratch` (4*row_width() values: hi, then lo).
  ROPE_ALWAYS_INLINE split_row row_with_low_parts(std::int64_t p, Real* scratch) const noexcept {
    static_assert(has_low_parts, "only float tables keep low parts");
    if (mode_ == table_mode::dense) {
      const std::size_t at = static_cast<std::size_t>(p) * stride_;
      return {dense_.get() + at, dense_low_.get() + at};
    }
    form_compact_row(static_cast<std::uint64_t>(p), scratch, scratch + 2 * width_);
    return {scratch, scratch + 2 * width_};
  }

 private:
  table() = default;

  static constexpr std::size_t round_up(std::size_t n, std::size_t k) { return (n + k - 1) / k * k; }

  // v rounded to Real, and what that rounding left out (exact in double), rounded to Real
  // (opaque: keeps -ffast-math from reading double(Real(v)) as v).
  static Real low_part(double v, Real hi) noexcept {
    return static_cast<Real>(v - static_cast<double>(detail::opaque(hi)));
  }

  // Entry j of a row (and of its low parts when lo is not null) from A*cos and A*sin.
  void put(Real* row, Real* lo, std::size_t j, double c, double s) const noexcept {
    const Real ch = static_cast<Real>(c), sh = static_cast<Real>(s);
    if (layout_ == layout::interleaved) {
      row[2 * j] = row[2 * j + 1] = ch;
      row[width_ + 2 * j] = -sh;
      row[width_ + 2 * j + 1] = sh;
      if (lo) {
        lo[2 * j] = lo[2 * j + 1] = low_part(c, ch);
        lo[width_ + 2 * j] = -low_part(s, sh);
        lo[width_ + 2 * j + 1] = low_part(s, sh);
      }
    } else {
      row[j] = ch;
      row[width_ + j] = sh;
      if (lo) {
        lo[j] = low_part(c, ch);
        lo[width_ + j] = low_part(s, sh);
      }
    }
  }

  void build_dense() {
    const std::size_t n = static_cast<std::size_t>(length_);
    dense_ = detail::aligned_array<Real>(n * stride_);
    bytes_ = n * stride_ * sizeof(Real);
    if constexpr (std::is_same<Real, double>::value && detail::long_double_is_wider) {
      // Double rows are formed like a compact table's, from double-double halves of the
      // dense table's own length (2 sqrt(n) long double evaluations per pair, not n):
      // entries within about half an ulp (see form_row_double). Where long double is double
      // the halves would be plain doubles (2.5 ulps), worse than the direct path below (1.8).
      const split sp = split_of(length_);
      const auto storage = detail::aligned_array<double>(halves_values(sp));
      const halves h = fill_halves(storage.get(), sp);
      const std::size_t mask = static_cast<std::size_t>(sp.fine_rows - 1);
      for (std::size_t p = 0; p < n; ++p)
        form_row_double(h, p >> sp.shift, p & mask, dense_.get() + p * stride_);
      return;
    }
    if (has_low_parts) {
      dense_low_ = detail::aligned_array<Real>(n * stride_);
      bytes_ *= 2;
    }
    const double a = freqs_.attention_factor;
    for (std::size_t p = 0; p < n; ++p) {
      Real* r = dense_.get() + p * stride_;
      Real* lo = has_low_parts ? dense_low_.get() + p * stride_ : nullptr;
      for (std::size_t j = 0; j < pairs_; ++j) {
        double c, s;
        detail::cos_sin_of_product(static_cast<double>(p), freqs_.inv_freq[j], c, s);
        put(r, lo, j, a * c, a * s);
      }
    }
  }

  // Positions p = h * 2^shift + l, l < fine_rows = 2^shift ~ sqrt(n), h < coarse_rows.
  struct split {
    unsigned shift;
    std::uint64_t coarse_rows, fine_rows;
  };
  static split split_of(std::int64_t n) noexcept {
    const unsigned shift = detail::sqrt_split_bits(static_cast<std::uint64_t>(n));
    const std::uint64_t fine_rows = std::uint64_t{1} << shift;
    return {shift, (static_cast<std::uint64_t>(n) + fine_rows - 1) >> shift, fine_rows};
  }

  // Where a table's coarse angles h * 2^shift * w_j and fine angles l * w_j keep cos and sin:
  // (rows x pairs) arrays of doubles; for double tables also their low parts (double-double
  // halves, evaluated in long double where it is wider: cos_sin_rows), zero for float.
  struct halves {
    const double* cc = nullptr;  // coarse cos
    const double* cs = nullptr;  // coarse sin
    const double* fc = nullptr;  // fine cos
    const double* fs = nullptr;  // fine sin
    const double* ccl = nullptr;  // low parts of the four (double tables)
    const double* csl = nullptr;
    const double* fcl = nullptr;
    const double* fsl = nullptr;
  };
  static constexpr bool halves_have_low_parts = std::is_same<Real, double>::value;

  std::size_t halves_values(const split& sp) const noexcept {
    return (halves_have_low_parts ? 4 : 2) * pairs_ *
           static_cast<std::size_t>(sp.coarse_rows + sp.fine_rows);
  }

  // Fills storage (halves_values() doubles) with [coarse cos | coarse sin | fine cos | fine sin]
  // (and, for double tables, their low parts in the same order) and says where each lies.
  halves fill_halves(double* storage, const split& sp) const {
    const unsigned shift = sp.shift;
    const std::uint64_t coarse_rows = sp.coarse_rows, fine_rows = sp.fine_rows;
    const std::size_t P = pairs_;
    const std::size_t nc = P * static_cast<std::size_t>(coarse_rows);
    const std::size_t nf = P * static_cast<std::size_t>(fine_rows);
    double* cc = storage;
    double* cs = cc + nc;
    double* fc = cs + nc;
    double* fs = fc + nf;
    halves h;
    h.cc = cc;
    h.cs = cs;
    h.fc = fc;
    h.fs = fs;
    if constexpr (halves_have_low_parts) {
      // Double tables apply A to the combined row (form_row_double), one rounding.
      double* ccl = fs + nf;
      double* csl = ccl + nc;
      double* fcl = csl + nc;
      double* fsl = fcl + nf;
      h.ccl = ccl;
      h.csl = csl;
      h.fcl = fcl;
      h.fsl = fsl;
      for (std::size_t j = 0; j < P; ++j) {
        const double w = freqs_.inv_freq[j];
        detail::cos_sin_rows(w, std::uint64_t{1} << shift, coarse_rows, P, cc + j, ccl + j,
                             cs + j, csl + j);
        detail::cos_sin_rows(w, 1, fine_rows, P, fc + j, fcl + j, fs + j, fsl + j);
      }
    } else {
      // Float tables: A rides on the coarse half (one factor per product).
      const double a = freqs_.attention_factor;
      for (std::uint64_t r = 0; r < coarse_rows; ++r)
        for (std::size_t j = 0; j < P; ++j) {
          double c, s;
          detail::cos_sin_of_product(static_cast<double>(r << shift), freqs_.inv_freq[j], c, s);
          cc[r * P + j] = a * c;
          cs[r * P + j] = a * s;
        }
      for (std::uint64_t r = 0; r < fine_rows; ++r)
        for (std::size_t j = 0; j < P; ++j) {
          double c, s;
          detail::cos_sin_of_product(static_cast<double>(r), freqs_.inv_freq[j], c, s);
          fc[r * P + j] = c;
          fs[r * P + j] = s;
        }
    }
    return h;
  }

  void build_compact() {
    const split sp = split_of(length_);
    shift_ = sp.shift;
    const std::size_t values = halves_values(sp);
    compact_ = detail::aligned_array<double>(values);
    bytes_ = values * sizeof(double);
    halves_ = fill_halves(compact_.get(), sp);
  }

  // cos(a+b) = cos a cos b - sin a sin b, sin(a+b) = sin a cos b + cos a sin b, in double with
  // explicit fma (the same bits whatever the compiler flags), rounded once to Real; the low
  // parts too when lo is not null (the same values as a dense table's).
  ROPE_NOINLINE void form_compact_row(std::uint64_t p, Real* out, Real* lo) const noexcept {
    const std::size_t h = static_cast<std::size_t>(p >> shift_);
    const std::size_t l = static_cast<std::size_t>(p & ((std::uint64_t{1} << shift_) - 1));
    if constexpr (std::is_same<Real, double>::value) {
      form_row_double(halves_, h, l, out);
      return;
    }
    const std::size_t P = pairs_;
    const double* cc = halves_.cc + h * P;
    const double* cs = halves_.cs + h * P;
    const double* fc = halves_.fc + l * P;
    const double* fs = halves_.fs + l * P;
    if (lo) {  // for 16-bit outputs: put() per pair
      for (std::size_t j = 0; j < P; ++j)
        put(out, lo, j, std::fma(cc[j], fc[j], -(cs[j] * fs[j])),
            std::fma(cs[j], fc[j], cc[j] * fs[j]));
      return;
    }
    // One loop per layout (rather than put()'s per-pair branch) so the compiler vectorizes it:
    // this is on the decode hot path, and it runs about 3x faster (benchmarks/scaling_bench).
    if (layout_ == layout::interleaved) {
      for (std::size_t j = 0; j < P; ++j) {
        const double c = std::fma(cc[j], fc[j], -(cs[j] * fs[j]));
        const double s = std::fma(cs[j], fc[j], cc[j] * fs[j]);
        out[2 * j] = out[2 * j + 1] = static_cast<Real>(c);
        out[width_ + 2 * j] = static_cast<Real>(-s);
        out[width_ + 2 * j + 1] = static_cast<Real>(s);
      }
    } else {
      Real* out_s = out + width_;
      for (std::size_t j = 0; j < P; ++j) {
        const double c = std::fma(cc[j], fc[j], -(cs[j] * fs[j]));
        const double s = std::fma(cs[j], fc[j], cc[j] * fs[j]);
        out[j] = static_cast<Real>(c);
        out_s[j] = static_cast<Real>(s);
      }
    }
  }

  // A double table's row (dense and compact): coarse row h and fine row l combined by the
  // angle-addition identity in double-double and rounded once. With halves evaluated in long
  // double (x86, AArch64 Linux) the sum before its rounding is within about 2^-61 A of exact,
  // so an entry is within half an ulp (plus that), what a round trip needs to stay within
  // testing.md's 6u r (it multiplies by c^2 + s^2). Each product of the high parts is split
  // exactly (fma), the cross terms with the low parts are added to the low part, the sum of
  // the two products is carried as hi + lo (two-sum), and A multiplies that once. (History:
  // halves in double put entries up to 1.8 ulp(A) off dense, 2.7 compact, and a round trip up
  // to 8.1u; before that, rounding cs * fs and folding A into the coarse half put some double
  // outputs with A != 1 past their (3 + |theta|) * 2^-53 r bound.) Where long double is double
  // (MSVC, Apple arm64) the low parts are zero and compact entries stay within about 2.7 ulp(A)
  // (dense rows take the direct path there: build_dense).
  void form_row_double(const halves& hv, std::size_t h, std::size_t l, Real* out) const noexcept {
    const double a = freqs_.attention_factor;
    const std::size_t P = pairs_;
    const double* cc = hv.cc + h * P;
    const double* cs = hv.cs + h * P;
    const double* fc = hv.fc + l * P;
    const double* fs = hv.fs + l * P;
    const double* ccl = hv.ccl + h * P;
    const double* csl = hv.csl + h * P;
    const double* fcl = hv.fcl + l * P;
    const double* fsl = hv.fsl + l * P;
    for (std::size_t j = 0; j < P; ++j) {
      // The four high products, each with its exact rounding error by fma (opaque: under
      // -ffast-math Clang folds fma(x, y, -(x * y)) to 0; exact_fma: see config.hpp).
      const double pcc = detail::opaque(cc[j] * fc[j]), pss = detail::opaque(cs[j] * fs[j]);
      const double psc = detail::opaque(cs[j] * fc[j]), pcs = detail::opaque(cc[j] * fs[j]);
      // (cc + ccl)(fc + fcl) - (cs + csl)(fs + fsl), dropping the products of two low parts.
      const double c_tail = std::fma(
          cc[j], fcl[j], std::fma(ccl[j], fc[j], -std::fma(cs[j], fsl[j], csl[j] * fs[j])));
      const double c = combine_exact(pcc, detail::exact_fma(cc[j], fc[j], -pcc) + c_tail, -pss,
                                     -detail::exact_fma(cs[j], fs[j], -pss), a);
      // (cs + csl)(fc + fcl) + (cc + ccl)(fs + fsl)
      const double s_tail = std::fma(
          cs[j], fcl[j], std::fma(csl[j], fc[j], std::fma(cc[j], fsl[j], ccl[j] * fs[j])));
      const double s = combine_exact(psc, detail::exact_fma(cs[j], fc[j], -psc) + s_tail, pcs,
                                     detail::exact_fma(cc[j], fs[j], -pcs), a);
      if (layout_ == layout::interleaved) {
        out[2 * j] = out[2 * j + 1] = static_cast<Real>(c);
        out[width_ + 2 * j] = static_cast<Real>(-s);
        out[width_ + 2 * j + 1] = static_cast<Real>(s);
      } else {
        out[j] = static_cast<Real>(c);
        out[width_ + j] = static_cast<Real>(s);
      }
    }
  }
  // a * (x + ex + y + ey), where x + y is formed exactly as hi + lo (Knuth's two-sum) and ex, ey
  // are the products' rounding errors (and low-part terms): rounded once at the end.
  static double combine_exact(double x, double ex, double y, double ey, double a) noexcept {
    // opaque after every step: -ffast-math's reassociation folds the two-sum's error term to
    // zero, cancels t against -t, or rewrites x - (hi - t) as (x + t) - hi, which is inexact.
    const double hi = detail::opaque(x + y);
    const double t = detail::opaque(hi - x);
    const double lo = detail::opaque(x - detail::opaque(hi - t)) + detail::opaque(y - t) + ex + ey;
    return detail::exact_fma(a, hi, a * lo);
  }

  rope::frequencies freqs_;
  rope::layout layout_{};
  table_mode mode_ = table_mode::dense;
  std::int64_t length_ = 0;
  std::size_t pairs_ = 0;
  std::size_t width_ = 0;
  std::size_t stride_ = 0;
  std::size_t bytes_ = 0;
  unsigned shift_ = 0;
  std::unique_ptr<Real[], detail::aligned_free> dense_;
  std::unique_ptr<Real[], detail::aligned_free> dense_low_;  // float tables: the low parts
  std::unique_ptr<double[], detail::aligned_free> compact_;  // the halves of a compact table
  halves halves_;
};

/// A thread-safe cache of tables keyed by everything that changes their numbers: the table
/// type, layout, mode, rotary_dim, every inverse frequency and the attention factor (bit for
/// bit), and the identity of the method that produced them (its name and every parameter).
/// get() hands out shared handles; asking for more positions than the cached table has builds
/// a longer one (at least twice as long, so a decode loop that grows by one token rebuilds
/// O(log n) times) and caches it, while handles to the shorter one stay valid.
/// Building happens under a per-key lock: other keys are not blocked, and a key is built once
/// however many threads ask for it at the same time.
/// Memory is bounded: once the cached tables take more than max_bytes() (default
/// ROPE_TABLE_CACHE_MAX_BYTES, 256 MiB), the least recently requested keys are dropped until
/// they fit again: never the table just built or requested, nor a key another get() is
/// requesting or building at that moment (while those run, the cache may hold more than the
/// bound; each get() drops what it can as it returns). A dropped table stays valid for every handle
/// held elsewhere; a later request for its key builds it again. Without the bound, a decode loop
/// past max_position_embeddings with dynamic NTK (a new base, so a new key, every token) kept
/// every table it ever asked for.
class table_cache {
 public:
  table_cache() = default;
  table_cache(const table_cache&) = delete;
  table_cache& operator=(const table_cache&) = delete;

  /// The process-wide cache used by rope::get_table.
  static table_cache& global() {
    static table_cache cache;
    return cache;
  }

  /// The cached table of Real values for frequencies f and layout l covering at least
  /// `positions` positions, built on first use (or grown: see the class comment). Validates
  /// its arguments like table::build.
  template <class Real>
  std::shared_ptr<const table<Real>> get(const frequencies& f, rope::layout l,
                                         std::int64_t positions,
                                         table_mode mode = table_mode::automatic) {
    detail::check_request<Real>(f, l, positions, mode);
    const std::shared_ptr<slot> s = find_slot(make_key(f, l, mode, sizeof(Real)));  // pinned
    const unpin_on_exit unpin{*this, s.get()};  // after the slot's lock is released
    std::lock_guard<std::mutex> lock(s->mutex);
    if (s->current && s->length >= positions)
      return std::static_pointer_cast<const table<Real>>(s->current);
    std::int64_t length = positions;
    if (s->current) {
      const std::int64_t doubled = s->length > max_table_length / 2 ? max_table_length : 2 * s->length;
      if (doubled > length) length = doubled;
    }
    std::shared_ptr<const table<Real>> t;
    try_build(t, f, l, length, positions, mode);
    builds_.fetch_add(1, std::memory_order_relaxed);
    s->current = t;
    s->length = t->length();
    account(s, t->bytes());
    return t;
  }

  /// The default (unscaled) frequencies of s. Validates s.
  template <class Real>
  std::shared_ptr<const table<Real>> get(const spec& s, std::int64_t positions,
                                         table_mode mode = table_mode::automatic) {
    return get<Real>(default_frequencies(s), s.layout, positions, mode);
  }

  /// Number of tables this cache has built (each growth counts once).
  std::uint64_t builds() const noexcept { return builds_.load(std::memory_order_relaxed); }

  /// Number of keys held.
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return slots_.size();
  }

  /// Drops every cached table (handles held elsewhere stay valid).
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& kv : slots_) kv.second->held = false;
    slots_.clear();
    bytes_ = 0;
  }

  /// Bytes of the tables the cache holds (table::bytes() summed over its keys).
  std::size_t bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }

  /// The bound on bytes() (see the class comment).
  std::size_t max_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return max_bytes_;
  }

  /// Sets the bound and drops least recently requested keys until bytes() fits it (a bound of 0
  /// drops every table now, and afterwards keeps only the one built last).
  void set_max_bytes(std::size_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    max_bytes_ = n;
    evict_locked(nullptr);
  }

  /// Number of keys dropped to keep the bound.
  std::uint64_t evictions() const noexcept { return evictions_.load(std::memory_order_relaxed); }

 private:
  struct slot {
    std::mutex mutex;  // guards current and length (held while building)
    std::shared_ptr<const void> current;
    std::int64_t length = 0;
    // Guarded by the cache's mutex_: the table's bytes as counted in bytes_ (0: no table yet),
    // the last request's tick, the get() calls in flight on it (a pinned slot is not dropped),
    // and whether the slot is still in slots_ (a dropped slot's build is not counted).
    std::size_t bytes = 0;
    std::uint64_t last_use = 0;
    std::size_t pins = 0;
    bool held = true;
  };

  struct unpin_on_exit {
    table_cache& cache;
    slot* s;
    unpin_on_exit(table_cache& c, slot* p) noexcept : cache(c), s(p) {}
    unpin_on_exit(const unpin_on_exit&) = delete;
    unpin_on_exit& operator=(const unpin_on_exit&) = delete;
    ~unpin_on_exit() { cache.unpin(s); }
  };
  using key = std::vector<std::uint64_t>;

  static std::uint64_t bits(double v) noexcept {
    std::uint64_t u;
    std::memcpy(&u, &v, sizeof u);
    return u;
  }

  static key make_key(const frequencies& f, rope::layout l, table_mode mode, std::size_t real_size) {
    key k;
    k.reserve(6 + f.inv_freq.size() + f.identity.size());
    k.push_back(real_size);
    k.push_back(static_cast<std::uint64_t>(l));
    k.push_back(static_cast<std::uint64_t>(mode));
    k.push_back(static_cast<std::uint64_t>(f.rotary_dim));
    k.push_back(bits(f.attention_factor));
    for (double w : f.inv_freq) k.push_back(bits(w));
    k.push_back(f.identity.size());
    for (double v : f.identity) k.push_back(bits(v));
    return k;
  }

  std::shared_ptr<slot> find_slot(key k) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<slot>& s = slots_[std::move(k)];
    if (!s) s = std::make_shared<slot>();
    s->last_use = ++tick_;
    ++s->pins;
    return s;
  }

  // The end of one get() on s: slots that were pinned past the bound may go now (never s, the
  // key just requested). A slot left without a table (its build threw) and with no other get()
  // in flight leaves the cache, so failed requests do not accumulate keys.
  void unpin(slot* s) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    --s->pins;
    evict_locked(s);
    if (s->pins > 0 || !s->held || s->bytes > 0) return;
    for (auto it = slots_.begin(); it != slots_.end(); ++it)
      if (it->second.get() == s) {
        s->held = false;
        slots_.erase(it);
        return;
      }
  }

  // Called with s->mutex held (lock order: a slot's mutex, then mutex_; never the reverse).
  void account(const std::shared_ptr<slot>& s, std::size_t table_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!s->held) return;  // dropped while it was being built: not the cache's any more
    bytes_ = bytes_ - s->bytes + table_bytes;
    s->bytes = table_bytes;
    evict_locked(s.get());
  }

  // Drops the least recently requested slots other than `keep` while bytes_ > max_bytes_.
  void evict_locked(const slot* keep) {
    while (bytes_ > max_bytes_) {
      auto victim = slots_.end();
      for (auto it = slots_.begin(); it != slots_.end(); ++it)
        if (it->second.get() != keep && it->second->bytes > 0 && it->second->pins == 0 &&
            (victim == slots_.end() || it->second->last_use < victim->second->last_use))
          victim = it;
      if (victim == slots_.end()) return;  // only `keep` and pinned slots hold bytes
      bytes_ -= victim->second->bytes;
      victim->second->bytes = 0;
      victim->second->held = false;
      slots_.erase(victim);
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // A doubled length may exceed what an explicit dense table allows even though the request
  // itself fits: then build exactly what was asked.
  template <class Real>
  static void try_build(std::shared_ptr<const table<Real>>& t, const frequencies& f,
                        rope::layout l, std::int64_t length, std::int64_t positions,
                        table_mode mode) {
    if (mode == table_mode::dense && length > positions) {
      const double row_bytes = (static_cast<double>(f.rotary_dim) * 2.0 * sizeof(Real) + 64.0) *
                               (table<Real>::has_low_parts ? 2.0 : 1.0);
      if (row_bytes * static_cast<double>(length) > static_cast<double>(max_dense_table_bytes))
        length = positions;
    }
    t = table<Real>::build(f, l, length, mode);
  }

  mutable std::mutex mutex_;
  std::map<key, std::shared_ptr<slot>> slots_;  // and, under mutex_, the slots' bytes/last_use/held
  std::size_t bytes_ = 0;
  std::size_t max_bytes_ = ROPE_TABLE_CACHE_MAX_BYTES;
  std::uint64_t tick_ = 0;
  std::atomic<std::uint64_t> builds_{0};
  std::atomic<std::uint64_t> evictions_{0};
};

/// A table from the process-wide cache for the default (unscaled) frequencies of s, covering
/// at least `positions` positions. Validates s (std::invalid_argument naming the field).
template <class Real>
std::shared_ptr<const table<Real>> get_table(const spec& s, std::int64_t positions,
                                             table_mode mode = table_mode::automatic) {
  return table_cache::global().get<Real>(s, positions, mode);
}

ROPE_END_NAMESPACE  // rope
