// Tables: entries against long double cos/sin, both storage modes, growth and the cache keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <rope/scaling.hpp>
#include <rope/table.hpp>
#include <utility>
#include <vector>

#include "double_entries.hpp"
#include "oracle.hpp"
#include "sampled_positions.hpp"
#include "test_scale.hpp"

namespace {

using ld = long double;
constexpr ld kU = 0x1p-24L;

using rope_test::sampled_positions;

// Pair j's cos and sin in a table row (m = row_width()): interleaved rows hold C[2j] = C[2j+1]
// and S[2j+1] = -S[2j], half-split rows C[j] and S[j].
template <class Real>
std::pair<Real, Real> cos_sin_of(const Real* row, std::size_t m, std::size_t j, rope::layout l) {
  if (l == rope::layout::interleaved) return {row[2 * j], row[m + 2 * j + 1]};
  return {row[j], row[m + j]};
}

// Largest |entry - A cos| and |entry - A sin| over the sampled positions, in units of 2^-24.
template <class Real>
ld max_entry_error(const rope::table<Real>& tab, const std::vector<ld>& w, ld a,
                   const std::vector<std::int64_t>& positions) {
  const std::size_t P = w.size(), m = tab.row_width();
  std::vector<Real> scratch(2 * m);
  ld worst = 0;
  for (std::int64_t p : positions) {
    const Real* row = tab.row(p, scratch.data());
    for (std::size_t j = 0; j < P; ++j) {
      const ld phi = static_cast<ld>(p) * w[j];
      const ld c = a * std::cos(phi), s = a * std::sin(phi);
      const auto [gc, gs] = cos_sin_of(row, m, j, tab.layout());
      if (tab.layout() == rope::layout::interleaved) {
        EXPECT_EQ(row[2 * j], row[2 * j + 1]);
        EXPECT_EQ(row[m + 2 * j], -row[m + 2 * j + 1]);
      }
      worst = std::max({worst, std::fabs(gc - c) / kU, std::fabs(gs - s) / kU});
    }
  }
  return worst;
}

TEST(Table, FloatEntriesWithinOneUnitUpTo2To24) {
  const std::int64_t n = (std::int64_t{1} << 24) + 1;
  const auto positions = sampled_positions(n);
  for (double base : {1e4, 5e5, 1e6, 1e7})
    for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
      const rope::spec sp = rope::make_spec(128, 128, base, l);
      const auto w = oracle::inv_freq(base, 128);
      auto compact = rope::table<float>::build(rope::default_frequencies(sp), l, n, rope::table_mode::compact);
      EXPECT_EQ(compact->mode(), rope::table_mode::compact);
      EXPECT_LE(max_entry_error(*compact, w, 1, positions), 1.0L) << "compact base " << base;
      auto dense = rope::table<float>::build(rope::default_frequencies(sp), l, 1 << 15, rope::table_mode::dense);
      EXPECT_LE(max_entry_error(*dense, w, 1, sampled_positions(1 << 15)), 1.0L) << "dense base " << base;
    }
}

