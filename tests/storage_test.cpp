// 16-bit storage (rope/storage.hpp): the scalar conversions over all 65536 bit patterns against
// an independent reference written with frexp/ldexp/nearbyint in double; outputs of rope::apply
// in fp16 and bf16 against the correctly rounded reference (long double oracle rounded once);
// mixed input/output types; adopting other 16-bit types through storage_traits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <rope/rope.hpp>

#include "oracle.hpp"
#include "test_scale.hpp"  // kHeadDims

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
  long cancelled = 0;  // outputs below 2^-12 of their pair's norm
  long cancelled_exact = 0;
};

// How the inputs are drawn: uniform in [-scale, scale], or (cancel) with every pair set up so
// that its first output cancels: (x0, x1) ~ rho (sin phi, cos phi) at the pair's angle phi,
// then x0 moved by rho * 2^-k, k in [8, 34], so that out0 ~ rho 2^-k (16-bit inputs round the
// nudge away below ~2^-11). There a float result rounded to 16 bits was hundreds of ulps off
// before the kernels took the table's low parts (rope/arch/scalar.hpp, which bounds the error
// for bf16 down to 2^-35 r).
enum class draw { uniform, cancel };

// Rotates packed [T, H, D] data with rope (T16 storage for the output; TIn for the input) and
// compares every output element with the oracle's exact result rounded once to T16.
template <class TIn, class T16>
void accuracy_case(const format16& f, rope::layout l, int D, double rope_base, double scale, draw how,
                   tally& tl, rope::rounding rnd = rope::rounding::accurate) {
  const int T = 64, H = 2;
  const rope::spec sp = rope::make_spec(D, D, rope_base, l);
  // Uniform draws reach positions up to 2^24 + 1 (testing.md's range); cancelling ones stay
  // below 2^16, where the oracle's long double angle (p w_j rounded to 2^-64 of itself) is
  // exact enough for results 2^-34 of the pair's norm.
  const std::int64_t length = how == draw::uniform ? (std::int64_t{1} << 24) + 2 : std::int64_t{1} << 16;
  auto tab = rope::get_table<float>(sp, length);
  // The table's own (double) frequencies in long double: a result that cancels to 2^-34 of
  // its pair's norm sees the last bit of a double w_j at 2^16 rad (long double base^(-2j/d)
  // differs from it by up to 2^-37 r there), and what is checked here is the arithmetic.
  std::vector<ld> w;
  for (double wj : tab->inv_freq()) w.push_back(static_cast<ld>(wj));
  std::mt19937_64 gen(static_cast<std::uint64_t>(D) * 31 + static_cast<std::uint64_t>(l) +
                      (how == draw::cancel ? 7 : 0));
  std::uniform_real_distribution<double> dist(-scale, scale);
  const std::size_t n = static_cast<std::size_t>(T * H * D);
  const std::size_t P = static_cast<std::size_t>(D / 2);
  std::vector<TIn> in(n);
  std::vector<std::int64_t> pos(T);
  for (std::size_t t = 0; t < pos.size(); ++t) {
    if (how == draw::cancel || (t >= 27 && t < 45)) {
      pos[t] = static_cast<std::int64_t>(gen() % (1 << 16));
    } else if (t < 27) {  // 2^k - 1, 2^k, 2^k + 1 for k = 16 .. 24
      pos[t] = (std::int64_t{1} << (16 + t / 3)) + static_cast<std::int64_t>(t % 3) - 1;
    } else {
      pos[t] = static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(length));
    }
  }
  for (auto& e : in) e = rope::storage_traits<TIn>::store(static_cast<float>(dist(gen)));
  if (how == draw::cancel)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h)
        for (std::size_t j = 0; j < P; ++j) {
          const std::size_t base = static_cast<std::size_t>((t * H + h) * D);
          const ld phi = static_cast<ld>(pos[static_cast<std::size_t>(t)]) * w[j];
          const ld rho = static_cast<ld>(std::fabs(dist(gen))) + static_cast<ld>(scale) / 4;
          const ld nudge = std::ldexp(rho, -static_cast<int>(8 + gen() % 27)) * ((gen() & 1) ? 1 : -1);
          in[base + oracle::first(l, j, P)] =
              rope::storage_traits<TIn>::store(static_cast<float>(rho * std::sin(phi) + nudge));
          in[base + oracle::second(l, j, P)] =
              rope::storage_traits<TIn>::store(static_cast<float>(rho * std::cos(phi)));
        }
  std::vector<T16> out(n);
  ASSERT_EQ(rope::apply<TIn>(*tab, rope::packed_heads<const TIn>(in.data(), T, H, D),
                             rope::packed_heads(out.data(), T, H, D), pos.data(),
                             rope::direction::forward, rnd),
            rope::status::ok);
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
        const std::size_t partner = l == rope::layout::interleaved ? (k ^ 1u) : (k < P ? k + P : k - P);
        const double r = std::hypot(static_cast<double>(x[k]), static_cast<double>(x[partner]));
        const bool cancelled = std::fabs(static_cast<double>(ref[k])) < 0x1p-12 * r;
        ++tl.total;
        tl.cancelled += cancelled;
        if (got_v == want) {
          ++tl.exact;
          tl.cancelled_exact += cancelled;
          continue;
        }
        // The pattern of want: round trip through the library's exact conversion.
        const std::uint16_t want_bits = bits16(rope::storage_traits<T16>::store(static_cast<float>(want)));
        const int ulps = ulp_distance(got, want_bits);
        if (rnd == rope::rounding::fast) {
          // The float result is within 4 * 2^-24 r of the exact one (rope/arch/scalar.hpp:
          // table entries to 2^-24, two roundings); rounded once, it is off by that plus at most
          // one 16-bit ulp of itself.
          const std::uint16_t next = static_cast<std::uint16_t>((got & 0x7fff) + 1);
          const double ulp = static_cast<double>(rope::storage_traits<T16>::load(from16<T16>(next))) -
                             std::fabs(got_v);
          const double err = std::fabs(got_v - static_cast<double>(ref[k]));
          if (err > ulp + 0x1p-22 * r)
            ADD_FAILURE() << "fast: error " << err << " > ulp " << ulp << " + 2^-22 r at D=" << D
                          << " k=" << k << ", r=" << r;
          tl.max_ulp = std::max(tl.max_ulp, ulps);
          continue;
        }
        if (ulps > tl.max_ulp && ulps > 1)
          ADD_FAILURE() << ulps << " ulp at D=" << D << " " << rope::to_string(l) << " t=" << t
                        << " k=" << k << ": got " << got_v << " want " << want << " exact "
                        << static_cast<double>(ref[k]) << " r=" << r;
        tl.max_ulp = std::max(tl.max_ulp, ulps);
      }
    }
}

