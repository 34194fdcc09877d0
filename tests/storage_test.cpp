// 16-bit storage (rope/storage.hpp): the scalar conversions over all 65536 bit patterns against
// an independent reference written with frexp/ldexp/nearbyint in double; outputs of rope::apply
// in fp16 and bf16 against the correctly rounded reference (long double oracle rounded once);
// mixed input/output types; adopting other 16-bit types through storage_traits.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <rope/rope.hpp>

#include "oracle.hpp"

namespace {

using ld = long double;

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// A binary format with `precision` significant bits, smallest exponent of a normal number
// `emin` (value 1.x * 2^emin) and largest finite value `max_finite`.
struct format16 {
  int precision, emin, exp_bits;
  double max_finite;
};
const format16 kHalf{11, -14, 5, 65504.0};
const format16 kBf16{8, -126, 8, std::ldexp(255.0 / 128.0, 127)};

// The value of bit pattern b of format f (NaN for NaN patterns), from its fields.
double decode_ref(const format16& f, std::uint16_t b) {
  const int frac_bits = f.precision - 1;
  const int sign = b >> 15;
  const int e = (b >> frac_bits) & ((1 << f.exp_bits) - 1);
  const int m = b & ((1 << frac_bits) - 1);
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  double v;
  if (e == (1 << f.exp_bits) - 1)
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  else if (e == 0)
    v = std::ldexp(static_cast<double>(m), 1 - bias - frac_bits);
  else
    v = std::ldexp(static_cast<double>(m + (1 << frac_bits)), e - bias - frac_bits);
  return sign ? -v : v;
}

// x rounded to format f, to nearest, ties to even (the current rounding mode of nearbyint),
// as a double; +-Inf beyond the largest finite value's rounding range.
double round_ref(const format16& f, double x) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  // The halfway point between max_finite and the next power of two rounds to Inf (even).
  const double limit = f.max_finite + std::ldexp(1.0, (1 - f.emin) - f.precision);  // + half ulp
  if (std::fabs(x) >= limit) return std::copysign(std::numeric_limits<double>::infinity(), x);
  int e;
  std::frexp(x, &e);  // x = m 2^e, 0.5 <= |m| < 1
  const int q = std::max(e - f.precision, f.emin - f.precision + 1);
  const double r = std::nearbyint(std::ldexp(x, -q));
  return std::copysign(std::ldexp(r, q), x);
}

TEST(Fp16Conversion, LoadAllBitPatternsExact) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint16_t h = static_cast<std::uint16_t>(b);
    const float got = rope::fp16_to_float(h);
    const double want = decode_ref(kHalf, h);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
      ASSERT_NE(bits_of(got) & 0x400000u, 0u) << "NaN not quiet: " << std::hex << b;
      ASSERT_EQ(bits_of(got) >> 31, b >> 15) << "NaN sign: " << std::hex << b;
      ASSERT_EQ((bits_of(got) >> 13) & 0x1ffu, b & 0x1ffu) << "NaN payload: " << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << b;
      ASSERT_EQ(std::signbit(got), (b >> 15) != 0) << std::hex << b;
    }
  }
}

TEST(Bf16Conversion, LoadAllBitPatternsExact) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint16_t h = static_cast<std::uint16_t>(b);
    const float got = rope::bf16_to_float(h);
    const double want = decode_ref(kBf16, h);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
      ASSERT_EQ(bits_of(got), b << 16) << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << b;
      ASSERT_EQ(std::signbit(got), (b >> 15) != 0) << std::hex << b;
    }
  }
}