// testing.md's numeric test 1 at every position below 2^24, not a sample of them: a compact
// float table (a dense one would take gigabytes) at rotary dim 8, whose four pairs run w_j from 1
// down to 1e-3 (base 1e4, half-split) and to 5.6e-6 (base 1e7, interleaved). The reference, per
// pair: every 4096th position directly (the angle p w_j in long double less the nearest multiple
// of 2 pi in long double, error below 2^-38 rad, then double cos and sin), the positions between
// by a long double rotation by w_j (4096 steps add below 2^-50). ROPE_TEST_SCALE=quick (qemu,
// where long double is emulated) stops at 2^20.
TEST(Table, FloatEntriesWithinOneUnitAtEveryPositionBelow2To24) {
  const std::int64_t n = std::int64_t{1} << (rope_test::quick_scale() ? 20 : 24);
  const ld two_pi = 6.283185307179586476925286766559005768L;
  for (const auto& c : {std::make_pair(1e4, rope::layout::half_split),
                        std::make_pair(1e7, rope::layout::interleaved)}) {
    const double base = c.first;
    const rope::layout l = c.second;
    const auto w = oracle::inv_freq(base, 8);
    auto tab = rope::table<float>::build(rope::default_frequencies(rope::make_spec(8, 8, base, l)), l,
                                         n, rope::table_mode::compact);
    ASSERT_EQ(tab->mode(), rope::table_mode::compact);
    const std::size_t m = tab->row_width();
    std::vector<float> scratch(2 * m);
    ld ref_c[4] = {}, ref_s[4] = {}, step_c[4] = {}, step_s[4] = {};
    for (std::size_t j = 0; j < 4; ++j) {
      step_c[j] = std::cos(w[j]);
      step_s[j] = std::sin(w[j]);
    }
    ld worst = 0;
    std::int64_t worst_p = 0;
    for (std::int64_t p = 0; p < n; ++p) {
      const float* row = tab->row(p, scratch.data());
      for (std::size_t j = 0; j < 4; ++j) {
        if (p % 4096 == 0) {
          ld phi = static_cast<ld>(p) * w[j];
          phi -= two_pi * std::nearbyint(phi / two_pi);
          ref_c[j] = std::cos(static_cast<double>(phi));
          ref_s[j] = std::sin(static_cast<double>(phi));
        } else {
          const ld next_c = ref_c[j] * step_c[j] - ref_s[j] * step_s[j];
          ref_s[j] = ref_s[j] * step_c[j] + ref_c[j] * step_s[j];
          ref_c[j] = next_c;
        }
        const auto [got_c, got_s] = cos_sin_of(row, m, j, l);
        const ld e = std::max(std::fabs(static_cast<ld>(got_c) - ref_c[j]),
                              std::fabs(static_cast<ld>(got_s) - ref_s[j])) / kU;
        if (e > worst) {
          worst = e;
          worst_p = p;
        }
      }
    }
    std::printf("every p < %lld, base %g, %s: worst entry error %.4Lf x 2^-24 at p = %lld\n",
                static_cast<long long>(n), base, rope::to_string(l), worst, static_cast<long long>(worst_p));
    EXPECT_LE(worst, 1.0L) << "base " << base << " worst at p = " << worst_p;
  }
}

TEST(Table, PositionZeroIsExactlyCosOneSinZero) {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (rope::table_mode mode : {rope::table_mode::dense, rope::table_mode::compact}) {
      auto tab = rope::table<float>::build(rope::default_frequencies(rope::make_spec(64, 64, 1e4, l)), l, 1000, mode);
      std::vector<float> scratch(2 * tab->row_width());
      const float* row = tab->row(0, scratch.data());
      for (std::size_t i = 0; i < tab->row_width(); ++i) {
        EXPECT_EQ(row[i], 1.0f);
        EXPECT_EQ(row[tab->row_width() + i], 0.0f);
      }
    }
}

TEST(Table, AttentionFactorScalesEntries) {
  rope::frequencies f = rope::default_frequencies(rope::make_spec(32, 32, 1e4, rope::layout::half_split));
  f.attention_factor = 1.25;
  auto tab = rope::table<float>::build(f, rope::layout::half_split, 5000);
  EXPECT_LE(max_entry_error(*tab, oracle::inv_freq(1e4, 32), 1.25L, sampled_positions(5000)), 1.25L);
}