// Every accuracy_case of one draw: both layouts, every head dim of testing.md with the four
// bases in turn, two scales.
template <class TIn, class T16>
tally all_cases(const format16& f, draw how, rope::rounding rnd) {
  tally tl;
  const double bases[] = {1e4, 5e5, 1e6, 1e7};
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (std::size_t i = 0; i < std::size(rope_test::kHeadDims); ++i)
      for (double scale : {1.0, 300.0})
        accuracy_case<TIn, T16>(f, l, rope_test::kHeadDims[i], bases[i % 4], scale, how, tl, rnd);
  return tl;
}

// Every output within 1 ulp of the correctly rounded result, and >= 99.9% correctly rounded,
// for uniform inputs and for inputs where every pair cancels (results down to 2^-34 of the
// pair's norm).
template <class TIn, class T16>
void accuracy_suite(const format16& f, const char* what) {
  for (draw how : {draw::uniform, draw::cancel}) {
    const tally tl = all_cases<TIn, T16>(f, how, rope::rounding::accurate);
    const double frac = static_cast<double>(tl.exact) / static_cast<double>(tl.total);
    std::printf("%s, %s inputs: %ld of %ld outputs correctly rounded (%.5f%%), max %d ulp off; "
                "%ld of %ld outputs below 2^-12 r correctly rounded\n",
                what, how == draw::cancel ? "cancelling" : "uniform", tl.exact, tl.total,
                100 * frac, tl.max_ulp, tl.cancelled_exact, tl.cancelled);
    EXPECT_GE(frac, 0.999) << what;
    EXPECT_LE(tl.max_ulp, 1) << what;
    if (how == draw::cancel) {
      EXPECT_GE(tl.cancelled, tl.total / 8) << "the draw must cancel";
    }
  }
}