// For every finite pattern h: h itself round trips; the midpoint to the next pattern up in
// magnitude rounds to the even one; one float ulp either side of the midpoint rounds to the
// nearer one; all agree with round_ref.
template <class ToBits, class FromBits>
void check_store_exhaustive(const format16& f, ToBits to_bits, FromBits from_bits) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  int checked = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint16_t h = static_cast<std::uint16_t>(b);
    const double v = decode_ref(f, h);
    if (std::isnan(v) || std::isinf(v)) continue;
    ASSERT_EQ(to_bits(static_cast<float>(v)), h) << "round trip " << std::hex << b;
    // Next pattern away from zero (for the largest finite one, the power of two above it).
    const std::uint32_t max_pattern = (((1u << f.exp_bits) - 1u) << (f.precision - 1)) - 1u;
    const double next = (b & 0x7fffu) == max_pattern
                            ? std::copysign(std::ldexp(1.0, 1 << (f.exp_bits - 1)), v)
                            : decode_ref(f, static_cast<std::uint16_t>(b + 1));
    const double mid = (v + next) / 2;  // exact in float: precision + 1 bits
    const float fm = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(fm), mid);
    for (float x : {fm, std::nextafter(fm, 0.0f), std::nextafter(fm, 2 * fm)}) {
      const double want = round_ref(f, static_cast<double>(x));
      const std::uint16_t got = to_bits(x);
      const double got_v = static_cast<double>(from_bits(got));
      ASSERT_TRUE(got_v == want && std::signbit(got_v) == std::signbit(want))
          << std::hex << "pattern " << b << " x=" << x << " got " << got << " = " << got_v
          << " want " << want;
      ++checked;
    }
    // The tie itself goes to the even pattern.
    const std::uint16_t tie = to_bits(fm);
    if (!std::isinf(from_bits(tie))) {
      ASSERT_EQ(tie & 1u, 0u) << std::hex << b;
    }
  }
  EXPECT_GT(checked, 3 * 60000);
}

TEST(Fp16Conversion, StoreAllPatternsRoundTripAndTiesToEven) {
  check_store_exhaustive(kHalf, [](float x) { return rope::float_to_fp16(x); },
                         [](std::uint16_t h) { return rope::fp16_to_float(h); });
}

TEST(Bf16Conversion, StoreAllPatternsRoundTripAndTiesToEven) {
  check_store_exhaustive(kBf16, [](float x) { return rope::float_to_bf16(x); },
                         [](std::uint16_t h) { return rope::bf16_to_float(h); });
}

// Random floats over the whole exponent range, specials, and overflow.
template <class ToBits, class FromBits>
void check_store_random(const format16& f, ToBits to_bits, FromBits from_bits) {
  std::mt19937 gen(16);
  for (int i = 0; i < 2000000; ++i) {
    const float x = float_of(static_cast<std::uint32_t>(gen()));
    if (std::isnan(x)) {
      const std::uint16_t h = to_bits(x);
      ASSERT_TRUE(std::isnan(from_bits(h))) << std::hex << bits_of(x);
      ASSERT_EQ(h >> 15, bits_of(x) >> 31);
      continue;
    }
    const double want = round_ref(f, static_cast<double>(x));
    const double got = static_cast<double>(from_bits(to_bits(x)));
    ASSERT_TRUE(got == want && std::signbit(got) == std::signbit(want))
        << std::hex << bits_of(x) << " got " << got << " want " << want;
  }
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(from_bits(to_bits(inf)), inf);
  EXPECT_EQ(from_bits(to_bits(-inf)), -inf);
  EXPECT_EQ(from_bits(to_bits(std::numeric_limits<float>::max())), inf);
  EXPECT_EQ(from_bits(to_bits(-std::numeric_limits<float>::max())), -inf);
  EXPECT_TRUE(std::signbit(from_bits(to_bits(-0.0f))));
  EXPECT_TRUE(std::signbit(from_bits(to_bits(-std::numeric_limits<float>::denorm_min()))));
  // Signalling and quiet NaNs of both signs stay NaN, made quiet.
  for (std::uint32_t nan : {0x7f800001u, 0x7fa00000u, 0x7fc00000u, 0xff800001u, 0xffffffffu}) {
    const std::uint16_t h = to_bits(float_of(nan));
    EXPECT_TRUE(std::isnan(from_bits(h))) << std::hex << nan;
    EXPECT_EQ(h >> 15, nan >> 31) << std::hex << nan;
    const std::uint16_t quiet_bit = f.exp_bits == 5 ? 0x200 : 0x40;
    EXPECT_NE(h & quiet_bit, 0) << std::hex << nan;
  }
}