// Float tables' low parts (used for 16-bit outputs): hi is row()'s row bit for bit, and hi + lo
// is A cos(p w_j) (A sin) within 2^-47 A, against long double cos/sin of the table's own double
// frequencies (what is checked is the entries, not w_j: 2^20 rad carries a double w_j's last
// bit to 2^-33 rad). Both layouts, both modes, an attention factor, positions up to 2^20.
TEST(Table, LowPartsCarryEntriesTo2ToMinus47) {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (rope::table_mode mode : {rope::table_mode::dense, rope::table_mode::compact}) {
      rope::frequencies f = rope::default_frequencies(rope::make_spec(96, 96, 5e5, l));
      f.attention_factor = 1.125;
      const std::int64_t n = mode == rope::table_mode::dense ? (1 << 14) : (1 << 20);
      auto tab = rope::table<float>::build(f, l, n, mode);
      const std::size_t P = f.inv_freq.size(), m = tab->row_width();
      std::vector<float> scratch(4 * m), plain(2 * m);
      ld worst = 0;
      for (std::int64_t p : sampled_positions(n)) {
        const auto r = tab->row_with_low_parts(p, scratch.data());
        const float* hi_only = tab->row(p, plain.data());
        for (std::size_t i = 0; i < 2 * m; ++i) ASSERT_EQ(r.hi[i], hi_only[i]) << p << " " << i;
        for (std::size_t j = 0; j < P; ++j) {
          // cos and sin of the exact product p * w_j (oracle::cos_sin_of_product: the rounded
          // product alone is off by up to 2^-44 rad at p = 2^20).
          const oracle::cos_sin cs = oracle::cos_sin_of_product(p, f.inv_freq[j]);
          const ld c = 1.125L * cs.c, s = 1.125L * cs.s;
          const std::size_t ic = l == rope::layout::interleaved ? 2 * j : j;
          const std::size_t is = l == rope::layout::interleaved ? m + 2 * j + 1 : m + j;
          // The low part is below half an ulp of its entry (hi is the entry rounded to float).
          ASSERT_LE(std::fabs(static_cast<ld>(r.lo[ic])), std::fabs(static_cast<ld>(r.hi[ic])) * kU + 0x1p-149L);
          worst = std::max({worst, std::fabs(static_cast<ld>(r.hi[ic]) + static_cast<ld>(r.lo[ic]) - c),
                            std::fabs(static_cast<ld>(r.hi[is]) + static_cast<ld>(r.lo[is]) - s)});
          if (l == rope::layout::interleaved) {
            ASSERT_EQ(r.lo[2 * j], r.lo[2 * j + 1]);
            ASSERT_EQ(r.lo[m + 2 * j], -r.lo[m + 2 * j + 1]);
          }
        }
      }
      std::printf("low parts, %s, %s: |hi + lo - exact| <= %.3f * 2^-48 A\n", rope::to_string(l),
                  mode == rope::table_mode::dense ? "dense" : "compact",
                  static_cast<double>(worst / (0x1p-48L * 1.125L)));
      EXPECT_LE(worst, 0x1p-47L * 1.125L) << rope::to_string(l) << " mode " << static_cast<int>(mode)
                                           << ": worst " << static_cast<double>(worst / 0x1p-48L) << " * 2^-48";
    }
}

// Double tables' entries (dense and compact rows alike) are their exact value A cos(p w_j)
// (A sin) rounded once, give or take the halves' long double error: within half an ulp of the
// entry plus 2^-58 A, against oracle::cos_sin_of_product (the exact angle, long double cos and
// sin, error about 2^-63). That is what keeps a double round trip within testing.md's 6u r
// (apply_test, Inverse.RoundTripWithinItsBound). Rotary dim 128 to 2^24 + 1 positions and
// rotary dim 8 to 2^32 (the longest table), bases 1e4 and 1e7, A = 1 and A = 1.1902 (a YaRN
// factor), both layouts; where long double is no wider than double (MSVC, Apple arm64) entries
// are evaluated in double and this does not hold (skipped). ROPE_TEST_SCALE=quick (qemu, where
// long double is emulated): rotary dim 8 only.
TEST(Table, DoubleEntriesWithinHalfAnUlp) {
  if (!rope::detail::long_double_is_wider) GTEST_SKIP() << "long double is double here";
  std::vector<rope_test::double_entries_grid> grids = {{8, 1 << 16, std::int64_t{1} << 32}};
  if (!rope_test::quick_scale()) grids.push_back({128, 1 << 14, (std::int64_t{1} << 24) + 1});
  rope_test::double_entries_worst worst;
  rope_test::check_double_entries(
      grids, {1e4, 1e7}, {1.0, 1.1902380714238083},
      [](std::int64_t p, double w, ld& c, ld& s) {
        const oracle::cos_sin cs = oracle::cos_sin_of_product(p, w);
        c = cs.c;
        s = cs.s;
      },
      [](std::int64_t n) { return sampled_positions(n); }, worst);
  std::printf(
      "double entries: |entry - exact| <= %.4f * 2^-53 A, at most %.5f * 2^-53 A past half an "
      "ulp\n",
      static_cast<double>(worst.error), static_cast<double>(worst.excess));
}