TEST(Accuracy16, Fp16InFp16OutWithinOneUlp) {
  accuracy_suite<rope::float16, rope::float16>(kHalf, "fp16 -> fp16");
}
TEST(Accuracy16, FloatInFp16OutWithinOneUlp) {
  accuracy_suite<float, rope::float16>(kHalf, "float -> fp16");
}
TEST(Accuracy16, Bf16InBf16OutWithinOneUlp) {
  accuracy_suite<rope::bfloat16, rope::bfloat16>(kBf16, "bf16 -> bf16");
}
TEST(Accuracy16, FloatInBf16OutWithinOneUlp) {
  accuracy_suite<float, rope::bfloat16>(kBf16, "float -> bf16");
}

// Deep cancellation, float in: pairs whose first output cancels to 2^-26..2^-51 of the pair's
// norm r (the Accuracy16 draws reach 2^-34; float inputs round a smaller nudge away). For each
// pair the input is searched on float's own grid: x1 runs over up to 4096 floats next to
// r cos(phi) and x0 is the float nearest x1 tan(phi), or a neighbour; the pair whose x0 c - x1 s
// is smallest is kept. The reference rotation uses cos and sin of the table's exact angle
// p * w_j (w_j the table's double frequency; oracle::cos_sin_of_product: a long double product
// of p and w_j is off by up to 2^-49 rad at p < 2^16, which is many bf16 ulps of a result at
// 2^-45 r). Asserted (rope/arch/scalar.hpp, "16-bit outputs"):
// every fp16 output within 1 ulp; every bf16 output above 2^-35 r within 1 ulp, and every bf16
// output within 1 ulp (of the exact value's binade) + 6.4 * 2^-48 r: the correction's own
// error, more than half a bf16 ulp below ~2^-36 r. Printed: the bf16 error by depth.
TEST(Accuracy16, FloatInDeepCancellationWithinItsBound) {
  const int T = 8, H = 2;
  long deep40 = 0, bf16_total = 0;
  int fp16_max_ulp = 0;
  int max_ulp_by_depth[64] = {};
  long count_by_depth[64] = {};
  double max_excess = 0;  // bf16: max (|got - exact| - 1 ulp) / r over the outputs
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (int D : {64, 80, 96, 128, 256}) {
      const rope::spec sp = rope::make_spec(D, D, 1e4, l);
      auto tab = rope::get_table<float>(sp, 1 << 16);
      const std::vector<double> w(tab->inv_freq().begin(), tab->inv_freq().end());
      std::mt19937_64 gen(static_cast<std::uint64_t>(D) * 131 + static_cast<std::uint64_t>(l));
      const std::size_t P = static_cast<std::size_t>(D / 2), n = static_cast<std::size_t>(T * H * D);
      std::vector<float> in(n);
      std::vector<ld> ref0(n, 0);  // the exact first output of each pair, at its index
      std::vector<double> norm(n, 0);
      std::vector<std::int64_t> pos(T);
      for (auto& p : pos) p = static_cast<std::int64_t>(gen() % (1 << 16));
      for (int t = 0; t < T; ++t)
        for (int h = 0; h < H; ++h)
          for (std::size_t j = 0; j < P; ++j) {
            const std::size_t row = static_cast<std::size_t>((t * H + h) * D);
            const std::size_t i0 = row + oracle::first(l, j, P), i1 = row + oracle::second(l, j, P);
            const oracle::cos_sin a = oracle::cos_sin_of_product(pos[static_cast<std::size_t>(t)], w[j]);
            const double c = static_cast<double>(a.c), s = static_cast<double>(a.s);
            const double rho = std::ldexp(1.0 + static_cast<double>(gen() % 1024) / 1024.0,
                                          static_cast<int>(gen() % 16) - 4);
            const int steps = 1 << (gen() % 13);  // 1..4096 candidates: a spread of depths
            float x1 = static_cast<float>(rho * c);
            for (int k = 0; k < steps / 2; ++k) x1 = std::nextafter(x1, -HUGE_VALF);
            double best = HUGE_VAL;
            for (int k = 0; k < steps; ++k, x1 = std::nextafter(x1, HUGE_VALF)) {
              if (c == 0) break;
              const float x0n = static_cast<float>(static_cast<double>(x1) * s / c);
              for (float x0 : {std::nextafter(x0n, -HUGE_VALF), x0n, std::nextafter(x0n, HUGE_VALF)}) {
                const double o = std::fabs(static_cast<double>(x0) * c - static_cast<double>(x1) * s);
                if (o < best && o > 0) {
                  best = o;
                  in[i0] = x0;
                  in[i1] = x1;
                }
              }
            }
            if (best == HUGE_VAL) {  // c == 0 cannot happen for a double angle; keep the pair valid
              in[i0] = static_cast<float>(rho * s);
              in[i1] = static_cast<float>(rho * c);
            }
            // The reference: the 2x2 rotation by the exact angle applied to the float pair.
            Eigen::Matrix<ld, 2, 2> rot;
            rot << a.c, -a.s, a.s, a.c;
            const Eigen::Matrix<ld, 2, 1> v = rot * Eigen::Matrix<ld, 2, 1>(in[i0], in[i1]);
            ref0[i0] = v(0);
            ref0[i1] = v(1);
            norm[i0] = norm[i1] = std::hypot(static_cast<double>(in[i0]), static_cast<double>(in[i1]));
          }
      std::vector<rope::float16> out_h(n);
      std::vector<rope::bfloat16> out_b(n);
      ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads<const float>(in.data(), T, H, D),
                                   rope::packed_heads(out_h.data(), T, H, D), pos.data()),
                rope::status::ok);
      ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads<const float>(in.data(), T, H, D),
                                   rope::packed_heads(out_b.data(), T, H, D), pos.data()),
                rope::status::ok);
      for (std::size_t k = 0; k < n; ++k) {
        const double exact = static_cast<double>(ref0[k]), r = norm[k];
        // fp16: within 1 ulp of the exact result correctly rounded, at every depth.
        const std::uint16_t want_h = bits16(rope::storage_traits<rope::float16>::store(
            static_cast<float>(round_ref(kHalf, exact))));
        const int uh = ulp_distance(bits16(out_h[k]), want_h);
        fp16_max_ulp = std::max(fp16_max_ulp, uh);
        EXPECT_LE(uh, 1) << "fp16 D=" << D << " " << rope::to_string(l) << " k=" << k
                         << " exact=" << exact << " r=" << r;
        // bf16: within 1 ulp above 2^-35 r; within 1 ulp + 6.4 * 2^-48 r everywhere.
        const std::uint16_t want_b = bits16(rope::storage_traits<rope::bfloat16>::store(
            static_cast<float>(round_ref(kBf16, exact))));
        const std::uint16_t got_b = bits16(out_b[k]);
        const int ub = ulp_distance(got_b, want_b);
        const double got = static_cast<double>(rope::storage_traits<rope::bfloat16>::load(out_b[k]));
        // One bf16 ulp in the exact value's binade (8 significant bits; every value here is
        // normal: |exact| >= 2^-67).
        const double gap = exact == 0 ? 0x1p-133 : std::ldexp(1.0, std::ilogb(exact) - 7);
        const double err = std::fabs(got - exact);
        const int depth =  // k for |exact| in [2^-(k+1), 2^-k) r, 0 for the outputs near r
            exact == 0 ? 63
                       : std::max(0, std::min(63, static_cast<int>(std::floor(-std::log2(std::fabs(exact) / r)))));
        ++bf16_total;
        deep40 += depth >= 40;
        ++count_by_depth[depth];
        max_ulp_by_depth[depth] = std::max(max_ulp_by_depth[depth], ub);
        max_excess = std::max(max_excess, (err - gap) / r);
        if (std::fabs(exact) >= 0x1p-35 * r) {
          EXPECT_LE(ub, 1) << "bf16 D=" << D << " " << rope::to_string(l) << " k=" << k
                           << " exact=" << exact << " r=" << r;
        }
        EXPECT_LE(err, gap + 6.4 * 0x1p-48 * r) << "bf16 D=" << D << " " << rope::to_string(l)
                                         << " k=" << k << " exact=" << exact << " r=" << r;
      }
    }
  std::printf("float -> fp16, deep cancellation: max %d ulp\n", fp16_max_ulp);
  std::printf("float -> bf16, deep cancellation: %ld outputs, %ld below 2^-40 r; max (error - 1 ulp) "
              "= 2^%.1f r\n", bf16_total, deep40, std::log2(std::max(max_excess, 0x1p-80)));
  for (int d = 30; d < 64; ++d)
    if (count_by_depth[d])
      std::printf("  outputs in [2^-%d, 2^-%d) r: %ld, max %d bf16 ulp\n", d + 1, d,
                  count_by_depth[d], max_ulp_by_depth[d]);
  EXPECT_GE(deep40, 100) << "the draw must reach 2^-40 of the pairs' norms";
}