TEST(Fp16Conversion, StoreRandomFloatsSpecialsAndOverflow) {
  check_store_random(kHalf, [](float x) { return rope::float_to_fp16(x); },
                     [](std::uint16_t h) { return rope::fp16_to_float(h); });
}

TEST(Bf16Conversion, StoreRandomFloatsSpecialsAndOverflow) {
  check_store_random(kBf16, [](float x) { return rope::float_to_bf16(x); },
                     [](std::uint16_t h) { return rope::bf16_to_float(h); });
}

// --- rope::apply in 16-bit storage against the correctly rounded reference -----------------

template <class T>
std::uint16_t bits16(T x) {
  std::uint16_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
template <class T>
T from16(std::uint16_t b) {
  T x;
  std::memcpy(&x, &b, sizeof b);
  return x;
}

// Distance in units in the last place between two finite patterns of the same format.
int ulp_distance(std::uint16_t a, std::uint16_t b) {
  auto ordered = [](std::uint16_t x) { return (x & 0x8000) ? -static_cast<int>(x & 0x7fff) : static_cast<int>(x); };
  return std::abs(ordered(a) - ordered(b));
}

struct tally {
  long total = 0, exact = 0;
  int max_ulp = 0;
  long beyond_float_bound = 0;  // off by more than 1 ulp and by more than 3u*r + 1 ulp
};

// Rotates packed [T, H, D] data with rope (T16 storage for the output; TIn for the input) and
// compares every output element with the oracle's exact result rounded once to T16.
template <class TIn, class T16>
void accuracy_case(const format16& f, rope::layout l, int D, double scale, tally& tl) {
  const int T = 64, H = 2;
  const rope::spec sp = rope::make_spec(D, D, 1e4, l);
  auto tab = rope::get_table<float>(sp, 1 << 16);
  const std::vector<ld> w = oracle::inv_freq(1e4, D);
  std::mt19937_64 gen(static_cast<std::uint64_t>(D) * 31 + static_cast<std::uint64_t>(l));
  std::uniform_real_distribution<double> dist(-scale, scale);
  const std::size_t n = static_cast<std::size_t>(T * H * D);
  std::vector<TIn> in(n);
  for (auto& e : in) e = rope::storage_traits<TIn>::store(static_cast<float>(dist(gen)));
  std::vector<std::int64_t> pos(T);
  for (auto& p : pos) p = static_cast<std::int64_t>(gen() % (1 << 16));
  std::vector<T16> out(n);
  ASSERT_EQ(rope::apply<TIn>(*tab, rope::packed_heads<const TIn>(in.data(), T, H, D),
                             rope::packed_heads(out.data(), T, H, D), pos.data()),
            rope::status::ok);
  const std::size_t P = static_cast<std::size_t>(D / 2);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      const std::size_t base = static_cast<std::size_t>((t * H + h) * D);
      std::vector<float> x(static_cast<std::size_t>(D));
      for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(rope::storage_traits<TIn>::load(in[base + k]));
      const auto ref = oracle::rotate(x.data(), D, D, w, l, static_cast<ld>(pos[static_cast<std::size_t>(t)]));
      for (std::size_t k = 0; k < x.size(); ++k) {
        const double want = round_ref(f, static_cast<double>(ref[k]));
        const std::uint16_t got = bits16(out[base + k]);
        const double got_v = static_cast<double>(rope::storage_traits<T16>::load(out[base + k]));
        ++tl.total;
        if (got_v == want) {
          ++tl.exact;
          continue;
        }
        // The pattern of want: round trip through the library's exact conversion.
        const std::uint16_t want_bits = bits16(rope::storage_traits<T16>::store(static_cast<float>(want)));
        const int ulps = ulp_distance(got, want_bits);
        tl.max_ulp = std::max(tl.max_ulp, ulps);
        const std::size_t partner = l == rope::layout::interleaved ? (k ^ 1u) : (k < P ? k + P : k - P);
        const double r = std::hypot(static_cast<double>(x[k]), static_cast<double>(x[partner]));
        const double ulp = std::fabs(static_cast<double>(rope::storage_traits<T16>::load(
                               from16<T16>(static_cast<std::uint16_t>(want_bits + 1)))) - want);
        if (ulps > 1 && std::fabs(got_v - static_cast<double>(ref[k])) > ulp + 3 * 0x1p-24 * r)
          ++tl.beyond_float_bound;
      }
    }
}