// w_j within half an ulp (0.51 with the long double reference's own error) of base^(-2j/d),
// the README's promise, for every test head dim, a partial rotary dim and four bases. Many
// oracles elsewhere take their w_j from the table, so this is their guard. (Where long double
// is double, the reference itself is off by ulps: 64 there.)
TEST(Table, DefaultFrequenciesMatchFormula) {
  constexpr bool wide = std::numeric_limits<ld>::digits > 53;
  ld worst = 0;
  int checked = 0;
  for (int D : rope_test::kHeadDims)
    for (int d : {D, D / 2})
      for (double base : {1e4, 5e5, 1e6, 1e7}) {
        if (d < 2 || d % 2 != 0) continue;
        const auto f =
            rope::default_frequencies(rope::make_spec(D, d, base, rope::layout::half_split));
        ASSERT_EQ(f.inv_freq.size(), static_cast<std::size_t>(d / 2));
        const std::vector<ld> want = oracle::inv_freq(base, d);
        for (std::size_t j = 0; j < want.size(); ++j) {
          const ld off = oracle::ulps_off(f.inv_freq[j], want[j]);
          worst = std::max(worst, off);
          ++checked;
          ASSERT_LE(off, wide ? 0.51L : 64.0L)
              << "D=" << D << " d=" << d << " base=" << base << " j=" << j;
        }
      }
  std::printf("default frequencies: %d w_j, worst %.4Lf ulp of base^(-2j/d)\n", checked, worst);
}

TEST(Table, AutomaticModePicksCompactForLongContexts) {
  const rope::spec sp = rope::make_spec(128, 128, 1e4, rope::layout::half_split);
  auto small = rope::table<float>::build(rope::default_frequencies(sp), sp.layout, 4096);
  EXPECT_EQ(small->mode(), rope::table_mode::dense);
  auto big = rope::table<float>::build(rope::default_frequencies(sp), sp.layout, std::int64_t{1} << 20);
  EXPECT_EQ(big->mode(), rope::table_mode::compact);
  EXPECT_LE(big->bytes(), std::size_t{4} << 20) << "2^20 positions at head dim 128 in <= 4 MiB";
}

TEST(Cache, SameKeySameTableDifferentKeysDifferentTables) {
  rope::table_cache cache;
  const rope::spec a = rope::make_spec(128, 128, 1e4, rope::layout::half_split);
  rope::spec b = a;
  b.base = 1e6;
  rope::spec c = a;
  c.layout = rope::layout::interleaved;
  rope::spec d = a;
  d.rotary_dim = 64;
  rope::spec e = a;
  e.head_dim = 256;  // head_dim does not change the numbers: same table
  auto ta = cache.get<float>(a, 100);
  EXPECT_EQ(ta, cache.get<float>(a, 100));
  EXPECT_EQ(ta, cache.get<float>(e, 50));
  EXPECT_NE(static_cast<const void*>(ta.get()), static_cast<const void*>(cache.get<double>(a, 100).get()));
  EXPECT_NE(ta, cache.get<float>(b, 100));
  EXPECT_NE(ta, cache.get<float>(c, 100));
  EXPECT_NE(ta, cache.get<float>(d, 100));
  EXPECT_EQ(cache.builds(), 5u);
  EXPECT_EQ(cache.size(), 5u);
}

TEST(Cache, GrowingKeepsOldHandlesValid) {
  rope::table_cache cache;
  const rope::spec sp = rope::make_spec(64, 64, 1e4, rope::layout::interleaved);
  auto small = cache.get<float>(sp, 100);
  const std::vector<float> row99(small->row(99, nullptr), small->row(99, nullptr) + 2 * small->row_width());
  auto big = cache.get<float>(sp, 1000);
  EXPECT_NE(small, big);
  EXPECT_GE(big->length(), 1000);
  EXPECT_EQ(small->length(), 100);
  for (std::size_t i = 0; i < row99.size(); ++i) {
    EXPECT_EQ(small->row(99, nullptr)[i], row99[i]);
    EXPECT_EQ(big->row(99, nullptr)[i], row99[i]);
  }
  // Asking for fewer positions hands out the long table; growth at least doubles.
  EXPECT_EQ(cache.get<float>(sp, 10), big);
  auto bigger = cache.get<float>(sp, 1001);
  EXPECT_GE(bigger->length(), 2000);
  EXPECT_EQ(cache.builds(), 3u);
}