// rounding::fast: the float result rounded once. Every output is within one 16-bit ulp plus
// 2^-22 of its pair's norm of the exact result, and on uniform inputs >= 99.9% are correctly
// rounded; where pairs cancel it is many ulps off (printed: what rounding::accurate is for), and
// that is asserted too, so that a fast call which ran the accurate kernel fails here.
template <class TIn, class T16>
void fast_suite(const format16& f, const char* what) {
  for (draw how : {draw::uniform, draw::cancel}) {
    const tally tl = all_cases<TIn, T16>(f, how, rope::rounding::fast);
    const double frac = static_cast<double>(tl.exact) / static_cast<double>(tl.total);
    std::printf("%s, rounding::fast, %s inputs: %.5f%% correctly rounded, max %d ulp off; %ld of "
                "%ld outputs below 2^-12 r correctly rounded\n",
                what, how == draw::cancel ? "cancelling" : "uniform", 100 * frac, tl.max_ulp,
                tl.cancelled_exact, tl.cancelled);
    if (how == draw::uniform) {
      EXPECT_GE(frac, 0.999) << what;
    } else {
      EXPECT_GT(tl.max_ulp, 8) << what << ": no output cancelled past the correction's reach?";
    }
  }
}

TEST(Rounding16, FastWithinItsBoundEveryPair) {
  fast_suite<rope::float16, rope::float16>(kHalf, "fp16 -> fp16");
  fast_suite<float, rope::float16>(kHalf, "float -> fp16");
  fast_suite<rope::bfloat16, rope::bfloat16>(kBf16, "bf16 -> bf16");
  fast_suite<float, rope::bfloat16>(kBf16, "float -> bf16");
}

