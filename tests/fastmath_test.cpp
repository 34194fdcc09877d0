// rope in a file compiled with -ffast-math (tests/CMakeLists.txt; the program is linked without it,
// so the CPU's subnormal mode stays IEEE's), and again for baseline x86-64 without fma instructions
// (fastmath_baseline_test.cpp, where Clang splits std::fma). What holds there: the file gets its
// own copy of rope (another build-mode namespace); double tables keep their entries within half an
// ulp plus 2^-58 A (the error-free transforms that form them are kept from being folded, and
// cos/sin are not x87's); float outputs stay within 3 * 2^-24 r; NaN and Inf parameters are still
// refused, though -ffinite-math-only folds std::isfinite to true. Checked against
// fastmath_oracle.cpp, compiled without -ffast-math.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <rope/ggml.hpp>
#include <rope/rope.hpp>
#include <rope/scaling.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "double_entries.hpp"
#include "fastmath_oracle.hpp"
#include "sampled_positions.hpp"
#include "test_scale.hpp"

#define FASTMATH_STR_I(x) #x
#define FASTMATH_STR(x) FASTMATH_STR_I(x)

namespace {

using ld = long double;

static_assert(
#if defined(__FAST_MATH__)
    true,
#else
    false,
#endif
    "fastmath_test.cpp must be compiled with -ffast-math");

TEST(FastMath, FileHasItsOwnCopyOfRope) {
  const std::string here = FASTMATH_STR(ROPE_ABI_NAMESPACE);
  const std::string plain = fastmath_oracle::rope_namespace();
  EXPECT_NE(here, plain);
  // The last digit: exceptions (1) plus 2 under -ffast-math (the ISA digits differ too in
  // fastmath_baseline_test).
  EXPECT_EQ(here.back(), plain.back() + 2) << here << " vs " << plain;
}

// Fewer positions than table_test's: the oracle's long double cos/sin dominate the time.
std::vector<std::int64_t> sampled_positions(std::int64_t limit) {
  return rope_test::sampled_positions(limit, 300, 9, 500, 7);
}

// Table.DoubleEntriesWithinHalfAnUlp's bound, on a smaller grid: without the barriers GCC's
// -ffast-math folded the double-doubles' low parts to zero (entries up to 1.34 * 2^-53 A off)
// and inlined x87 fcos / fsin (up to 5e-12 off near p = 2^32).
TEST(FastMath, DoubleTableEntriesWithinHalfAnUlp) {
  if (!rope::detail::long_double_is_wider) GTEST_SKIP() << "long double is double here";
  std::vector<rope_test::double_entries_grid> grids = {{8, 1 << 12, std::int64_t{1} << 32}};
  if (!rope_test::quick_scale()) grids.push_back({128, 1 << 12, (std::int64_t{1} << 24) + 1});
  rope_test::double_entries_worst worst;
  rope_test::check_double_entries(grids, {1e4, 1e7}, {1.0}, fastmath_oracle::cos_sin,
                                  sampled_positions, worst);
  std::printf("-ffast-math double entries: |entry - exact| <= %.4f * 2^-53\n",
              static_cast<double>(worst.error));
}

// Float tables and rope::apply (dense and compact tables, both layouts): within the accuracy
// contract's 3 * 2^-24 r of the long double 2x2 oracle.
TEST(FastMath, FloatOutputsWithinBound) {
  constexpr int D = 128;
  double worst = 0;
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (rope::table_mode mode : {rope::table_mode::dense, rope::table_mode::compact}) {
      const rope::spec sp = rope::make_spec(D, D, 5e5, l);
      const std::int64_t n = mode == rope::table_mode::dense ? 1 << 14 : std::int64_t{1} << 24;
      auto tab = rope::table<float>::build(rope::default_frequencies(sp), l, n, mode);
      std::mt19937 gen(3);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (std::int64_t p : sampled_positions(n)) {
        std::vector<float> x(D), y(D);
        for (float& v : x) v = u(gen);
        const std::int64_t pos[1] = {p};
        ASSERT_EQ((rope::apply<float, D>(*tab, rope::packed_heads<const float>(x.data(), 1, 1, D),
                                         rope::packed_heads(y.data(), 1, 1, D), pos)),
                  rope::status::ok);
        const std::vector<ld> ref =
            fastmath_oracle::rotate(x.data(), D, 5e5, l == rope::layout::interleaved, p);
        for (std::size_t j = 0; j < D / 2; ++j) {
          const std::size_t i0 = l == rope::layout::interleaved ? 2 * j : j;
          const std::size_t i1 = l == rope::layout::interleaved ? 2 * j + 1 : j + D / 2;
          const double r = std::hypot(static_cast<double>(x[i0]), static_cast<double>(x[i1]));
          for (std::size_t i : {i0, i1}) {
            // By its bits: below, a NaN's comparison may be folded (-ffinite-math-only).
            ASSERT_TRUE(rope_test::finite_bits(y[i])) << "p=" << p << " i=" << i;
            const double e = static_cast<double>(std::fabs(static_cast<ld>(y[i]) - ref[i])) /
                             (0x1p-24 * r);
            worst = std::max(worst, e);
            ASSERT_LE(e, 3.0) << "p=" << p << " i=" << i << " " << rope::to_string(l);
          }
        }
      }
    }
  std::printf("-ffast-math float outputs: worst %.3f * 2^-24 r\n", worst);
}

// NaN and +-Inf made from their bits (Clang 18 and later warn where -ffast-math code names them).
std::vector<double> non_finite() {
  std::vector<double> v;
  for (std::uint64_t bits : {0x7ff8000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull}) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    v.push_back(d);
  }
  return v;
}