// The byte bound: the least recently requested key goes first, the table just built stays even
// when it alone is past the bound, dropped handles stay valid, and a dropped key is built again.
TEST(Cache, BoundedBytesDropLeastRecentlyRequested) {
  rope::table_cache cache;
  EXPECT_EQ(cache.max_bytes(), std::size_t{ROPE_TABLE_CACHE_MAX_BYTES});
  auto sp = [](double base) { return rope::make_spec(64, 64, base, rope::layout::half_split); };
  const std::size_t one =
      rope::table<float>::build(rope::default_frequencies(sp(1e4)), rope::layout::half_split, 1000)
          ->bytes();
  cache.set_max_bytes(3 * one);
  auto t0 = cache.get<float>(sp(1e4), 1000);
  auto t1 = cache.get<float>(sp(2e4), 1000);
  auto t2 = cache.get<float>(sp(3e4), 1000);
  EXPECT_EQ(cache.bytes(), 3 * one);
  EXPECT_EQ(cache.get<float>(sp(1e4), 1000), t0);  // touched: t1 is now the oldest
  const std::vector<float> row(t1->row(999, nullptr), t1->row(999, nullptr) + 2 * t1->row_width());
  auto t3 = cache.get<float>(sp(4e4), 1000);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.bytes(), 3 * one);
  EXPECT_EQ(cache.evictions(), 1u);
  EXPECT_EQ(cache.builds(), 4u);
  EXPECT_EQ(cache.get<float>(sp(1e4), 1000), t0);
  EXPECT_EQ(cache.get<float>(sp(3e4), 1000), t2);
  EXPECT_EQ(cache.get<float>(sp(4e4), 1000), t3);
  EXPECT_EQ(cache.builds(), 4u);
  EXPECT_EQ(std::memcmp(t1->row(999, nullptr), row.data(), row.size() * sizeof(float)), 0)
      << "a dropped table moved under its handle";
  auto t1b = cache.get<float>(sp(2e4), 1000);  // built again (and t0, now oldest, dropped)
  EXPECT_NE(t1b, t1);
  EXPECT_EQ(cache.builds(), 5u);
  EXPECT_EQ(cache.evictions(), 2u);
  EXPECT_EQ(std::memcmp(t1b->row(999, nullptr), row.data(), row.size() * sizeof(float)), 0);
  // Growth replaces a key's bytes; a table past the bound on its own is kept alone.
  auto big = cache.get<float>(sp(5e4), 10000);
  EXPECT_GT(big->bytes(), 3 * one);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), big->bytes());
  EXPECT_EQ(cache.get<float>(sp(5e4), 10000), big);
  cache.set_max_bytes(0);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
  cache.clear();
  EXPECT_EQ(cache.bytes(), 0u);
#if ROPE_HAS_EXCEPTIONS
  // A build that throws after the key was looked up (a dense table past max_dense_table_bytes)
  // leaves no key behind.
  EXPECT_THROW((void)cache.get<float>(sp(6e4), std::int64_t{1} << 30, rope::table_mode::dense),
               std::out_of_range);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
#endif
}

// The case that needed the bound: dynamic NTK decoding past M asks for a new key (a new base)
// every token. 100 tokens of 2048-position tables stay within the bound.
TEST(Cache, DynamicNtkDecodeLoopStaysWithinTheBound) {
  rope::table_cache cache;
  const rope::spec s = rope::make_spec(128, 128, 1e4, rope::layout::half_split);
  const rope::scaling sc = rope::scaling::dynamic_ntk(2.0, 1024);
  const std::size_t one =
      rope::table<float>::build(rope::compute_frequencies(s, sc, 1025).frequencies, s.layout, 2048)
          ->bytes();
  cache.set_max_bytes(8 * one);
  std::size_t most = 0;
  for (std::int64_t len = 1025; len < 1125; ++len) {
    const auto t =
        cache.get<float>(rope::compute_frequencies(s, sc, len).frequencies, s.layout, 2048);
    EXPECT_EQ(t->bytes(), one);
    most = std::max(most, cache.bytes());
  }
  EXPECT_EQ(cache.builds(), 100u);
  EXPECT_EQ(cache.size(), 8u);
  EXPECT_EQ(most, 8 * one);
  EXPECT_EQ(cache.evictions(), 92u);
}

TEST(Cache, IdentityDistinguishesMethodsWithEqualNumbers) {
  rope::table_cache cache;
  rope::frequencies f = rope::default_frequencies(rope::make_spec(16, 16, 1e4, rope::layout::half_split));
  rope::frequencies g = f;
  g.identity.push_back(32.0);  // e.g. a scaling parameter that happens not to change the numbers
  EXPECT_NE(cache.get<float>(f, rope::layout::half_split, 10), cache.get<float>(g, rope::layout::half_split, 10));
}

}  // namespace