// rounding::fast gives the bits of the float result rounded once: the same call with float
// output (a 16-bit input widens exactly), rounded by the exact scalar conversion. Every
// storage pair with a 16-bit output, both layouts, in and out of place, dynamic and
// compile-time Dim, a table formed per row (compact) and a dense one.
template <class TIn, class T16, std::size_t Dim>
void fast_is_float_rounded_once() {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (rope::table_mode mode : {rope::table_mode::dense, rope::table_mode::compact}) {
      const int T = 4, H = 3, D = 128;
      const rope::spec sp = rope::make_spec(D, D, 5e5, l);
      const auto tab = rope::table<float>::build(rope::default_frequencies(sp), l, 1 << 12, mode);
      std::mt19937 gen(11);
      std::uniform_real_distribution<float> dist(-8, 8);
      const std::size_t n = static_cast<std::size_t>(T * H * D);
      std::vector<TIn> x(n);
      for (auto& e : x) e = rope::storage_traits<TIn>::store(dist(gen));
      const std::int32_t pos[T] = {0, 4095, 1234, 7};
      const auto in = rope::packed_heads<const TIn>(x.data(), T, H, D);
      std::vector<float> yf(n);
      std::vector<T16> y16(n);
      ASSERT_EQ((rope::apply<TIn, Dim>(*tab, in, rope::packed_heads(yf.data(), T, H, D), pos)),
                rope::status::ok);
      ASSERT_EQ((rope::apply<TIn, Dim>(*tab, in, rope::packed_heads(y16.data(), T, H, D), pos,
                                       rope::direction::forward, rope::rounding::fast)),
                rope::status::ok);
      const char* what = rope::to_string(l);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(bits16(y16[i]), bits16(rope::storage_traits<T16>::store(yf[i]))) << what << " " << i;
      }
      if constexpr (std::is_same<TIn, T16>::value) {
        std::vector<T16> z = x;  // in place
        ASSERT_EQ((rope::apply<T16, Dim>(*tab, rope::packed_heads(z.data(), T, H, D), pos,
                                         rope::direction::forward, rope::rounding::fast)),
                  rope::status::ok);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(bits16(z[i]), bits16(y16[i])) << what << " in place " << i;
        }
      }
    }
}