// 16-bit inputs: every output within 1 ulp of the correctly rounded result. Float inputs:
// computing in float and rounding once cannot promise 1 ulp of a result much smaller than its
// pair's norm (cancellation leaves the float error, 3u*r, above the 16-bit ulp of a tiny
// result), so there the bound is 1 ulp + 3u*r.
template <class TIn, class T16>
void accuracy_suite(const format16& f, const char* what) {
  tally tl;
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (int D : {64, 80, 96, 128, 256})
      for (double scale : {1.0, 300.0}) accuracy_case<TIn, T16>(f, l, D, scale, tl);
  const double frac = static_cast<double>(tl.exact) / static_cast<double>(tl.total);
  std::printf("%s: %ld of %ld outputs correctly rounded (%.5f%%), max %d ulp off\n", what, tl.exact,
              tl.total, 100 * frac, tl.max_ulp);
  EXPECT_GE(frac, 0.999) << what;
  if (std::is_same<TIn, float>::value)
    EXPECT_EQ(tl.beyond_float_bound, 0) << what;
  else
    EXPECT_LE(tl.max_ulp, 1) << what;
}

TEST(Accuracy16, Fp16InFp16OutCorrectlyRoundedAlmostAlways) {
  accuracy_suite<rope::float16, rope::float16>(kHalf, "fp16 -> fp16");
}
TEST(Accuracy16, FloatInFp16OutCorrectlyRoundedAlmostAlways) {
  accuracy_suite<float, rope::float16>(kHalf, "float -> fp16");
}
TEST(Accuracy16, Bf16InBf16OutCorrectlyRoundedAlmostAlways) {
  accuracy_suite<rope::bfloat16, rope::bfloat16>(kBf16, "bf16 -> bf16");
}
TEST(Accuracy16, FloatInBf16OutCorrectlyRoundedAlmostAlways) {
  accuracy_suite<float, rope::bfloat16>(kBf16, "float -> bf16");
}

// --- mixed types, partial rotary dims, adopted types --------------------------------------

// Float in, 16-bit out equals float in, float out rounded once per element, including the
// copied dims [rotary_dim, head_dim).
template <class T16>
void mixed_matches_rounded_float() {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (int rotary : {96, 48, 6}) {
      const int T = 5, H = 3, D = 96;
      auto tab = rope::get_table<float>(rope::make_spec(D, rotary, 5e5, l), 1000);
      std::mt19937 gen(3);
      std::uniform_real_distribution<float> dist(-4, 4);
      std::vector<float> x(static_cast<std::size_t>(T * H * D));
      for (auto& e : x) e = dist(gen);
      const std::int32_t pos[T] = {0, 1, 999, 500, 77};
      std::vector<float> yf(x.size());
      std::vector<T16> y16(x.size());
      const auto in = rope::packed_heads<const float>(x.data(), T, H, D);
      ASSERT_EQ(rope::apply<float>(*tab, in, rope::packed_heads(yf.data(), T, H, D), pos), rope::status::ok);
      ASSERT_EQ(rope::apply<float>(*tab, in, rope::packed_heads(y16.data(), T, H, D), pos), rope::status::ok);
      for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(bits16(y16[i]), bits16(rope::storage_traits<T16>::store(yf[i])))
            << rope::to_string(l) << " rotary " << rotary << " at " << i;
    }
}