// The hot path: a re-rotation to frequencies with a non-finite entry writes nothing.
TEST(FastMath, NonFiniteFrequenciesAreRefusedByRerotate) {
  const rope::spec sp = rope::make_spec(64, 64, 1e4, rope::layout::half_split);
  for (double bad : non_finite()) {
    rope::frequencies f = rope::default_frequencies(sp);
    f.inv_freq[3] = bad;
    std::vector<float> k(64, 0.5f);
    const std::int32_t pos[1] = {3};
    EXPECT_EQ((rope::rerotate<float, 64>(rope::default_frequencies(sp), f, sp.layout,
                                         rope::packed_heads(k.data(), 1, 1, 64), pos)),
              rope::status::bad_dimension);
    EXPECT_TRUE(std::all_of(k.begin(), k.end(), [](float v) { return v == 0.5f; }));
  }
}

#if ROPE_HAS_EXCEPTIONS
// NaN and Inf parameters, which -ffinite-math-only's folded std::isfinite let through before.
TEST(FastMath, NonFiniteParametersAreRefused) {
  for (double bad : non_finite()) {
    EXPECT_THROW(rope::make_spec(64, 64, bad, rope::layout::half_split), std::invalid_argument);
    const rope::spec sp = rope::make_spec(64, 64, 1e4, rope::layout::half_split);
    rope::scaling sc;
    sc.type = rope::scaling_type::linear;
    sc.factor = bad;
    EXPECT_THROW(rope::compute_frequencies(sp, sc), std::invalid_argument);
    rope::frequencies f = rope::default_frequencies(sp);
    f.attention_factor = bad;
    EXPECT_THROW(rope::table<float>::build(f, sp.layout, 16), std::invalid_argument);
    f = rope::default_frequencies(sp);
    f.inv_freq[3] = bad;
    EXPECT_THROW(rope::table<float>::build(f, sp.layout, 16), std::invalid_argument);
    rope::ggml_rope_params gp;
    gp.n_dims = 64;
    gp.freq_base = static_cast<float>(bad);
    EXPECT_THROW(rope::ggml_frequencies(gp), std::invalid_argument);
  }
}
#endif

}  // namespace