TEST(Rounding16, FastIsTheFloatResultRoundedOnce) {
  fast_is_float_rounded_once<float, rope::float16, rope::dynamic>();
  fast_is_float_rounded_once<float, rope::float16, 128>();
  fast_is_float_rounded_once<float, rope::bfloat16, rope::dynamic>();
  fast_is_float_rounded_once<float, rope::bfloat16, 128>();
  fast_is_float_rounded_once<rope::float16, rope::float16, rope::dynamic>();
  fast_is_float_rounded_once<rope::float16, rope::float16, 128>();
  fast_is_float_rounded_once<rope::bfloat16, rope::bfloat16, rope::dynamic>();
  fast_is_float_rounded_once<rope::bfloat16, rope::bfloat16, 128>();
  fast_is_float_rounded_once<rope::bfloat16, rope::float16, 128>();
}

// Float outputs have one rounding: rounding::fast changes nothing there.
TEST(Rounding16, FastLeavesFloatOutputsAlone) {
  auto tab = rope::get_table<float>(rope::make_spec(64, 64, 1e4, rope::layout::half_split), 100);
  std::vector<float> x(64 * 6), a, b;
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& e : x) e = dist(gen);
  a = b = x;
  const std::int32_t pos[3] = {1, 50, 99};
  ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(a.data(), 3, 2, 64), pos), rope::status::ok);
  ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(b.data(), 3, 2, 64), pos,
                               rope::direction::forward, rope::rounding::fast),
            rope::status::ok);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  EXPECT_NE(0, std::memcmp(a.data(), x.data(), a.size() * sizeof(float)));
}