TEST(MixedTypes, FloatInFp16OutIsFloatResultRoundedOnce) { mixed_matches_rounded_float<rope::float16>(); }
TEST(MixedTypes, FloatInBf16OutIsFloatResultRoundedOnce) { mixed_matches_rounded_float<rope::bfloat16>(); }

TEST(MixedTypes, Fp16InFloatOutIsExactWideningOfFp16Result) {
  // fp16 in, float out: the float result of the loaded values, not rounded to fp16.
  const int D = 64;
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, rope::layout::half_split), 100);
  std::vector<rope::float16> x(D);
  for (int i = 0; i < D; ++i) x[static_cast<std::size_t>(i)] = rope::float16{rope::float_to_fp16(0.37f * static_cast<float>(i - 30))};
  std::vector<float> xf(D), want(D), got(D);
  for (int i = 0; i < D; ++i) xf[static_cast<std::size_t>(i)] = rope::fp16_to_float(x[static_cast<std::size_t>(i)].bits);
  ASSERT_EQ(rope::apply<float>(*tab, 42, xf.data(), want.data(), D), rope::status::ok);
  ASSERT_EQ(rope::apply<rope::float16>(*tab, 42, x.data(), got.data(), D), rope::status::ok);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * D));
}

// An engine's own 16-bit wrapper adopts rope's fp16 bits through storage_traits.
struct engine_half {
  std::uint16_t raw;
};
// A user type with its own traits and no format: the scalar path.
struct boxed_float {
  float v;
};

}  // namespace

template <>
struct rope::storage_traits<engine_half> : rope::fp16_storage<engine_half> {};
template <>
struct rope::storage_traits<boxed_float> {
  using compute_type = float;
  static float load(boxed_float x) noexcept { return x.v; }
  static boxed_float store(float x) noexcept { return {x}; }
};

namespace {

template <class T>
void adopted_type_matches(const char* what) {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    const int NT = 3, H = 4, D = 80;
    auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, l), 64);
    std::vector<rope::float16> a(static_cast<std::size_t>(NT * H * D));
    std::mt19937 gen(5);
    std::uniform_real_distribution<float> dist(-2, 2);
    for (auto& e : a) e = rope::float16{rope::float_to_fp16(dist(gen))};
    std::vector<T> b(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) b[i] = from16<T>(a[i].bits);
    const std::int64_t pos[NT] = {63, 2, 17};
    ASSERT_EQ(rope::apply<rope::float16>(*tab, rope::packed_heads(a.data(), NT, H, D), pos), rope::status::ok);
    ASSERT_EQ(rope::apply<T>(*tab, rope::packed_heads(b.data(), NT, H, D), pos), rope::status::ok);
    for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].bits, bits16(b[i])) << what << " " << i;
  }
}

TEST(AdoptedTypes, EngineUint16WrapperGivesRopeFloat16Bits) { adopted_type_matches<engine_half>("engine_half"); }

#if defined(__FLT16_MAX__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
}  // namespace
template <>
struct rope::storage_traits<_Float16> : rope::fp16_storage<_Float16> {};
namespace {
TEST(AdoptedTypes, Float16BuiltinGivesRopeFloat16Bits) { adopted_type_matches<_Float16>("_Float16"); }
#endif

TEST(AdoptedTypes, TypeWithOwnTraitsRunsAndMatchesFloat) {
  const int D = 80;
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, rope::layout::interleaved), 64);
  std::vector<float> a(D);
  for (int i = 0; i < D; ++i) a[static_cast<std::size_t>(i)] = std::sin(static_cast<float>(i));
  std::vector<boxed_float> b(D);
  for (int i = 0; i < D; ++i) b[static_cast<std::size_t>(i)].v = a[static_cast<std::size_t>(i)];
  ASSERT_EQ(rope::apply<float>(*tab, 9, a.data()), rope::status::ok);
  ASSERT_EQ(rope::apply<boxed_float>(*tab, 9, b.data()), rope::status::ok);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(bits_of(a[i]), bits_of(b[i].v)) << i;
}

}  // namespace