// Non-finite inputs stay in their pair with 16-bit outputs too (the low-part correction
// included, and rounding::fast): the pair's outputs are not finite, every other output has the
// bits of a run without them. Both layouts, fp16 and bf16, in place, and float in.
template <class TIn, class T16>
void non_finite_stays_in_pair() {
  for (rope::rounding rnd : {rope::rounding::accurate, rope::rounding::fast})
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    const int D = 64;
    auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, l), 100);
    std::vector<TIn> clean(D), dirty(D);
    for (int i = 0; i < D; ++i)
      clean[static_cast<std::size_t>(i)] = rope::storage_traits<TIn>::store(0.25f * static_cast<float>(i - 30));
    dirty = clean;
    const std::size_t P = D / 2;
    const std::size_t inf_at = oracle::first(l, 3, P), nan_at = oracle::second(l, 17, P);
    dirty[inf_at] = rope::storage_traits<TIn>::store(-std::numeric_limits<float>::infinity());
    dirty[nan_at] = rope::storage_traits<TIn>::store(std::numeric_limits<float>::quiet_NaN());
    std::vector<T16> a(D), b(D);
    const std::int64_t p = 77;
    const auto fwd = rope::direction::forward;
    ASSERT_EQ(rope::apply<TIn>(*tab, p, clean.data(), a.data(), D, fwd, rnd), rope::status::ok);
    ASSERT_EQ(rope::apply<TIn>(*tab, p, dirty.data(), b.data(), D, fwd, rnd), rope::status::ok);
    for (std::size_t j = 0; j < P; ++j) {
      const std::size_t i0 = oracle::first(l, j, P), i1 = oracle::second(l, j, P);
      for (std::size_t i : {i0, i1}) {
        const float v = rope::storage_traits<T16>::load(b[i]);
        if (j == 3 || j == 17)
          EXPECT_FALSE(std::isfinite(v)) << rope::to_string(l) << " " << i;
        else
          EXPECT_EQ(bits16(a[i]), bits16(b[i])) << rope::to_string(l) << " " << i;
      }
    }
  }
}
TEST(NonFinite16, StayInTheirPair) {
  non_finite_stays_in_pair<rope::float16, rope::float16>();
  non_finite_stays_in_pair<rope::bfloat16, rope::bfloat16>();
  non_finite_stays_in_pair<float, rope::float16>();
  non_finite_stays_in_pair<float, rope::bfloat16>();
}

// --- mixed types, partial rotary dims, adopted types --------------------------------------

// Float in, 16-bit out: the copied dims [rotary_dim, head_dim) are the input rounded once; a
// rotated dim is the float result rounded once, or 1 ulp from it where the low-part correction
// (rope/arch/scalar.hpp) crossed a rounding boundary, which is rare for inputs that do not
// cancel.
template <class T16>
void mixed_matches_rounded_float() {
  long moved = 0, total = 0;
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
      for (std::size_t i = 0; i < x.size(); ++i) {
        const std::uint16_t rounded = bits16(rope::storage_traits<T16>::store(yf[i]));
        if (static_cast<int>(i % D) >= rotary) {
          ASSERT_EQ(bits16(y16[i]), rounded) << rope::to_string(l) << " rotary " << rotary << " at " << i;
          continue;
        }
        ++total;
        const int d = ulp_distance(bits16(y16[i]), rounded);
        ASSERT_LE(d, 1) << rope::to_string(l) << " rotary " << rotary << " at " << i;
        moved += d;
      }
    }
  EXPECT_LT(moved * 100, total) << moved << " of " << total << " moved by the correction";
}

TEST(MixedTypes, FloatInFp16OutIsFloatResultRoundedOnceOrOneUlpAway) { mixed_matches_rounded_float<rope::float16>(); }
TEST(MixedTypes, FloatInBf16OutIsFloatResultRoundedOnceOrOneUlpAway) { mixed_matches_rounded_float<rope::bfloat16>(); }

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
