// rope/scaling.hpp: each method's frequencies against an independent long double evaluation
// of shared/rope-formulas.md and against its defining property; config resolution and every
// invalid-config error naming its key; table cache separation per parameter; re-rotation and
// position shift against the long double 2x2 oracle; long-context (compact) tables.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <rope/ggml.hpp>
#include <rope/scaling.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "oracle.hpp"

namespace {

using ld = long double;
constexpr ld kU = 0x1p-24L;
constexpr rope::layout kLayouts[] = {rope::layout::interleaved, rope::layout::half_split};
const ld kPi = 3.141592653589793238462643383279502884L;

rope::spec spec(int d, double base, rope::layout l = rope::layout::half_split, int head = 0) {
  return rope::make_spec(head ? head : d, d, base, l);
}

std::vector<ld> as_ld(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

// Largest |got_j - want_j| / |want_j|.
ld max_rel_err(const std::vector<double>& got, const std::vector<ld>& want) {
  EXPECT_EQ(got.size(), want.size());
  ld worst = 0;
  for (std::size_t j = 0; j < got.size() && j < want.size(); ++j)
    worst = std::max(worst, std::fabs(static_cast<ld>(got[j]) - want[j]) / want[j]);
  return worst;
}

using oracle::ulps_off;

// The frequency tests below hold a scaled w_j to 1.5 ulps of its formula evaluated in long
// double: that needs long double wider than double (x86's 64-bit significand, AArch64 Linux's
// 113), as the library's own evaluation does (rope/scaling.hpp, yarn).
constexpr bool kWideLongDouble = std::numeric_limits<ld>::digits > 53;
constexpr ld kMaxUlps = kWideLongDouble ? 1.5L : 64.0L;

// ---------------------------------------------------------------------------------------------
// Properties of each method.

TEST(Linear, IsDefaultWithPositionsDividedByTheFactor) {
  for (rope::layout l : kLayouts)
    for (double s : {2.0, 4.0, 8.0, 2.5}) {
      const rope::spec sp = spec(128, 1e4, l);
      const auto f =
          rope::compute_frequencies(sp, rope::scaling::linear_interpolation(s)).frequencies;
      const auto theta = oracle::inv_freq(1e4, 128);
      EXPECT_EQ(f.attention_factor, 1.0);
      auto tab = rope::table<float>::build(f, l, 1 << 21);
      std::mt19937_64 gen(7);
      std::uniform_real_distribution<float> dist(-1, 1);
      std::vector<float> x(128), y(128);
      ld worst = 0;
      for (std::int64_t p :
           {std::int64_t{0}, std::int64_t{1}, std::int64_t{3}, std::int64_t{4097},
            std::int64_t{123457}, std::int64_t{1} << 20, (std::int64_t{1} << 21) - 1}) {
        for (auto& v : x) v = dist(gen);
        ASSERT_EQ(rope::apply<float>(*tab, p, x.data(), y.data(), 128), rope::status::ok);
        // Default frequencies at position p / s, in long double.
        const auto want = oracle::rotate(x.data(), 128, 128, theta, l, static_cast<ld>(p) / s);
        for (std::size_t j = 0; j < 64; ++j) {
          const std::size_t i0 = oracle::first(l, j, 64), i1 = oracle::second(l, j, 64);
          const ld r = std::hypot(static_cast<ld>(x[i0]), static_cast<ld>(x[i1]));
          worst = std::max({worst, std::fabs(y[i0] - want[i0]) / (kU * r),
                            std::fabs(y[i1] - want[i1]) / (kU * r)});
        }
      }
      EXPECT_LE(worst, 3.0L) << "factor " << s;
    }
}

TEST(DynamicNtk, IsDefaultUpToMaxPositionsAndChangesTheBaseBeyond) {
  const rope::spec sp = spec(128, 1e4);
  const rope::scaling sc = rope::scaling::dynamic_ntk(2.0, 4096);
  const auto plain = rope::default_frequencies(sp);
  for (std::int64_t L : {1, 100, 4095, 4096}) {
    const auto r = rope::compute_frequencies(sp, sc, L);
    EXPECT_EQ(r.frequencies.inv_freq, plain.inv_freq) << "L=" << L;
    EXPECT_EQ(r.choice.effective_base, 1e4);
    EXPECT_EQ(r.choice.effective_seq_len, 4096);
  }
  const auto a = rope::compute_frequencies(sp, sc, 8192),
             b = rope::compute_frequencies(sp, sc, 16384);
  EXPECT_NE(a.choice, b.choice);
  EXPECT_GT(a.choice.effective_base, 1e4);
  EXPECT_GT(b.choice.effective_base, a.choice.effective_base);
  for (std::int64_t L :
       {std::int64_t{4097}, std::int64_t{8192}, std::int64_t{16384}, std::int64_t{1000001}}) {
    const auto r = rope::compute_frequencies(sp, sc, L);
    // b' = b * (s L / M - (s - 1))^(d / (d - 2)), w_j = b'^(-2j/d), in long double.
    const ld g = 2.0L * static_cast<ld>(L) / 4096 - 1;
    const ld base = 1e4L * std::pow(g, 128.0L / 126);
    EXPECT_LE(std::fabs(r.choice.effective_base - base) / base, 1e-15L) << "L=" << L;
    std::vector<ld> w(64);
    for (std::size_t j = 0; j < 64; ++j) w[j] = std::pow(base, -static_cast<ld>(2 * j) / 128);
    EXPECT_LE(max_rel_err(r.frequencies.inv_freq, w), 4e-15L) << "L=" << L;
    // The lowest frequency is interpolated by exactly g (the NTK property), the highest kept.
    EXPECT_EQ(r.frequencies.inv_freq[0], 1.0);
  }
}

TEST(StaticNtk, InterpolatesTheLowestFrequencyByTheFactorAndEqualsDynamicAtItsPoint) {
  for (int d : {4, 64, 128}) {
    const rope::spec sp = spec(d, 5e5);
    const double s = 4;
    const auto f = rope::compute_frequencies(sp, rope::scaling::ntk_static(s)).frequencies;
    const auto theta = oracle::inv_freq(5e5, d);
    const std::size_t last = static_cast<std::size_t>(d / 2 - 1);
    EXPECT_EQ(f.inv_freq[0], 1.0);
    EXPECT_LE(std::fabs(f.inv_freq[last] - theta[last] / s) / (theta[last] / s), 1e-14L);
    // dynamic at L = M (2s - 1) / s equals ntk (shared/rope-formulas.md section 5).
    const auto dyn =
        rope::compute_frequencies(sp, rope::scaling::dynamic_ntk(s, 4096), 4096 * 7 / 4);
    for (std::size_t j = 0; j <= last; ++j)
      EXPECT_NEAR(dyn.frequencies.inv_freq[j], f.inv_freq[j], 1e-15 * f.inv_freq[j]);
  }
}

TEST(Yarn, FrequenciesLieBetweenInterpolatedAndDefaultWithTheRamp) {
  // M0 = 65536 at d = 40 puts ceil(c(beta_slow)) = 21 past the last pair (19): HF clamps to
  // d - 1, so the ramp does not reach 1 inside the head (shared/rope-formulas.md 12.1).
  for (bool truncate : {true, false})
    for (int d : {40, 64, 128})
      for (double s : {4.0, 16.0, 40.0})
        for (std::int64_t m0 : {std::int64_t{4096}, std::int64_t{65536}}) {
          const rope::spec sp = spec(d, 1e4);
          rope::scaling sc = rope::scaling::yarn_scaling(s, m0);
          sc.truncate = truncate;
          const auto r = rope::compute_frequencies(sp, sc);
          const auto theta = oracle::inv_freq(1e4, d);
          // Independent ramp in long double.
          auto c = [&](ld n) {
            return d * std::log(static_cast<ld>(m0) / (n * 2 * kPi)) / (2 * std::log(1e4L));
          };
          ld lo = c(32), hi = c(1);
          if (truncate) lo = std::floor(lo), hi = std::ceil(hi);
          lo = std::max(lo, 0.0L);
          hi = std::min(hi, static_cast<ld>(d - 1));
          for (std::size_t j = 0; j < theta.size(); ++j) {
            const ld w = r.frequencies.inv_freq[j];
            EXPECT_LE(w, theta[j] * (1 + 1e-15L)) << "j=" << j;
            EXPECT_GE(w, theta[j] / s * (1 - 1e-15L)) << "j=" << j;
            const ld ramp = std::min(std::max((static_cast<ld>(j) - lo) / (hi - lo), 0.0L), 1.0L);
            const ld want = theta[j] * (1 - ramp) + theta[j] / s * ramp;
            // Without truncate the ramp's ends are fractional, and a rounding of them in double
            // is amplified up to s times in w_j (17.5 ulps for gpt-oss, below): 1.5 ulps here.
            EXPECT_LE(ulps_off(r.frequencies.inv_freq[j], want), kMaxUlps)
                << "d=" << d << " s=" << s << " m0=" << m0 << " truncate=" << truncate
                << " j=" << j;
            if (static_cast<ld>(j) <= lo) {
              EXPECT_LE(std::fabs(w - theta[j]) / theta[j], 1e-15L);
            }
          }
          EXPECT_DOUBLE_EQ(r.frequencies.attention_factor, 1 + 0.1 * std::log(s));
        }
}

// gpt-oss's rope (d = 64, b = 150000, s = 32, M0 = 4096, truncate false; golden case P21):
// its pairs 9-17 lie on a fractional ramp where 1 - r + r/s falls to 0.07, so a rounding of
// the ramp's ends in double put w_17 17.5 ulps off its formula and double outputs at
// p = 2^17..2^20 28-32x past their bound (an audit, stop 33). Now within 1.5 ulps.
TEST(Yarn, GptOssFractionalRampWithinAnUlpAndAHalf) {
  rope::scaling sc = rope::scaling::yarn_scaling(32, 4096);
  sc.truncate = false;
  const auto r = rope::compute_frequencies(spec(64, 150000), sc);
  const auto theta = oracle::inv_freq(150000, 64);
  auto c = [](ld n) {
    return 64 * std::log(4096.0L / (n * 2 * kPi)) / (2 * std::log(150000.0L));
  };
  const ld lo = c(32), hi = c(1);  // 8.09 and 17.40: inside [0, 63], no clamp
  ld worst = 0;
  for (std::size_t j = 0; j < theta.size(); ++j) {
    const ld ramp = std::min(std::max((static_cast<ld>(j) - lo) / (hi - lo), 0.0L), 1.0L);
    const ld want = theta[j] * (1 - ramp + ramp / 32);
    const ld u = ulps_off(r.frequencies.inv_freq[j], want);
    worst = std::max(worst, u);
    EXPECT_LE(u, kMaxUlps) << "j=" << j;
  }
  std::printf("gpt-oss yarn: w_j at most %.2f ulps from the formula\n", static_cast<double>(worst));
}

TEST(Yarn, AttentionFactorOverrideAndMscaleRatio) {
  const rope::spec sp = spec(64, 1e4);
  rope::scaling sc = rope::scaling::yarn_scaling(8, 4096);
  sc.mscale = 1;
  sc.mscale_all_dim = 0.5;
  EXPECT_NEAR(rope::compute_frequencies(sp, sc).frequencies.attention_factor,
              (1 + 0.1 * std::log(8.0)) / (1 + 0.05 * std::log(8.0)), 1e-16);
  sc.mscale_all_dim = 0;  // HF: 0 is "not set": back to 1 + 0.1 ln s
  EXPECT_NEAR(rope::compute_frequencies(sp, sc).frequencies.attention_factor,
              1 + 0.1 * std::log(8.0), 1e-16);
  sc.attention_factor = 1.25;
  EXPECT_EQ(rope::compute_frequencies(sp, sc).frequencies.attention_factor, 1.25);
  sc = rope::scaling::yarn_scaling(0.5, 4096);  // s <= 1: no temperature
  EXPECT_EQ(rope::compute_frequencies(sp, sc).frequencies.attention_factor, 1.0);
}

TEST(Llama3, BandsByWavelength) {
  for (double s : {8.0, 32.0})
    for (int d : {64, 128}) {
      const rope::spec sp = spec(d, 5e5);
      const auto r = rope::compute_frequencies(sp, rope::scaling::llama3_scaling(s, 1, 4, 8192));
      const auto theta = oracle::inv_freq(5e5, d);
      int high = 0, mid = 0, low = 0;
      for (std::size_t j = 0; j < theta.size(); ++j) {
        const ld lambda = 2 * kPi / theta[j];
        const ld w = r.frequencies.inv_freq[j];
        if (lambda < 8192.0L / 4) {
          ++high;
          EXPECT_LE(std::fabs(w - theta[j]) / theta[j], 2e-16L) << "unchanged j=" << j;
        } else if (lambda > 8192.0L) {
          ++low;
          EXPECT_LE(std::fabs(w - theta[j] / s) / (theta[j] / s), 2e-16L) << "divided j=" << j;
        } else {
          ++mid;
          const ld sigma = (8192 / lambda - 1) / 3;
          EXPECT_GE(sigma, 0);
          EXPECT_LE(sigma, 1);
          const ld want = (1 - sigma) * theta[j] / s + sigma * theta[j];
          EXPECT_LE(ulps_off(r.frequencies.inv_freq[j], want), kMaxUlps)
              << "smoothed j=" << j << " d=" << d << " s=" << s;
          EXPECT_LT(w, theta[j]);
          EXPECT_GT(w, theta[j] / s);
        }
      }
      EXPECT_GT(high, 0);
      EXPECT_GT(mid, 0);
      EXPECT_GT(low, 0);
      EXPECT_EQ(r.frequencies.attention_factor, 1.0);
    }
  // Llama 3.1 (d = 128, b = 5e5): pairs 0-28 untouched, 29-34 smoothed, 35-63 divided.
  const auto r =
      rope::compute_frequencies(spec(128, 5e5), rope::scaling::llama3_scaling(8, 1, 4, 8192));
  const auto theta = rope::default_frequencies(spec(128, 5e5)).inv_freq;
  for (std::size_t j = 0; j < 64; ++j) {
    if (j <= 28) {
      EXPECT_EQ(r.frequencies.inv_freq[j], theta[j]) << j;
    } else if (j >= 35) {
      EXPECT_EQ(r.frequencies.inv_freq[j], theta[j] / 8) << j;
    } else {
      EXPECT_TRUE(r.frequencies.inv_freq[j] < theta[j] && r.frequencies.inv_freq[j] > theta[j] / 8)
          << j;
    }
  }
}

rope::scaling longrope_example(std::size_t pairs, double factor = 32, std::int64_t m0 = 4096) {
  std::vector<double> sh(pairs), lg(pairs);
  for (std::size_t j = 0; j < pairs; ++j) {
    sh[j] = 1.0 + 0.01 * static_cast<double>(j);
    lg[j] = 1.0 + 0.5 * static_cast<double>(j);
  }
  return rope::scaling::longrope_scaling(sh, lg, factor, m0);
}

TEST(LongRope, ShortListIffSeqLenAtMostOriginalLength) {
  const rope::spec sp = spec(96, 1e4);
  const rope::scaling sc = longrope_example(48);
  const auto theta = oracle::inv_freq(1e4, 96);
  const ld a = std::sqrt(1 + std::log(32.0L) / std::log(4096.0L));
  for (std::int64_t L : {1, 2, 4095, 4096, 4097, 8192, 131072}) {
    const auto r = rope::compute_frequencies(sp, sc, L);
    const bool want_long = L > 4096;
    EXPECT_EQ(r.choice.list,
              want_long ? rope::factor_list::long_factors : rope::factor_list::short_factors);
    EXPECT_EQ(r.frequencies.description, want_long ? "longrope:long" : "longrope:short");
    const auto& e = want_long ? sc.long_factor : sc.short_factor;
    std::vector<ld> w(48);
    for (std::size_t j = 0; j < 48; ++j) w[j] = theta[j] / e[j];
    EXPECT_LE(max_rel_err(r.frequencies.inv_freq, w), 3e-16L);
    // The attention factor is the same for both lists.
    EXPECT_LE(std::fabs(r.frequencies.attention_factor - a), 3e-16L);
  }
  EXPECT_EQ(rope::compute_frequencies(sp, sc, 4096).choice,
            rope::compute_frequencies(sp, sc, 1).choice);
  EXPECT_NE(rope::compute_frequencies(sp, sc, 4096).choice,
            rope::compute_frequencies(sp, sc, 4097).choice);
}

// Phi-3.5-MoE's short_mscale / long_mscale: the attention factor of the list in use, over an
// explicit attention_factor and the computed A; an unset one leaves its list those. The
// frequencies do not move.
TEST(LongRope, PerListMscaleIsTheAttentionFactorOfThatList) {
  const rope::spec sp = spec(96, 1e4);
  const rope::scaling plain = longrope_example(48);
  const double computed = std::sqrt(1 + std::log(32.0) / std::log(4096.0));
  rope::scaling both = plain;
  both.short_mscale = 1.1;
  both.long_mscale = 1.3;
  rope::scaling long_only = plain;
  long_only.long_mscale = 1.3;
  rope::scaling over = both;
  over.attention_factor = 2.0;
  rope::scaling long_only_over = long_only;
  long_only_over.attention_factor = 2.0;
  for (std::int64_t L : {1, 4096, 4097, 131072}) {
    const bool lg = L > 4096;
    const auto p = rope::compute_frequencies(sp, plain, L).frequencies;
    const auto check = [&](const rope::scaling& sc, double want, const char* what) {
      const auto r = rope::compute_frequencies(sp, sc, L);
      EXPECT_EQ(r.frequencies.attention_factor, want) << what << " L=" << L;
      EXPECT_EQ(r.frequencies.inv_freq, p.inv_freq) << what << " L=" << L;
      EXPECT_EQ(r.choice.list, lg ? rope::factor_list::long_factors
                                  : rope::factor_list::short_factors);
    };
    EXPECT_LE(std::fabs(p.attention_factor - computed), 3e-16) << L;
    check(both, lg ? 1.3 : 1.1, "both");
    check(over, lg ? 1.3 : 1.1, "both over attention_factor");
    check(long_only, lg ? 1.3 : p.attention_factor, "long only");
    check(long_only_over, lg ? 1.3 : 2.0, "long only, attention_factor");
  }
  // M0 = 1 makes ln M0 = 0 in the computed A (refused where a list would use it, in
  // Scaling.ValidateNamesTheKeyForDirectlyBuiltScalings); with both mscales nothing does.
  rope::scaling m1 = longrope_example(48, 32, 1);
  m1.short_mscale = 1.1;
  m1.long_mscale = 1.3;
  EXPECT_EQ(rope::compute_frequencies(sp, m1, 1).frequencies.attention_factor, 1.1);
  EXPECT_EQ(rope::compute_frequencies(sp, m1, 2).frequencies.attention_factor, 1.3);
}

// Every method's w_j within half an ulp of its formula evaluated in long double (0.51: the
// rounding of a long double result to double can add 2^-11 ulp). In double, theta_j's own
// rounding and the division's (or the NTK base's) put w_j up to 1.28 ulps off in this grid
// (the shipped golden file P29's own w_j are up to 4 ulps off): double outputs at angles near
// 10^6 carry that error times the angle. Yarn's and Llama 3's blends are held to 1.5 ulps above.
TEST(Scaling, EveryMethodWithinHalfAnUlpOfItsFormula) {
  const ld bound = kWideLongDouble ? 0.51L : 64.0L;
  ld worst = 0;
  auto check = [&](const std::vector<double>& got, const std::vector<ld>& want,
                   const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t j = 0; j < got.size(); ++j) {
      const ld u = ulps_off(got[j], want[j]);
      worst = std::max(worst, u);
      EXPECT_LE(u, bound) << what << " j=" << j;
    }
  };
  for (int d : {20, 64, 96, 128})
    for (double b : {1e4, 5e5, 1e6}) {
      const rope::spec sp = spec(d, b);
      const std::string at = " d=" + std::to_string(d) + " b=" + std::to_string(b);
      const auto theta = oracle::inv_freq(b, d);
      const std::size_t pairs = theta.size();
      for (double s : {2.5, 3.0, 7.0, 40.0}) {
        std::vector<ld> want(pairs);
        for (std::size_t j = 0; j < pairs; ++j) want[j] = theta[j] / static_cast<ld>(s);
        check(rope::compute_frequencies(sp, rope::scaling::linear_interpolation(s))
                  .frequencies.inv_freq,
              want, "linear s=" + std::to_string(s) + at);
        // proportional: the linear numbers on the first third of the pairs, zeros after.
        const int k = static_cast<int>(pairs / 3);
        const auto prop =
            rope::compute_frequencies(sp, rope::scaling::proportional_rotation(k, s)).frequencies;
        check({prop.inv_freq.begin(), prop.inv_freq.begin() + k}, {want.begin(), want.begin() + k},
              "proportional s=" + std::to_string(s) + at);
        for (std::size_t j = static_cast<std::size_t>(k); j < pairs; ++j)
          EXPECT_EQ(prop.inv_freq[j], 0.0) << "proportional" << at << " j=" << j;
        // NTK: b' = b s^(d/(d-2)); dynamic at L = 3M with factor s: g = 3s - (s - 1).
        for (auto [g, L] : {std::pair<ld, std::int64_t>{static_cast<ld>(s), 0},
                            {3 * static_cast<ld>(s) - (static_cast<ld>(s) - 1), 3 * 4096}}) {
          const ld base = static_cast<ld>(b) * std::pow(g, static_cast<ld>(d) / (d - 2));
          for (std::size_t j = 0; j < pairs; ++j)
            want[j] = std::pow(base, -static_cast<ld>(2 * j) / static_cast<ld>(d));
          const rope::scaling sc =
              L ? rope::scaling::dynamic_ntk(s, 4096) : rope::scaling::ntk_static(s);
          check(rope::compute_frequencies(sp, sc, L).frequencies.inv_freq, want,
                std::string(L ? "dynamic" : "ntk") + " s=" + std::to_string(s) + at);
        }
      }
      const rope::scaling lr = longrope_example(pairs);
      for (std::int64_t L : {std::int64_t{4096}, std::int64_t{4097}}) {
        const auto& e = L > 4096 ? lr.long_factor : lr.short_factor;
        std::vector<ld> want(pairs);
        for (std::size_t j = 0; j < pairs; ++j) want[j] = theta[j] / static_cast<ld>(e[j]);
        check(rope::compute_frequencies(sp, lr, L).frequencies.inv_freq, want,
              "longrope L=" + std::to_string(L) + at);
      }
      // Llama 3's low band (wavelength past M0 / low_freq_factor): theta_j / s.
      const auto l3 = rope::compute_frequencies(sp, rope::scaling::llama3_scaling(8, 1, 4, 8192));
      for (std::size_t j = 0; j < pairs; ++j)
        if (2 * kPi / theta[j] > 8192.0L) {
          const ld u = ulps_off(l3.frequencies.inv_freq[j], theta[j] / 8);
          worst = std::max(worst, u);
          EXPECT_LE(u, bound) << "llama3 low band j=" << j << at;
        }
    }
  std::printf(
      "linear, ntk, dynamic, longrope, llama3 (low band), proportional: w_j at most %.3Lf "
      "ulps from the formula\n",
      worst);
}

TEST(Scaling, NoneIsExactlyTheDefault) {
  const rope::spec sp = spec(64, 1e4);
  const auto r = rope::compute_frequencies(sp, rope::scaling{});
  const auto d = rope::default_frequencies(sp);
  EXPECT_EQ(r.frequencies.inv_freq, d.inv_freq);
  EXPECT_EQ(r.frequencies.identity, d.identity);
  EXPECT_EQ(r.frequencies.attention_factor, 1.0);
}

// ---------------------------------------------------------------------------------------------
// From a model's config.

rope::model_config llama_like() {
  rope::model_config cfg;
  cfg.rope_theta = 5e5;
  cfg.hidden_size = 4096;
  cfg.num_attention_heads = 32;
  cfg.max_position_embeddings = 131072;
  return cfg;
}

TEST(FromConfig, ResolvesDefaultsAsHfDoes) {
  // Llama 3.1: head_dim from hidden_size / heads.
  rope::model_config cfg = llama_like();
  cfg.rope_scaling = {{"rope_type", "llama3"},
                      {"factor", 8},
                      {"low_freq_factor", 1},
                      {"high_freq_factor", 4},
                      {"original_max_position_embeddings", 8192}};
  auto m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.spec.head_dim, 128);
  EXPECT_EQ(m.spec.rotary_dim, 128);
  EXPECT_EQ(m.spec.base, 5e5);
  EXPECT_EQ(m.scaling.type, rope::scaling_type::llama3);
  EXPECT_EQ(m.scaling.original_max_position_embeddings, 8192);
  // Without the key, HF main's M0 is max_position_embeddings (required in HF v4.x); the top
  // level's original_max_position_embeddings comes first.
  cfg.rope_scaling.erase("original_max_position_embeddings");
  EXPECT_EQ(
      rope::from_config(cfg, rope::layout::half_split).scaling.original_max_position_embeddings,
      131072);
  cfg.original_max_position_embeddings = 8192;
  EXPECT_EQ(
      rope::from_config(cfg, rope::layout::half_split).scaling.original_max_position_embeddings,
      8192);

  // `type` is an alias of `rope_type`; yarn's falsy defaults and M0 fallback.
  cfg = llama_like();
  cfg.max_position_embeddings = 32768;
  cfg.rope_scaling = {
      {"type", "yarn"}, {"factor", 4}, {"beta_fast", 0}, {"beta_slow", 0}, {"mscale", 0}};
  m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.scaling.type, rope::scaling_type::yarn);
  EXPECT_EQ(m.scaling.beta_fast, 32);
  EXPECT_EQ(m.scaling.beta_slow, 1);
  EXPECT_EQ(m.scaling.original_max_position_embeddings, 32768);
  EXPECT_TRUE(m.scaling.truncate);
  EXPECT_FALSE(m.scaling.attention_factor.has_value());

  // yarn with an explicit null factor: max_position_embeddings / M0 (HF main); a null
  // elsewhere is an absent key. Same frequencies as the explicit factor.
  cfg = llama_like();
  cfg.max_position_embeddings = 131072;
  cfg.rope_scaling = {{"rope_type", "yarn"},
                      {"factor", nullptr},
                      {"original_max_position_embeddings", 4096},
                      {"attention_factor", nullptr}};
  m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.scaling.factor, 32.0);
  EXPECT_FALSE(m.scaling.attention_factor.has_value());
  rope::model_config explicit_cfg = cfg;
  explicit_cfg.rope_scaling = {
      {"rope_type", "yarn"}, {"factor", 32}, {"original_max_position_embeddings", 4096}};
  const rope::scaled_spec e = rope::from_config(explicit_cfg, rope::layout::half_split);
  const rope::frequencies fn = rope::compute_frequencies(m.spec, m.scaling, 0).frequencies;
  const rope::frequencies fe = rope::compute_frequencies(e.spec, e.scaling, 0).frequencies;
  EXPECT_EQ(fn.inv_freq, fe.inv_freq);
  EXPECT_EQ(fn.attention_factor, fe.attention_factor);
  EXPECT_NE(fn.inv_freq, rope::default_frequencies(m.spec).inv_freq);

  // yarn's truncate null does not truncate (HF: `if truncate:` on the null), as false does; a
  // null M0 in the map is replaced by the top-level field (HF's standardisation), not refused.
  {
    rope::model_config t = explicit_cfg;
    t.rope_scaling["beta_fast"] = 30.5;  // ends off the integers, so truncation changes w_j
    t.rope_scaling["truncate"] = nullptr;
    rope::model_config f = t;
    f.rope_scaling["truncate"] = false;
    rope::model_config on = t;
    on.rope_scaling.erase("truncate");
    const rope::scaled_spec mt = rope::from_config(t, rope::layout::half_split);
    EXPECT_FALSE(mt.scaling.truncate);
    const auto freq = [](const rope::scaled_spec& x) {
      return rope::compute_frequencies(x.spec, x.scaling, 0).frequencies.inv_freq;
    };
    EXPECT_EQ(freq(mt), freq(rope::from_config(f, rope::layout::half_split)));
    EXPECT_NE(freq(mt), freq(rope::from_config(on, rope::layout::half_split)));
    rope::model_config top = explicit_cfg;
    top.rope_scaling["original_max_position_embeddings"] = nullptr;
    top.original_max_position_embeddings = 4096;
    const rope::scaled_spec mo = rope::from_config(top, rope::layout::half_split);
    EXPECT_EQ(mo.scaling.original_max_position_embeddings, 4096);
    EXPECT_EQ(freq(mo), fe.inv_freq);
  }

  // Phi-3 style longrope: top-level original_max_position_embeddings, factor from the ratio,
  // partial rotary factor.
  cfg = rope::model_config{};
  cfg.rope_theta = 1e4;
  cfg.head_dim = 128;
  cfg.partial_rotary_factor = 0.75;
  cfg.max_position_embeddings = 131072;
  cfg.original_max_position_embeddings = 4096;
  cfg.rope_scaling = {{"rope_type", "longrope"},
                      {"short_factor", std::vector<double>(48, 1.0)},
                      {"long_factor", std::vector<double>(48, 2.0)},
                      {"original_max_position_embeddings", 2048}};  // the top level wins
  m = rope::from_config(cfg, rope::layout::interleaved);
  EXPECT_EQ(m.spec.rotary_dim, 96);
  EXPECT_EQ(m.scaling.original_max_position_embeddings, 4096);
  EXPECT_EQ(m.scaling.factor, 32.0);
  // "su", LongRoPE's first name (Phi-3 configs, `type`): the same scaling, both lists.
  {
    rope::model_config su = cfg;
    su.rope_scaling.erase("rope_type");
    su.rope_scaling["type"] = "su";
    const rope::scaled_spec s = rope::from_config(su, rope::layout::interleaved);
    EXPECT_EQ(s.scaling.type, rope::scaling_type::longrope);
    for (std::int64_t len : {std::int64_t{4096}, std::int64_t{4097}}) {
      const auto fs = rope::compute_frequencies(s.spec, s.scaling, len);
      const auto fl = rope::compute_frequencies(m.spec, m.scaling, len);
      EXPECT_EQ(fs.frequencies.inv_freq, fl.frequencies.inv_freq) << len;
      EXPECT_EQ(fs.frequencies.attention_factor, fl.frequencies.attention_factor) << len;
      EXPECT_EQ(fs.choice.list, len > 4096 ? rope::factor_list::long_factors
                                           : rope::factor_list::short_factors);
    }
  }

  // v5 rope_parameters carry rope_theta and partial_rotary_factor.
  cfg = llama_like();
  cfg.rope_scaling = {
      {"rope_type", "default"}, {"rope_theta", 1e6}, {"partial_rotary_factor", 0.5}};
  m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.spec.base, 1e6);
  EXPECT_EQ(m.spec.rotary_dim, 64);
  EXPECT_EQ(m.scaling.type, rope::scaling_type::none);

  // No rope_scaling at all: plain RoPE; unknown keys are ignored as HF does.
  cfg = llama_like();
  cfg.rope_scaling = {{"finetuned", true}};
  EXPECT_EQ(rope::from_config(cfg, rope::layout::half_split).scaling.type,
            rope::scaling_type::none);
}

// Phi-3.5-MoE's config.json: type longrope with short_mscale = long_mscale = 1.243163121016122
// (HF's PhimoeRotaryEmbedding and vLLM multiply cos and sin by them), where the computed A
// would be sqrt(1 + ln 32 / ln 4096) = 1.1902...: both lists take the config's value, and the
// frequencies are those of the config without the two keys.
TEST(FromConfig, Phi35MoeMscalesAreTheAttentionFactor) {
  rope::model_config cfg;
  cfg.rope_theta = 1e4;
  cfg.hidden_size = 4096;
  cfg.num_attention_heads = 32;
  cfg.max_position_embeddings = 131072;
  cfg.original_max_position_embeddings = 4096;
  std::vector<double> sh(64), lg(64);
  for (std::size_t j = 0; j < 64; ++j) {
    sh[j] = 1.0 + 0.05 * static_cast<double>(j % 8);
    lg[j] = 1.0 + 0.9 * static_cast<double>(j);
  }
  cfg.rope_scaling = {{"type", "longrope"},
                      {"short_factor", sh},
                      {"long_factor", lg},
                      {"original_max_position_embeddings", 4096}};
  const rope::scaled_spec without = rope::from_config(cfg, rope::layout::half_split);
  cfg.rope_scaling["short_mscale"] = 1.243163121016122;
  cfg.rope_scaling["long_mscale"] = 1.243163121016122;
  const rope::scaled_spec with = rope::from_config(cfg, rope::layout::half_split);
  ASSERT_TRUE(with.scaling.short_mscale && with.scaling.long_mscale);
  EXPECT_EQ(*with.scaling.short_mscale, 1.243163121016122);
  EXPECT_EQ(*with.scaling.long_mscale, 1.243163121016122);
  EXPECT_EQ(with.spec.rotary_dim, 128);
  for (std::int64_t L : {std::int64_t{1}, std::int64_t{4096}, std::int64_t{4097},
                         std::int64_t{131072}}) {
    const auto fw = rope::compute_frequencies(with.spec, with.scaling, L);
    const auto fo = rope::compute_frequencies(without.spec, without.scaling, L);
    EXPECT_EQ(fw.frequencies.attention_factor, 1.243163121016122) << L;
    EXPECT_LE(std::fabs(fo.frequencies.attention_factor -
                        std::sqrt(1 + std::log(32.0L) / std::log(4096.0L))),
              3e-16L)
        << L;
    EXPECT_EQ(fw.frequencies.inv_freq, fo.frequencies.inv_freq) << L;
    EXPECT_EQ(fw.choice.list, L > 4096 ? rope::factor_list::long_factors
                                       : rope::factor_list::short_factors);
    // The tables differ (A is in them), and a float table's entries carry the config's A.
    const auto tw = rope::get_table<float>(with.spec, with.scaling, L, 4100);
    const auto to = rope::get_table<float>(without.spec, without.scaling, L, 4100);
    EXPECT_NE(tw, to);
    EXPECT_EQ(tw->attention_factor(), 1.243163121016122);
  }
  // Distinct values: each list its own A.
  cfg.rope_scaling["long_mscale"] = 1.5;
  const rope::scaled_spec distinct = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(rope::compute_frequencies(distinct.spec, distinct.scaling, 4096)
                .frequencies.attention_factor,
            1.243163121016122);
  EXPECT_EQ(rope::compute_frequencies(distinct.spec, distinct.scaling, 4097)
                .frequencies.attention_factor,
            1.5);
}

// Configs HF and vLLM run that rope refused or read wrongly before: Kimi K2 (YaRN with
// beta_fast = beta_slow = 1), Llama 4 Scout (Llama 3 bands with low_freq_factor =
// high_freq_factor = 1), Hunyuan (dynamic with alpha: a fixed NTK base). Each against its
// formula in long double.
TEST(FromConfig, KimiK2YarnWithEqualBetas) {
  // Kimi K2 (DeepSeek-V3 architecture): c(1) = 64 ln(4096 / 2 pi) / (2 ln 50000) = 19.2
  rope::model_config cfg;
  cfg.rope_theta = 50000;
  cfg.hidden_size = 7168;
  cfg.num_attention_heads = 64;
  cfg.qk_rope_head_dim = 64;
  cfg.max_position_embeddings = 131072;
  cfg.rope_scaling = {{"type", "yarn"},           {"factor", 32},
                      {"beta_fast", 1.0},         {"beta_slow", 1.0},
                      {"mscale", 1.0},            {"mscale_all_dim", 1.0},
                      {"original_max_position_embeddings", 4096}};
  const rope::scaled_spec m = rope::from_config(cfg, rope::layout::interleaved);
  const auto r = rope::compute_frequencies(m.spec, m.scaling);
  const ld c1 = 64 * std::log(4096.0L / (2 * kPi)) / (2 * std::log(50000.0L));
  ASSERT_GT(c1, 19);
  ASSERT_LT(c1, 20);
  const auto theta = oracle::inv_freq(50000, 64);
  std::vector<ld> want(32);
  for (std::size_t j = 0; j < 32; ++j) want[j] = j <= 19 ? theta[j] : theta[j] / 32;
  EXPECT_LE(max_rel_err(r.frequencies.inv_freq, want), 3e-16L);
  EXPECT_EQ(r.frequencies.attention_factor, 1.0);  // mscale / mscale_all_dim
  EXPECT_EQ(r.frequencies.description, "yarn:factor=32,ramp=[19,20]");
}

TEST(FromConfig, Llama4ScoutEqualBandFactors) {
  {  // Llama 4 Scout: theta_j / 16 where the wavelength exceeds 8192, else theta_j
    rope::model_config cfg;
    cfg.rope_theta = 500000;
    cfg.head_dim = 128;
    cfg.max_position_embeddings = 10485760;
    cfg.rope_scaling = {{"rope_type", "llama3"},
                        {"factor", 16},
                        {"low_freq_factor", 1},
                        {"high_freq_factor", 1},
                        {"original_max_position_embeddings", 8192}};
    const rope::scaled_spec m = rope::from_config(cfg, rope::layout::interleaved);
    const auto r = rope::compute_frequencies(m.spec, m.scaling);
    const auto theta = oracle::inv_freq(500000, 128);
    std::vector<ld> want(64);
    std::size_t divided = 0;
    for (std::size_t j = 0; j < 64; ++j) {
      const bool low = 2 * kPi / theta[j] > 8192;
      want[j] = low ? theta[j] / 16 : theta[j];
      divided += low ? 1 : 0;
    }
    EXPECT_EQ(divided, 29u);  // pairs 35-63
    EXPECT_LE(max_rel_err(r.frequencies.inv_freq, want), 3e-16L);
    EXPECT_EQ(r.frequencies.attention_factor, 1.0);
  }
  {  // A pair whose wavelength is exactly M0 / low_freq_factor (pair 0: 2 pi / 1, with M0 = 6
     // and low_freq_factor 6 / (2 pi) in double): theta_j / factor, vLLM's choice (HF: 0/0).
    const double pi = 3.141592653589793;
    const rope::spec sp = spec(8, 1e4);
    ASSERT_EQ(2 * pi / 1.0, 6.0 / (6.0 / (2 * pi)));
    const rope::scaling sc = rope::scaling::llama3_scaling(4, 6.0 / (2 * pi), 6.0 / (2 * pi), 6);
    const auto r = rope::compute_frequencies(sp, sc).frequencies;
    EXPECT_EQ(r.inv_freq[0], 0.25);
    for (double w : r.inv_freq) EXPECT_TRUE(std::isfinite(w));
  }
}

TEST(FromConfig, HunyuanAlphaIsAFixedNtkBase) {
  // Hunyuan-A13B: "dynamic" with alpha 1000 (and factor 1): base 1e4 * 1000^(128/126)
  rope::model_config cfg;
  cfg.rope_theta = 10000;
  cfg.head_dim = 128;
  cfg.max_position_embeddings = 32768;
  cfg.rope_scaling = {{"type", "dynamic"}, {"alpha", 1000.0}, {"factor", 1.0}};
  const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.scaling.type, rope::scaling_type::ntk);
  const ld base = 10000 * std::pow(1000.0L, 128.0L / 126.0L);
  std::vector<ld> want(64);
  for (std::size_t j = 0; j < 64; ++j)
    want[j] = std::pow(base, -2 * static_cast<ld>(j) / 128);
  for (std::int64_t L : {std::int64_t{1}, std::int64_t{32768}, std::int64_t{1} << 20}) {
    const auto r = rope::compute_frequencies(m.spec, m.scaling, L);
    EXPECT_LE(max_rel_err(r.frequencies.inv_freq, want), 4e-16L) << L;
    EXPECT_EQ(r.frequencies.attention_factor, 1.0);
  }
  // alpha = 0 reads as "not set" (HF's truthiness): plain dynamic NTK with factor 1.
  cfg.rope_scaling["alpha"] = 0.0;
  EXPECT_EQ(rope::from_config(cfg, rope::layout::half_split).scaling.type,
            rope::scaling_type::dynamic_ntk);
}

// Grok-2 keeps rope_type "original" at its config's top level beside YaRN-like keys
// (scaling_factor 16, beta_fast 8, ...). sglang's Grok code takes the unscaled frequencies for
// "original" and multiplies cos and sin by no mscale; vLLM's maps it to default. Put in the map
// with those keys, from_config gives plain RoPE: theta^(-2j/128), A = 1.
TEST(FromConfig, Grok2OriginalIsPlainRope) {
  rope::model_config cfg;
  cfg.rope_theta = 208533496;
  cfg.head_dim = 128;
  cfg.max_position_embeddings = 131072;
  cfg.rope_scaling = {{"rope_type", "original"},  {"original_max_position_embeddings", 8192},
                      {"scaling_factor", 16.0},   {"extrapolation_factor", 1.0},
                      {"attn_factor", 1.0},       {"beta_fast", 8},
                      {"beta_slow", 1}};
  const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.scaling.type, rope::scaling_type::none);
  EXPECT_EQ(m.spec.rotary_dim, 128);
  const std::vector<ld> want = oracle::inv_freq(208533496, 128);
  for (std::int64_t L : {std::int64_t{1}, std::int64_t{8192}, std::int64_t{1} << 20}) {
    const auto r = rope::compute_frequencies(m.spec, m.scaling, L);
    EXPECT_LE(max_rel_err(r.frequencies.inv_freq, want), 4e-16L) << L;
    EXPECT_EQ(r.frequencies.attention_factor, 1.0);
  }
}

// GTE's embedding models (model_type "new"; gte-large-en-v1.5: theta 160000, heads of 64,
// {"type": "ntk", "factor": 2}) mean by "ntk" what their code and vLLM compute,
// w_j = (b s)^(-2j/d) / s^(2/d); without that model_type "ntk" is rope's b s^(d/(d-2)).
TEST(FromConfig, GteNtkIsVllmsFormula) {
  for (const int d : {64, 96}) {
    for (const double s : {2.0, 8.0, 1.5}) {
      rope::model_config cfg;
      cfg.rope_theta = 160000;
      cfg.head_dim = d;
      cfg.model_type = "new";
      cfg.rope_scaling = {{"type", "ntk"}, {"factor", s}};
      const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);
      const auto r = rope::compute_frequencies(m.spec, m.scaling);
      const ld b = 160000.0L * s, sl = s;
      std::vector<ld> want(static_cast<std::size_t>(d / 2));
      for (std::size_t j = 0; j < want.size(); ++j)
        want[j] = std::pow(b, -2 * static_cast<ld>(j) / d) / std::pow(sl, 2.0L / d);
      EXPECT_LE(max_rel_err(r.frequencies.inv_freq, want), 4e-16L) << d << " " << s;
      EXPECT_EQ(r.frequencies.attention_factor, 1.0);
      // The lowest frequency is interpolated by s, as in rope's ntk; the others differ.
      EXPECT_NEAR(static_cast<double>(want.back() / oracle::inv_freq(160000, d).back()), 1 / s,
                  1e-15);
      cfg.model_type = "";
      const rope::scaled_spec own = rope::from_config(cfg, rope::layout::half_split);
      EXPECT_EQ(own.scaling.type, rope::scaling_type::ntk);
      const auto r_own = rope::compute_frequencies(own.spec, own.scaling);
      EXPECT_GT(max_rel_err(r_own.frequencies.inv_freq, want), 1e-3L) << d << " " << s;
    }
  }
}

// TeleChat3's rope_type "telechat3-yarn", as vLLM's TeleChat3RoPEScaledRotaryEmbedding computes
// it: YaRN's frequencies with cos and sin times A = (0.07 ln s + 1) * attn_factor (attn_factor
// alone for s <= 1), where plain YaRN has 0.1 ln s + 1. Telechat3-36B's config: theta 1e6,
// head_dim 128, factor 4, M0 8192, max_position_embeddings 32768, betas 32 / 1.
rope::model_config telechat3_36b() {
  rope::model_config c;
  c.rope_theta = 1e6;
  c.head_dim = 128;
  c.max_position_embeddings = 32768;
  c.rope_scaling = {{"rope_type", "telechat3-yarn"}, {"factor", 4.0},
                    {"original_max_position_embeddings", 8192}};
  return c;
}

TEST(FromConfig, TeleChat3YarnIsVllmsFormula) {
  for (const int d : {128, 64, 96}) {
    for (const double s : {4.0, 2.5, 1.0, 0.5}) {
      for (const double attn : {1.0, 0.75}) {
        rope::model_config cfg;
        cfg.rope_theta = 1e6;
        cfg.head_dim = d;
        cfg.max_position_embeddings = static_cast<std::int64_t>(8192 * s);
        cfg.rope_scaling = {{"rope_type", "telechat3-yarn"},
                            {"type", "telechat3-yarn"},
                            {"factor", s},
                            {"original_max_position_embeddings", 8192},
                            {"beta_fast", 32},
                            {"beta_slow", 1}};
        if (attn != 1.0) cfg.rope_scaling["attn_factor"] = attn;
        const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);
        const auto r = rope::compute_frequencies(m.spec, m.scaling);
        const ld want_a = (s <= 1 ? 1.0L : 0.07L * std::log(static_cast<ld>(s)) + 1.0L) * attn;
        EXPECT_NEAR(static_cast<double>(r.frequencies.attention_factor / want_a - 1), 0.0, 4e-16)
            << d << " " << s << " " << attn;
        // The frequencies are plain YaRN's, bit for bit (its A differs: 0.1 ln s + 1).
        cfg.rope_scaling["rope_type"] = "yarn";
        cfg.rope_scaling["type"] = "yarn";
        const rope::scaled_spec y = rope::from_config(cfg, rope::layout::half_split);
        const auto ry = rope::compute_frequencies(y.spec, y.scaling);
        EXPECT_EQ(r.frequencies.inv_freq, ry.frequencies.inv_freq) << d << " " << s;
        if (s > 1) {
          EXPECT_NEAR(ry.frequencies.attention_factor, 0.1 * std::log(s) + 1, 1e-15);
          EXPECT_NE(r.frequencies.attention_factor, ry.frequencies.attention_factor);
        }
      }
    }
  }
  // The 36B config's A, written out: 0.07 ln 4 + 1.
  rope::model_config cfg = telechat3_36b();
  const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_NEAR(rope::compute_frequencies(m.spec, m.scaling).frequencies.attention_factor,
              1.0970406052783923, 1e-15);
  // Written out too: s = 2.5 with attn_factor 0.75 is (0.07 ln 2.5 + 1) * 0.75, and s <= 1
  // leaves attn_factor alone.
  const auto a_of = [](std::map<std::string, rope::config_value> rs, std::int64_t max_pos,
                       std::int64_t top_level_m0 = 0) {
    rope::model_config c = telechat3_36b();
    c.max_position_embeddings = max_pos;
    c.original_max_position_embeddings = top_level_m0;
    c.rope_scaling = std::move(rs);
    const rope::scaled_spec sp = rope::from_config(c, rope::layout::half_split);
    return rope::compute_frequencies(sp.spec, sp.scaling).frequencies.attention_factor;
  };
  EXPECT_NEAR(a_of({{"rope_type", "telechat3-yarn"}, {"factor", 2.5}, {"attn_factor", 0.75}},
                   20480),
              0.7981052634233932, 1e-15);
  EXPECT_EQ(a_of({{"rope_type", "telechat3-yarn"}, {"factor", 0.5}, {"attn_factor", 0.75}}, 4096),
            0.75);
  // A top-level M0 (HF's standardisation, vLLM's config patching) counts as the key does; the
  // keys vLLM reads at their defaults are accepted.
  EXPECT_NEAR(a_of({{"rope_type", "telechat3-yarn"},
                    {"factor", 8.0},
                    {"truncate", true},
                    {"extrapolation_factor", 1.0}},
                   65536, 8192),
              1.1455609079175886, 1e-15);
  // Without M0 in the config vLLM takes M0 = max_position_embeddings and s = factor.
  cfg.rope_scaling.erase("original_max_position_embeddings");
  const rope::scaled_spec n = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(n.scaling.original_max_position_embeddings, 32768);
  EXPECT_EQ(n.scaling.factor, 4.0);
  EXPECT_NEAR(rope::compute_frequencies(n.spec, n.scaling).frequencies.attention_factor,
              1.0970406052783923, 1e-15);
}

// Gemma 4's global (full-attention) layers: rope_type "proportional" over global_head_dim 512
// with partial_rotary_factor 0.25 and theta 1e6 (HF's rope_parameters entry "full_attention").
// HF builds 256 frequencies, 1e6^(-2j/512) for j < int(0.25 * 512 // 2) = 64 and 0 for the
// other 192, and rotates with rotate_half over the whole head: pairs (j, j + 256) for j < 64
// rotate, dims 64-255 and 320-511 pass through.
TEST(Proportional, Gemma4GlobalLayerRotatesTheFirst64Of256HalfSplitPairs) {
  rope::model_config cfg;
  cfg.head_dim = 512;  // the engine passes global_head_dim for the full-attention entry
  cfg.max_position_embeddings = 131072;
  cfg.rope_scaling = {
      {"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}};
  const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.spec.head_dim, 512);
  EXPECT_EQ(m.spec.rotary_dim, 512);
  EXPECT_EQ(m.spec.base, 1e6);
  EXPECT_EQ(m.scaling.type, rope::scaling_type::proportional);
  EXPECT_EQ(m.scaling.rotated_pairs, 64);
  EXPECT_EQ(m.scaling.factor, 1.0);
  const rope::frequencies f = rope::compute_frequencies(m.spec, m.scaling).frequencies;
  ASSERT_EQ(f.inv_freq.size(), 256u);
  EXPECT_EQ(f.attention_factor, 1.0);
  EXPECT_EQ(f.description, "proportional:pairs=64,factor=1");
  const auto theta = oracle::inv_freq(1e6, 512);  // exponent over the whole head, not over 128
  std::vector<ld> w(256, 0.0L);
  for (std::size_t j = 0; j < 64; ++j) {
    w[j] = theta[j];
    EXPECT_LE(ulps_off(f.inv_freq[j], theta[j]), kWideLongDouble ? 0.51L : 64.0L) << j;
  }
  for (std::size_t j = 64; j < 256; ++j) EXPECT_EQ(f.inv_freq[j], 0.0) << j;
  // Not partial RoPE: rotary_dim 128 would pair j with j + 64 and use 1e6^(-2j/128).
  EXPECT_NE(f.inv_freq[1],
            rope::default_frequencies(rope::make_spec(512, 128, 1e6, rope::layout::half_split))
                .inv_freq[1]);

  // Rotated against the long double 2x2 oracle; the pass-through dims unchanged bit for bit,
  // fixed and dynamic Dim, in place and out of place.
  auto tab = rope::table<float>::build(f, rope::layout::half_split, std::int64_t{1} << 20,
                                       rope::table_mode::compact);
  std::mt19937_64 gen(41);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(512), y(512), z(512);
  ld worst = 0;
  for (std::int64_t p : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{8191},
                         std::int64_t{131071}, (std::int64_t{1} << 20) - 1}) {
    for (auto& v : x) v = dist(gen);
    std::copy(x.begin(), x.end(), y.begin());
    ASSERT_EQ((rope::apply<float, 512>(*tab, p, y.data())), rope::status::ok);
    ASSERT_EQ(rope::apply<float>(*tab, p, x.data(), z.data(), 512), rope::status::ok);
    EXPECT_EQ(y, z) << p;
    const auto want =
        oracle::rotate(x.data(), 512, 512, w, rope::layout::half_split, static_cast<ld>(p));
    for (std::size_t j = 0; j < 64; ++j) {
      const ld r = std::hypot(static_cast<ld>(x[j]), static_cast<ld>(x[j + 256]));
      worst = std::max({worst, std::fabs(y[j] - want[j]) / (kU * r),
                        std::fabs(y[j + 256] - want[j + 256]) / (kU * r)});
    }
    for (std::size_t k = 0; k < 512; ++k) {
      if ((k % 256) >= 64) {
        EXPECT_EQ(std::memcmp(&y[k], &x[k], sizeof(float)), 0) << k;
      }
    }
    if (p == 7) {
      EXPECT_NE(y[0], x[0]);  // pair 0 does rotate
    }
  }
  EXPECT_LE(worst, 3.0L);
  std::printf(
      "proportional (Gemma 4 global, D = 512): rotated pairs within %.3Lf * 2^-24 * r of "
      "the oracle, 384 dims unchanged\n",
      worst);

  // Gemma 4's sliding-window entry is plain RoPE over head_dim 256.
  cfg.head_dim = 256;
  cfg.rope_scaling = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  const rope::scaled_spec sliding = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(sliding.spec.rotary_dim, 256);
  EXPECT_EQ(sliding.scaling.type, rope::scaling_type::none);

  // A factor divides the rotated frequencies (HF: inv_freq /= factor). HF's
  // int(rho * head_dim // 2) floors the product rounded to double: 0.58 * 100 is
  // 57.99999999999999 there, so 28 of 50 pairs rotate (the exact product, 58, would give 29,
  // and so would rounding 28.999999999999996).
  cfg.head_dim = 100;
  cfg.rope_scaling = {{"rope_type", "proportional"},
                      {"partial_rotary_factor", 0.58},
                      {"rope_theta", 1000000.0},
                      {"factor", 8}};
  const rope::scaled_spec m2 = rope::from_config(cfg, rope::layout::interleaved);
  EXPECT_EQ(m2.spec.rotary_dim, 100);
  EXPECT_EQ(m2.scaling.rotated_pairs, 28);
  const rope::frequencies f2 = rope::compute_frequencies(m2.spec, m2.scaling).frequencies;
  const auto theta2 = oracle::inv_freq(1e6, 100);
  for (std::size_t j = 0; j < 50; ++j) {
    if (j < 28) {
      EXPECT_LE(ulps_off(f2.inv_freq[j], theta2[j] / 8), kWideLongDouble ? 0.51L : 64.0L) << j;
    } else {
      EXPECT_EQ(f2.inv_freq[j], 0.0) << j;
    }
  }
}

TEST(Proportional, PassThroughPairsKeepTheirBitsIn16BitStorage) {
  // cos 0 = 1 and sin 0 = 0 exactly, so x * 1 - y * 0 is x: fp16 and bf16 keys of the
  // pass-through pairs come out with their own bits (finite, nonzero values; as in HF, a NaN
  // partner makes the sum NaN, and -0 + 0 is +0).
  const rope::spec sp = rope::make_spec(64, 64, 1e6, rope::layout::half_split);
  const rope::frequencies f =
      rope::compute_frequencies(sp, rope::scaling::proportional_rotation(8)).frequencies;
  auto tab = rope::table<float>::build(f, sp.layout, 4096);
  auto run = [&](auto tag, const char* name) {
    using T = decltype(tag);
    std::mt19937 gen(3);
    std::uniform_real_distribution<float> dist(-4, 4);
    std::vector<T> x(64);
    for (auto& v : x) v = rope::storage_traits<T>::store(dist(gen));
    std::vector<T> y = x;
    ASSERT_EQ((rope::apply<T, 64>(*tab, 4000, y.data())), rope::status::ok);
    for (std::size_t k = 0; k < 64; ++k) {
      if ((k % 32) >= 8) {
        EXPECT_EQ(std::memcmp(&y[k], &x[k], sizeof(T)), 0) << name << " dim " << k;
      }
    }
    EXPECT_NE(std::memcmp(&y[0], &x[0], sizeof(T)), 0) << name;
  };
  run(rope::float16{}, "fp16");
  run(rope::bfloat16{}, "bf16");
}

// DeepSeek-V3's config.json (multi-head latent attention) has no head_dim, and hidden_size /
// num_attention_heads = 7168 / 128 = 56 is not the rotated width: qk_rope_head_dim (64) is.
TEST(FromConfig, MlaRotatesQkRopeHeadDim) {
  rope::model_config cfg;
  cfg.rope_theta = 10000;
  cfg.hidden_size = 7168;
  cfg.num_attention_heads = 128;
  cfg.max_position_embeddings = 163840;
  cfg.rope_scaling = {{"type", "yarn"},
                      {"factor", 40},
                      {"original_max_position_embeddings", 4096},
                      {"beta_fast", 32},
                      {"beta_slow", 1},
                      {"mscale", 1.0},
                      {"mscale_all_dim", 1.0}};
  EXPECT_EQ(rope::from_config(cfg, rope::layout::interleaved).spec.rotary_dim, 56);
  cfg.qk_rope_head_dim = 64;
  const rope::scaled_spec m = rope::from_config(cfg, rope::layout::interleaved);
  EXPECT_EQ(m.spec.head_dim, 64);
  EXPECT_EQ(m.spec.rotary_dim, 64);
  EXPECT_EQ(m.spec.layout, rope::layout::interleaved);
  cfg.head_dim = 192;  // qk_nope_head_dim + qk_rope_head_dim: the rotated width stays 64
  EXPECT_EQ(rope::from_config(cfg, rope::layout::interleaved).spec.rotary_dim, 64);
  const auto r = rope::compute_frequencies(m.spec, m.scaling);
  EXPECT_EQ(r.frequencies.attention_factor, 1.0);  // mscale == mscale_all_dim
  // w_j against the yarn formula at d = 64 in long double (truncated ramp ends: 10 and 23).
  const auto theta = oracle::inv_freq(1e4, 64);
  auto c = [](ld n) { return 64 * std::log(4096.0L / (n * 2 * kPi)) / (2 * std::log(1e4L)); };
  const ld lo = std::floor(c(32)), hi = std::ceil(c(1));
  ASSERT_EQ(r.frequencies.inv_freq.size(), theta.size());
  for (std::size_t j = 0; j < theta.size(); ++j) {
    const ld ramp = std::min(std::max((static_cast<ld>(j) - lo) / (hi - lo), 0.0L), 1.0L);
    EXPECT_LE(ulps_off(r.frequencies.inv_freq[j], theta[j] * (1 - ramp + ramp / 40)), kMaxUlps)
        << "j=" << j;
  }
}

// MLA configs that carry a partial_rotary_factor giving qk_rope_head_dim as a share of head_dim
// (Bailing's Ring-2.5 / Ling V3: head_dim 128, factor 0.5, qk_rope_head_dim 64, theta 6e5;
// Mistral 4: qk_rope_head_dim / head_dim = 64 / 192) rotate all 64 dims at theta^(-2j/64), as
// vLLM and Bailing's own code do; 0.5 applied to 64 would rotate 32 at other frequencies. A
// factor that does not name qk_rope_head_dim is refused, naming it.
// FoPE's keys null (HF writes absent keys so) or use_fope false leave plain RoPE; any of them
// set is refused (the bad-config table).
TEST(FromConfig, FopeKeysNullOrOffReadAsPlainRope) {
  rope::model_config cfg;
  cfg.head_dim = 128;
  cfg.rope_theta = 5e6;
  cfg.rope_scaling = {{"rope_type", "default"},
                      {"fope_init_factor", nullptr},
                      {"fope_sep_head", nullptr},
                      {"num_inv_freq", nullptr},
                      {"use_fope", false}};
  const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.scaling.type, rope::scaling_type::none);
  EXPECT_EQ(m.spec.rotary_dim, 128);
  EXPECT_EQ(m.spec.base, 5e6);
}

TEST(FromConfig, MlaFactorNamingQkRopeHeadDimRotatesAllOfIt) {
  rope::model_config cfg;
  cfg.rope_theta = 6e5;
  cfg.head_dim = 128;
  cfg.hidden_size = 4096;
  cfg.num_attention_heads = 32;
  cfg.partial_rotary_factor = 0.5;
  cfg.qk_rope_head_dim = 64;
  for (const bool in_map : {false, true}) {
    if (in_map) {  // v5: the factor inside rope_parameters overrides the top-level one
      cfg.partial_rotary_factor = 1;
      cfg.rope_scaling = {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}};
    }
    const rope::scaled_spec m = rope::from_config(cfg, rope::layout::interleaved);
    EXPECT_EQ(m.spec.head_dim, 64);
    EXPECT_EQ(m.spec.rotary_dim, 64);
    const auto r = rope::compute_frequencies(m.spec, m.scaling);
    const auto theta = oracle::inv_freq(6e5, 64);
    ASSERT_EQ(r.frequencies.inv_freq.size(), theta.size());
    for (std::size_t j = 0; j < theta.size(); ++j)
      EXPECT_LE(ulps_off(r.frequencies.inv_freq[j], theta[j]), kMaxUlps) << "j=" << j;
  }
  cfg.rope_scaling.clear();
  cfg.head_dim = 192;  // Mistral 4's shape: 64 / 192 is not exact in double
  cfg.partial_rotary_factor = 64.0 / 192.0;
  EXPECT_EQ(rope::from_config(cfg, rope::layout::interleaved).spec.rotary_dim, 64);
#if ROPE_HAS_EXCEPTIONS  // without exceptions, from_config's errors go to the handler
  const auto refused = [&](const char* what) {
    try {
      (void)rope::from_config(cfg, rope::layout::interleaved);
      ADD_FAILURE() << what << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("partial_rotary_factor"), std::string::npos)
          << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("qk_rope_head_dim=64"), std::string::npos)
          << what << ": " << e.what();
    }
  };
  cfg.head_dim = 64;  // head_dim pointed at qk_rope_head_dim (HF's DeepSeek configs): 0.5 of it
  cfg.partial_rotary_factor = 0.5;
  refused("head_dim 64, factor 0.5");
  cfg.head_dim = 0;  // no head_dim to check the share against
  refused("no head_dim");
  cfg.head_dim = 128;
  cfg.partial_rotary_factor = 0.25;
  refused("head_dim 128, factor 0.25");
#endif
}

TEST(FromConfig, BracedListsAndLongRopeAtTinyHeads) {
  // Lists written inline, integers and bools as a JSON parser would hand them over.
  rope::model_config cfg;
  cfg.head_dim = 4;
  cfg.max_position_embeddings = 8192;
  cfg.rope_scaling = {{"rope_type", "longrope"},
                      {"short_factor", {1.0, 2.0}},
                      {"long_factor", {3.0, 5.0}},
                      {"original_max_position_embeddings", 2048},
                      {"finetuned", true}};
  const rope::scaled_spec m = rope::from_config(cfg, rope::layout::interleaved);
  EXPECT_EQ(m.scaling.factor, 4.0);
  const auto r = rope::compute_frequencies(m.spec, m.scaling, 2049);
  EXPECT_EQ(r.frequencies.inv_freq[0], 1.0 / 3.0);
  EXPECT_EQ(r.frequencies.inv_freq[1], 0.01 / 5.0);
  EXPECT_EQ(r.choice.list, rope::factor_list::long_factors);
  EXPECT_NEAR(r.frequencies.attention_factor, std::sqrt(1 + std::log(4.0) / std::log(2048.0)),
              1e-16);
}

#if ROPE_HAS_EXCEPTIONS  // without exceptions, cold-path errors go to the handler (tests/noexcept_test.cpp)
template <class F>
void expect_error_naming(F&& f, const std::string& needle, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no exception; expected one naming '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << what << ": message '" << e.what() << "' does not name '" << needle << "'";
  } catch (...) {
    ADD_FAILURE() << what << ": not std::invalid_argument";
  }
}

struct bad_config {
  std::string what;
  std::map<std::string, rope::config_value> rope_scaling;
  std::string key;
  std::function<void(rope::model_config&)> adjust = nullptr;
};

TEST(FromConfig, EveryInvalidConfigIsAnErrorNamingTheKey) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> ok64(64, 1.0);
  std::vector<double> short63(63, 1.0), zero_entry = ok64, neg_entry = ok64, nan_entry = ok64;
  zero_entry[17] = 0;
  neg_entry[3] = -1;
  nan_entry[5] = nan;
  const std::vector<bad_config> cases = {
      {"unknown rope_type", {{"rope_type", "su-per"}}, "rope_type=\"su-per\""},
      {"vLLM's mixed NTK", {{"rope_type", "ntk"}, {"factor", 4}, {"mixed_b", 0.625}},
       "mixed_b=0.625"},
      {"GTE's ntk base not > 1",
       {{"type", "ntk"}, {"factor", 9.5367431640625e-07}},  // 2^-20: 5e5 * 2^-20 < 1
       "factor=9.5367431640625e-07",
       [](rope::model_config& c) { c.model_type = "new"; }},
      {"rope_type not a string", {{"rope_type", 3}}, "rope_type"},
      {"linear without factor", {{"rope_type", "linear"}}, "factor"},
      {"ntk without factor", {{"rope_type", "ntk"}}, "factor"},
      {"dynamic without factor", {{"rope_type", "dynamic"}}, "factor"},
      {"yarn without factor", {{"rope_type", "yarn"}}, "factor"},
      {"llama3 without factor",
       {{"rope_type", "llama3"},
        {"low_freq_factor", 1},
        {"high_freq_factor", 4},
        {"original_max_position_embeddings", 8192}},
       "factor"},
      {"llama3 without low_freq_factor",
       {{"rope_type", "llama3"},
        {"factor", 8},
        {"high_freq_factor", 4},
        {"original_max_position_embeddings", 8192}},
       "low_freq_factor"},
      {"llama3 without high_freq_factor",
       {{"rope_type", "llama3"},
        {"factor", 8},
        {"low_freq_factor", 1},
        {"original_max_position_embeddings", 8192}},
       "high_freq_factor"},
      {"llama3 without any M0",
       {{"rope_type", "llama3"}, {"factor", 8}, {"low_freq_factor", 1}, {"high_freq_factor", 4}},
       "original_max_position_embeddings",
       [](rope::model_config& c) { c.max_position_embeddings = 0; }},
      {"longrope without short_factor",
       {{"rope_type", "longrope"}, {"long_factor", ok64}},
       "short_factor"},
      {"longrope without long_factor",
       {{"rope_type", "longrope"}, {"short_factor", ok64}},
       "long_factor"},
      {"dynamic without max_position_embeddings",
       {{"rope_type", "dynamic"}, {"factor", 2}},
       "max_position_embeddings",
       [](rope::model_config& c) { c.max_position_embeddings = 0; }},
      {"yarn without any M0",
       {{"rope_type", "yarn"}, {"factor", 2}},
       "original_max_position_embeddings",
       [](rope::model_config& c) { c.max_position_embeddings = 0; }},
      {"linear factor 0", {{"rope_type", "linear"}, {"factor", 0}}, "factor=0"},
      {"linear factor -2", {{"rope_type", "linear"}, {"factor", -2}}, "factor=-2"},
      {"ntk factor 0", {{"rope_type", "ntk"}, {"factor", 0.0}}, "factor=0"},
      {"dynamic factor -1", {{"rope_type", "dynamic"}, {"factor", -1}}, "factor=-1"},
      {"yarn factor 0", {{"rope_type", "yarn"}, {"factor", 0}}, "factor=0"},
      {"llama3 factor 0",
       {{"rope_type", "llama3"},
        {"factor", 0},
        {"low_freq_factor", 1},
        {"high_freq_factor", 4},
        {"original_max_position_embeddings", 8192}},
       "factor=0"},
      {"longrope factor -1",
       {{"rope_type", "longrope"}, {"factor", -1}, {"short_factor", ok64}, {"long_factor", ok64}},
       "factor=-1"},
      {"factor NaN", {{"rope_type", "linear"}, {"factor", nan}}, "factor"},
      {"factor Inf", {{"rope_type", "yarn"}, {"factor", inf}}, "factor"},
      {"factor a string", {{"rope_type", "linear"}, {"factor", "4"}}, "factor"},
      {"factor a list", {{"rope_type", "linear"}, {"factor", std::vector<double>{4}}}, "factor"},
      {"beta_fast < beta_slow",
       {{"rope_type", "yarn"}, {"factor", 4}, {"beta_fast", 1}, {"beta_slow", 2}},
       "beta_fast"},
      {"beta_slow negative",
       {{"rope_type", "yarn"}, {"factor", 4}, {"beta_slow", -1}},
       "beta_slow"},
      {"beta_fast NaN", {{"rope_type", "yarn"}, {"factor", 4}, {"beta_fast", nan}}, "beta_fast"},
      {"mscale Inf", {{"rope_type", "yarn"}, {"factor", 4}, {"mscale", inf}}, "mscale"},
      {"mscale_all_dim NaN",
       {{"rope_type", "yarn"}, {"factor", 4}, {"mscale", 1}, {"mscale_all_dim", nan}},
       "mscale_all_dim"},
      {"yarn attention_factor NaN",
       {{"rope_type", "yarn"}, {"factor", 4}, {"attention_factor", nan}},
       "attention_factor"},
      {"yarn attention_factor 0",
       {{"rope_type", "yarn"}, {"factor", 4}, {"attention_factor", 0}},
       "attention_factor"},
      {"truncate a number", {{"rope_type", "yarn"}, {"factor", 4}, {"truncate", 1}}, "truncate"},
      {"yarn M0 not an integer",
       {{"rope_type", "yarn"}, {"factor", 4}, {"original_max_position_embeddings", 4096.5}},
       "original_max_position_embeddings"},
      {"dynamic alpha negative (Hunyuan's key)",
       {{"rope_type", "dynamic"}, {"factor", 1}, {"alpha", -2}},
       "alpha=-2"},
      {"dynamic alpha not a number",
       {{"rope_type", "dynamic"}, {"factor", 1}, {"alpha", "1000"}},
       "alpha"},
      {"dynamic alpha so small the base falls below 1",
       {{"rope_type", "dynamic"}, {"factor", 1}, {"alpha", 0x1p-20}},
       "alpha=9.5367431640625e-07 gives the base"},
      {"dynamic alpha at rotary_dim 2",
       {{"rope_type", "dynamic"}, {"alpha", 1000}},
       "alpha=1000 needs rotary_dim >= 4",
       [](rope::model_config& c) { c.head_dim = 2; }},
      {"yarn factor null without max_position_embeddings",
       {{"rope_type", "yarn"}, {"factor", nullptr}, {"original_max_position_embeddings", 4096}},
       "factor=null",
       [](rope::model_config& c) { c.max_position_embeddings = 0; }},
      {"llama3 factor null", {{"rope_type", "llama3"}, {"factor", nullptr}}, "factor"},
      {"rope_theta null: no RoPE (OLMo Hybrid), not the top-level base",
       {{"rope_type", "default"}, {"rope_theta", nullptr}},
       "rope_theta=null means the model has no RoPE"},
      // Other nulls HF fails on rather than reading as absent.
      {"partial_rotary_factor null (HF's .get returns it)",
       {{"rope_type", "default"}, {"partial_rotary_factor", nullptr}},
       "partial_rotary_factor=null"},
      {"mrope_section null (HF and vLLM test for the key)",
       {{"rope_type", "default"}, {"mrope_section", nullptr}},
       "mrope_section=null"},
      {"yarn M0 null without the top-level field",
       {{"rope_type", "yarn"}, {"factor", 4}, {"original_max_position_embeddings", nullptr}},
       "original_max_position_embeddings=null"},
      {"llama3 M0 null without the top-level field",
       {{"rope_type", "llama3"},
        {"factor", 8},
        {"low_freq_factor", 1},
        {"high_freq_factor", 4},
        {"original_max_position_embeddings", nullptr}},
       "original_max_position_embeddings=null"},
      {"longrope M0 null without the top-level field",
       {{"rope_type", "longrope"},
        {"short_factor", ok64},
        {"long_factor", ok64},
        {"factor", 4},
        {"original_max_position_embeddings", nullptr}},
       "original_max_position_embeddings=null"},
      {"proportional factor null (HF's .get returns it)",
       {{"rope_type", "proportional"}, {"factor", nullptr}},
       "factor=null"},
      {"yarn without factor, M0 or max_position_embeddings",
       {{"rope_type", "yarn"}},
       "missing required key factor",
       [](rope::model_config& c) { c.max_position_embeddings = 0; }},
      {"yarn factor null without M0 or max_position_embeddings",
       {{"rope_type", "yarn"}, {"factor", nullptr}},
       "factor=null",
       [](rope::model_config& c) { c.max_position_embeddings = 0; }},
      {"longrope without factor or max_position_embeddings",
       {{"rope_type", "longrope"},
        {"short_factor", ok64},
        {"long_factor", ok64},
        {"original_max_position_embeddings", 4096}},
       "missing required key factor",
       [](rope::model_config& c) { c.max_position_embeddings = 0; }},
      {"low > high (reversed bands)",
       {{"rope_type", "llama3"},
        {"factor", 8},
        {"low_freq_factor", 4},
        {"high_freq_factor", 1},
        {"original_max_position_embeddings", 8192}},
       "low_freq_factor"},
      {"longrope M0 1: ln M0 = 0 in the attention factor",
       {{"rope_type", "longrope"},
        {"short_factor", ok64},
        {"long_factor", ok64},
        {"factor", 4},
        {"original_max_position_embeddings", 1}},
       "original_max_position_embeddings"},
      {"low_freq_factor Inf",
       {{"rope_type", "llama3"},
        {"factor", 8},
        {"low_freq_factor", inf},
        {"high_freq_factor", 2},
        {"original_max_position_embeddings", 8192}},
       "low_freq_factor"},
      {"short list too short",
       {{"rope_type", "longrope"}, {"short_factor", short63}, {"long_factor", ok64}},
       "short_factor"},
      {"long list too long",
       {{"rope_type", "longrope"},
        {"short_factor", ok64},
        {"long_factor", std::vector<double>(65, 1.0)}},
       "long_factor"},
      {"list entry 0",
       {{"rope_type", "longrope"}, {"short_factor", ok64}, {"long_factor", zero_entry}},
       "long_factor[17]"},
      {"list entry negative",
       {{"rope_type", "longrope"}, {"short_factor", neg_entry}, {"long_factor", ok64}},
       "short_factor[3]"},
      {"list entry NaN",
       {{"rope_type", "longrope"}, {"short_factor", ok64}, {"long_factor", nan_entry}},
       "long_factor[5]"},
      {"list not a list",
       {{"rope_type", "longrope"}, {"short_factor", 1.0}, {"long_factor", ok64}},
       "short_factor"},
      {"longrope attention_factor Inf",
       {{"rope_type", "longrope"},
        {"short_factor", ok64},
        {"long_factor", ok64},
        {"attention_factor", inf}},
       "attention_factor"},
      {"longrope short_mscale 0",
       {{"rope_type", "longrope"},
        {"short_factor", ok64},
        {"long_factor", ok64},
        {"short_mscale", 0}},
       "short_mscale=0"},
      {"longrope long_mscale not a number",
       {{"rope_type", "longrope"},
        {"short_factor", ok64},
        {"long_factor", ok64},
        {"long_mscale", "1.24"}},
       "long_mscale"},
      {"NaN in an unused key",
       {{"rope_type", "linear"}, {"factor", 2}, {"beta_fast", nan}},
       "beta_fast"},
      {"rope_theta NaN", {}, "rope_theta", [&](rope::model_config& c) { c.rope_theta = nan; }},
      {"rope_theta 1", {}, "rope_theta", [](rope::model_config& c) { c.rope_theta = 1; }},
      {"rope_theta Inf in the map", {{"rope_theta", inf}}, "rope_theta"},
      {"partial_rotary_factor NaN",
       {},
       "partial_rotary_factor",
       [&](rope::model_config& c) { c.partial_rotary_factor = nan; }},
      {"partial_rotary_factor 1.5",
       {},
       "partial_rotary_factor",
       [](rope::model_config& c) { c.partial_rotary_factor = 1.5; }},
      {"partial_rotary_factor 0",
       {},
       "partial_rotary_factor",
       [](rope::model_config& c) { c.partial_rotary_factor = 0; }},
      {"odd rotary dim",
       {},
       "partial_rotary_factor",
       [](rope::model_config& c) { c.partial_rotary_factor = 0.1015625; }},
      {"no head_dim and no heads",
       {},
       "head_dim",
       [](rope::model_config& c) { c.num_attention_heads = 0; }},
      {"odd head_dim, whole of it rotated",
       {},
       "head_dim=33",
       [](rope::model_config& c) { c.head_dim = 33; }},
      {"odd head_dim from hidden_size / heads",
       {},
       "head_dim=33",
       [](rope::model_config& c) {
         c.head_dim = 0;
         c.hidden_size = 99;
         c.num_attention_heads = 3;
       }},
      {"qk_rope_head_dim negative",
       {},
       "qk_rope_head_dim",
       [](rope::model_config& c) { c.qk_rope_head_dim = -64; }},
      {"odd qk_rope_head_dim",
       {},
       "qk_rope_head_dim=33",
       [](rope::model_config& c) { c.qk_rope_head_dim = 33; }},
      {"ntk with rotary_dim 2",
       {{"rope_type", "ntk"}, {"factor", 2}},
       "rotary_dim",
       [](rope::model_config& c) { c.head_dim = 2; }},
      {"dynamic with rotary_dim 2",
       {{"rope_type", "dynamic"}, {"factor", 2}},
       "rotary_dim",
       [](rope::model_config& c) {
         c.head_dim = 64;
         c.partial_rotary_factor = 1.0 / 32;
       }},
      // proportional: int(rho * head_dim // 2) = int(0.01 * 128 / 2) = 0 pairs would rotate.
      {"proportional rotating no pair",
       {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.01}},
       "partial_rotary_factor=0.01"},
      {"proportional factor 0", {{"rope_type", "proportional"}, {"factor", 0}}, "factor=0"},
      // FoPE (Intern-S1-Pro): any of its keys not null switches it on in vLLM and sglang.
      {"FoPE init factor", {{"rope_type", "default"}, {"fope_init_factor", 0.1}}, "fope_init_factor=0.1"},
      {"FoPE separate heads false", {{"fope_sep_head", false}}, "fope_sep_head=false"},
      {"FoPE frequency count", {{"num_inv_freq", 48}}, "num_inv_freq=48"},
      {"use_fope true", {{"use_fope", true}}, "use_fope=true"},
      {"sglang's GLM M-RoPE order",
       {{"mrope_section", {16, 24, 24}}, {"mrope_interleaved_glm", true}},
       "mrope_interleaved_glm=true"},
      {"proportional factor not a number",
       {{"rope_type", "proportional"}, {"factor", "8"}},
       "factor"},
      {"proportional over an odd head_dim",  // rho 0.5 would give an even rotary_dim 16
       {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.5}},
       "head_dim=33",
       [](rope::model_config& c) { c.head_dim = 33; }},
  };
  for (const auto& bc : cases) {
    rope::model_config cfg = llama_like();
    cfg.rope_scaling = bc.rope_scaling;
    if (bc.adjust) bc.adjust(cfg);
    expect_error_naming([&] { (void)rope::from_config(cfg, rope::layout::half_split); }, bc.key,
                        bc.what);
  }
  // An unknown type given as `type` is named by that key, not rope_type (the message starts
  // with the key; a substring check would also match "rope_type=").
  rope::model_config alias_cfg = llama_like();
  alias_cfg.rope_scaling = {{"type", "nope"}};
  try {
    (void)rope::from_config(alias_cfg, rope::layout::half_split);
    ADD_FAILURE() << "type=nope accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("type=\"nope\" ", 0), 0u) << e.what();
  }
}

// telechat3-yarn's keys that vLLM does not read (or refuses) are refused, not read as plain
// yarn would; so is a factor that disagrees with max_position_embeddings / M0.
TEST(FromConfig, TeleChat3YarnRefusesWhatVllmDoesNotRead) {
  const auto base = telechat3_36b;
  (void)rope::from_config(base(), rope::layout::half_split);  // the unchanged config is read
  const std::vector<std::pair<std::string, rope::config_value>> extra = {
      {"mscale", 1.0},         {"mscale_all_dim", 1.0},      {"attention_factor", 1.0},
      {"truncate", false},     {"extrapolation_factor", 2.0}, {"attn_factor", 0.0},
      {"attn_factor", -1.0},   {"beta_fast", 0.0},            {"beta_slow", 0.0},
      {"factor", nullptr},     {"truncate", nullptr}};
  for (const auto& [key, value] : extra) {
    rope::model_config c = base();
    c.rope_scaling[key] = value;
    expect_error_naming([&] { (void)rope::from_config(c, rope::layout::half_split); }, key + "=",
                        "telechat3-yarn with " + key);
  }
  {  // M-RoPE sections: vLLM's telechat3-yarn builds no M-RoPE
    rope::model_config c = base();
    c.rope_scaling["mrope_section"] = std::vector<double>{16, 24, 24};
    expect_error_naming([&] { (void)rope::from_config(c, rope::layout::half_split); },
                        "mrope_section=", "telechat3-yarn with mrope_section");
  }
  {  // a top-level M0 is checked against the lengths as the key is
    rope::model_config c = base();
    c.rope_scaling.erase("original_max_position_embeddings");
    c.original_max_position_embeddings = 4096;  // 32768 / 4096 = 8, not 4
    expect_error_naming([&] { (void)rope::from_config(c, rope::layout::half_split); },
                        "factor=4 disagrees", "telechat3 top-level M0");
  }
  rope::model_config c = base();
  c.max_position_embeddings = 65536;  // vLLM would use 65536 / 8192 = 8, mlx-lm 4
  expect_error_naming([&] { (void)rope::from_config(c, rope::layout::half_split); },
                      "factor=4 disagrees with max_position_embeddings", "telechat3 lengths");
  c.rope_scaling["rope_type"] = "yarn";  // plain yarn reads factor, as HF does
  EXPECT_EQ(rope::from_config(c, rope::layout::half_split).scaling.factor, 4.0);
  c = base();
  c.rope_scaling["factor"] = 0.0;
  expect_error_naming([&] { (void)rope::from_config(c, rope::layout::half_split); }, "factor=0",
                      "telechat3 factor 0");
}

TEST(Scaling, ValidateNamesTheKeyForDirectlyBuiltScalings) {
  const rope::spec sp = spec(64, 1e4);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto expect = [&](rope::scaling sc, const std::string& key, const std::string& what,
                    std::int64_t seq_len = 100) {
    expect_error_naming([&] { (void)rope::compute_frequencies(sp, sc, seq_len); }, key, what);
  };
  expect(rope::scaling::linear_interpolation(0), "factor=0", "linear 0");
  expect(rope::scaling::linear_interpolation(nan), "factor=nan", "linear NaN");
  expect(rope::scaling::dynamic_ntk(2, 0), "max_position_embeddings", "dynamic M=0");
  expect(rope::scaling::dynamic_ntk(2, 4096), "seq_len", "dynamic without seq_len", 0);
  expect(longrope_example(32), "seq_len", "longrope without seq_len", 0);
  expect(rope::scaling::yarn_scaling(4, -1), "original_max_position_embeddings", "yarn M0");
  rope::scaling y = rope::scaling::yarn_scaling(4, 4096);
  y.beta_fast = 0.5;  // below beta_slow = 1 (equal ones are Kimi K2's, accepted)
  expect(y, "beta_fast=0.5", "yarn betas");
  y = rope::scaling::yarn_scaling(4, 4096);
  y.mscale = -30;  // 1 + 0.1 * -30 * ln 4 < 0
  y.mscale_all_dim = 1;
  expect(y, "mscale", "yarn negative temperature");
  expect(rope::scaling::llama3_scaling(8, 4, 1, 8192), "low_freq_factor=4", "llama3 low > high");
  expect(longrope_example(31), "short_factor", "longrope list length");
  rope::scaling lr = longrope_example(32);
  lr.long_factor[31] = 0;
  expect(lr, "long_factor[31]", "longrope entry 0");
  // Subnormal (so positive) factors: a frequency divided by one passes double's range; the
  // error names the key, not inv_freq.
  expect(rope::scaling::linear_interpolation(1e-310),
         "factor=" + rope::detail::format_double(1e-310) + " divides a frequency",
         "linear subnormal factor");
  expect(rope::scaling::yarn_scaling(1e-310, 4096), "factor=", "yarn subnormal factor");
  lr = longrope_example(32);
  lr.short_factor[3] = 5e-324;
  expect(lr, "short_factor[3]=" + rope::detail::format_double(5e-324), "longrope subnormal entry");
  for (double v : {0.0, -1.0, nan, std::numeric_limits<double>::infinity()}) {
    lr = longrope_example(32);
    lr.short_mscale = v;
    expect(lr, "short_mscale=" + rope::detail::format_double(v), "longrope short_mscale");
    lr = longrope_example(32);
    lr.long_mscale = v;
    expect(lr, "long_mscale=" + rope::detail::format_double(v), "longrope long_mscale");
  }
  // M0 = 1: ln M0 = 0 in the computed A, which the list without an mscale would use.
  lr = longrope_example(32, 32, 1);
  lr.long_mscale = 1.3;
  expect(lr, "original_max_position_embeddings", "longrope M0 1 with one mscale");
  expect(rope::scaling::proportional_rotation(0), "rotated_pairs=0", "proportional 0 pairs");
  expect(rope::scaling::proportional_rotation(33), "rotated_pairs=33", "proportional 33 of 32");
  expect(rope::scaling::proportional_rotation(-1), "rotated_pairs=-1", "proportional -1 pairs");
  expect(rope::scaling::proportional_rotation(8, 0), "factor=0", "proportional factor 0");
  expect(rope::scaling::proportional_rotation(8, nan), "factor=nan", "proportional NaN factor");
  expect(rope::scaling::proportional_rotation(8, 1e-310), "factor=", "proportional subnormal");
  rope::scaling bad;
  bad.type = static_cast<rope::scaling_type>(42);
  expect(bad, "rope_type", "enum out of range");
}
#endif  // ROPE_HAS_EXCEPTIONS: the invalid-config tests catch std::invalid_argument

// ---------------------------------------------------------------------------------------------
// Tables: cached per complete parameters.

TEST(ScalingCache, TablesDifferWhenAnyParameterDiffers) {
  rope::table_cache cache;
  const rope::spec sp = spec(128, 1e4);
  // beta_fast 32 vs 33: with truncation the ramp is identical, so are the numbers; the
  // identity still tells them apart.
  const rope::scaling y32 = rope::scaling::yarn_scaling(4, 4096);
  rope::scaling y33 = y32;
  y33.beta_fast = 33;
  EXPECT_EQ(rope::compute_frequencies(sp, y32).frequencies.inv_freq,
            rope::compute_frequencies(sp, y33).frequencies.inv_freq);
  const auto t32 = rope::get_table<float>(cache, sp, y32, 0, 64);
  EXPECT_EQ(t32, rope::get_table<float>(cache, sp, y32, 0, 64));
  EXPECT_NE(t32, rope::get_table<float>(cache, sp, y33, 0, 64));
  // One long_factor entry, while the short list is in use: same numbers, different tables.
  const rope::scaling a = longrope_example(64);
  rope::scaling b = a;
  b.long_factor[40] *= 1.0000001;
  const auto ta = rope::get_table<float>(cache, sp, a, 100, 64);
  const auto tb = rope::get_table<float>(cache, sp, b, 100, 64);
  EXPECT_EQ(ta->inv_freq(), tb->inv_freq());
  EXPECT_NE(ta, tb);
  EXPECT_NE(rope::get_table<float>(cache, sp, a, 5000, 64),
            rope::get_table<float>(cache, sp, b, 5000, 64));
  // Other parameters, one at a time.
  rope::scaling m = y32;
  m.mscale = 1;
  EXPECT_NE(t32, rope::get_table<float>(cache, sp, m, 0, 64));
  m = y32;
  m.truncate = false;
  EXPECT_NE(t32, rope::get_table<float>(cache, sp, m, 0, 64));
  m = y32;
  m.attention_factor = 1 + 0.1 * std::log(4.0);  // explicit but equal to the computed one
  EXPECT_NE(t32, rope::get_table<float>(cache, sp, m, 0, 64));
  // longrope's per-list A: the long list's, while the short list is in use (same numbers,
  // different tables), and the short list's equal to the computed A.
  b = a;
  b.long_mscale = 1.3;
  EXPECT_EQ(rope::compute_frequencies(sp, a, 100).frequencies.attention_factor,
            rope::compute_frequencies(sp, b, 100).frequencies.attention_factor);
  EXPECT_NE(ta, rope::get_table<float>(cache, sp, b, 100, 64));
  b = a;
  b.short_mscale = rope::compute_frequencies(sp, a, 100).frequencies.attention_factor;
  EXPECT_NE(ta, rope::get_table<float>(cache, sp, b, 100, 64));
  // Dynamic: every length up to M shares the default-base table; beyond, one per length.
  const rope::scaling dyn = rope::scaling::dynamic_ntk(2, 4096);
  const auto d1 = rope::get_table<float>(cache, sp, dyn, 1, 64);
  EXPECT_EQ(d1, rope::get_table<float>(cache, sp, dyn, 4096, 64));
  EXPECT_NE(d1, rope::get_table<float>(cache, sp, dyn, 4097, 64));
  EXPECT_EQ(d1->frequencies().description, "dynamic:base=10000");
  // Linear scaling vs plain RoPE with the same numbers: not shared.
  rope::frequencies lin1 =
      rope::compute_frequencies(sp, rope::scaling::linear_interpolation(1)).frequencies;
  EXPECT_EQ(lin1.inv_freq, rope::default_frequencies(sp).inv_freq);
  EXPECT_NE(cache.get<float>(lin1, sp.layout, 64), cache.get<float>(sp, 64));
  // proportional: another rotated-pair count, another table; all 64 pairs at factor 1 are the
  // default numbers, in a table of its own.
  const auto p16 =
      rope::get_table<float>(cache, sp, rope::scaling::proportional_rotation(16), 0, 64);
  EXPECT_NE(p16,
            rope::get_table<float>(cache, sp, rope::scaling::proportional_rotation(17), 0, 64));
  EXPECT_NE(p16,
            rope::get_table<float>(cache, sp, rope::scaling::proportional_rotation(16, 2), 0, 64));
  EXPECT_EQ(p16,
            rope::get_table<float>(cache, sp, rope::scaling::proportional_rotation(16), 0, 64));
  const rope::scaling all64 = rope::scaling::proportional_rotation(64);
  EXPECT_EQ(rope::compute_frequencies(sp, all64).frequencies.inv_freq,
            rope::default_frequencies(sp).inv_freq);
  EXPECT_NE(rope::get_table<float>(cache, sp, all64, 0, 64), cache.get<float>(sp, 64));
  // scaling_type::none shares the plain table.
  EXPECT_EQ(rope::get_table<float>(cache, sp, rope::scaling{}, 0, 64), cache.get<float>(sp, 64));
}

// ---------------------------------------------------------------------------------------------
// Re-rotation of cached keys and position shifts, against the long double oracle.

struct transition {
  std::string name;
  rope::frequencies from, to;
};

std::vector<transition> transitions(const rope::spec& sp) {
  const std::size_t pairs = static_cast<std::size_t>(sp.rotary_dim / 2);
  auto f = [&](const rope::scaling& sc, std::int64_t L = 0) {
    return rope::compute_frequencies(sp, sc, L).frequencies;
  };
  const rope::frequencies plain = rope::default_frequencies(sp);
  rope::scaling ym = rope::scaling::yarn_scaling(8, 4096);
  ym.mscale = 1;
  ym.mscale_all_dim = 0.5;
  const rope::scaling lr = longrope_example(pairs);
  rope::scaling lrm = lr;  // Phi-3.5-MoE style: each list its own A
  lrm.short_mscale = 1.1;
  lrm.long_mscale = 1.3;
  return {
      {"default->linear", plain, f(rope::scaling::linear_interpolation(4))},
      {"default->ntk", plain, f(rope::scaling::ntk_static(4))},
      {"dynamic 4096->16384", f(rope::scaling::dynamic_ntk(2, 4096), 4096),
       f(rope::scaling::dynamic_ntk(2, 4096), 16384)},
      {"dynamic 8192->1000001", f(rope::scaling::dynamic_ntk(4, 4096), 8192),
       f(rope::scaling::dynamic_ntk(4, 4096), 1000001)},
      {"default->yarn", plain, f(rope::scaling::yarn_scaling(4, 4096))},
      {"yarn->yarn mscale", f(rope::scaling::yarn_scaling(8, 4096)), f(ym)},
      {"default->llama3", plain, f(rope::scaling::llama3_scaling(8, 1, 4, 8192))},
      {"longrope short->long", f(lr, 4096), f(lr, 4097)},
      {"longrope short->long, mscales 1.1 and 1.3", f(lrm, 4096), f(lrm, 4097)},
      {"longrope long->default", f(lr, 5000), plain},
      {"yarn->longrope", f(rope::scaling::yarn_scaling(16, 4096)), f(lr, 4097)},
      {"default->proportional (a quarter of the pairs)", plain,
       f(rope::scaling::proportional_rotation(static_cast<int>(pairs / 4)))},
      {"proportional->linear",
       f(rope::scaling::proportional_rotation(static_cast<int>(pairs / 2), 2)),
       f(rope::scaling::linear_interpolation(4))},
  };
}

std::vector<std::int64_t> rerotation_positions() {
  std::vector<std::int64_t> p = {0, 1, 2, 4095, 4096, 4097, 65535, 1 << 20, (1 << 20) + 1, 3000000};
  std::mt19937_64 gen(5);
  for (int i = 0; i < 22; ++i)
    p.push_back(static_cast<std::int64_t>(gen() % (std::uint64_t{1} << 22)));
  return p;
}

// n keys uniform in [-1, 1] (std::mt19937 from seed): the inputs of the re-rotation tests.
template <class T>
std::vector<T> uniform_keys(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<T> dist(-1, 1);
  std::vector<T> x(n);
  for (auto& v : x) v = dist(gen);
  return x;
}

// Largest |got - oracle| over every rotated element, in units of u * r * max(1, A), r the
// pair's norm in x; the pass-through dims must be unchanged bit for bit. got may be stored in
// another type than x (keys cached in fp16 or bf16).
template <class T, class TG = T>
ld max_error_vs_oracle(const std::vector<T>& x, const std::vector<TG>& got, int heads, int D,
                       int d, rope::layout l, const rope::frequencies& f,
                       const std::vector<std::int64_t>& pos, std::int64_t delta, ld unit,
                       const rope::frequencies* from = nullptr) {
  auto value = [&](std::size_t k) {
    return static_cast<ld>(rope::storage_traits<TG>::load(got[k]));
  };
  const std::vector<ld> w = as_ld(f.inv_freq);
  const std::size_t P = static_cast<std::size_t>(d / 2);
  ld worst = 0;
  for (std::size_t t = 0; t < pos.size(); ++t)
    for (int h = 0; h < heads; ++h) {
      const std::size_t off = (t * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)) *
                              static_cast<std::size_t>(D);
      const auto want = oracle::rotate(x.data() + off, D, d, w, l, static_cast<ld>(pos[t] + delta),
                                       1, static_cast<ld>(f.attention_factor));
      for (std::size_t j = 0; j < P; ++j) {
        const std::size_t i0 = oracle::first(l, j, P), i1 = oracle::second(l, j, P);
        ld r = std::hypot(static_cast<ld>(x[off + i0]), static_cast<ld>(x[off + i1])) *
               std::max<ld>(1, f.attention_factor);
        // With `from`: in units of (16 + |p w_from| + |p w_to|) * unit * r, the double
        // tables' bound (3 + |theta|) u for the two angles and the re-rotation's few units.
        if (from != nullptr) {
          const ld p = static_cast<ld>(pos[t]);
          r *= 16 + std::fabs(p * static_cast<ld>(from->inv_freq[j])) + std::fabs(p * w[j]);
        }
        worst = std::max({worst, std::fabs(value(off + i0) - want[i0]) / (unit * r),
                          std::fabs(value(off + i1) - want[i1]) / (unit * r)});
      }
      if constexpr (std::is_same<T, TG>::value) {
        for (std::size_t k = static_cast<std::size_t>(d); k < static_cast<std::size_t>(D); ++k)
          EXPECT_EQ(std::memcmp(&got[off + k], &x[off + k], sizeof(T)), 0);
      }
    }
  return worst;
}

TEST(Rerotate, EqualsFreshRotationForEveryMethodAndLayoutFloat) {
  const int heads = 3;
  ld overall = 0;
  for (rope::layout l : kLayouts)
    for (auto [D, d] : {std::pair<int, int>{128, 128}, {96, 64}}) {
      const rope::spec sp = rope::make_spec(D, d, 1e4, l);
      const auto pos = rerotation_positions();
      const auto n = static_cast<std::ptrdiff_t>(pos.size());
      const std::vector<float> x =
          uniform_keys<float>(pos.size() * heads * static_cast<std::size_t>(D), 11);
      for (const auto& tr : transitions(sp)) {
        std::vector<float> keys = x;
        const auto view = rope::packed_heads(keys.data(), n, heads, D);
        auto tab =
            rope::table<float>::build(tr.from, l, std::int64_t{1} << 22, rope::table_mode::compact);
        ASSERT_EQ(rope::apply<float>(*tab, view, pos.data()), rope::status::ok);
        ASSERT_EQ(rope::rerotate<float>(tr.from, tr.to, l, view, pos.data()), rope::status::ok);
        const ld err = max_error_vs_oracle(x, keys, heads, D, d, l, tr.to, pos, 0, kU);
        EXPECT_LE(err, 4.0L) << tr.name << " " << rope::to_string(l) << " D=" << D << " d=" << d;
        overall = std::max(overall, err);
        // Out of place gives the same bits, and copies the pass-through dims.
        std::vector<float> rotated = x, out(x.size(), -7.0f);
        const auto rv = rope::packed_heads(rotated.data(), n, heads, D);
        ASSERT_EQ(rope::apply<float>(*tab, rv, pos.data()), rope::status::ok);
        ASSERT_EQ((rope::rerotate<float>(tr.from, tr.to, l, rope::heads_view<const float>(rv),
                                         rope::packed_heads(out.data(), n, heads, D), pos.data())),
                  rope::status::ok);
        EXPECT_EQ(out, keys) << tr.name;
      }
    }
  std::printf("rerotate (float): largest error %.3Lf * 2^-24 * r * max(1, A) (bound 4)\n", overall);
}

TEST(Rerotate, EqualsFreshRotationDouble) {
  ld worst = 0;
  for (rope::layout l : kLayouts) {
    const rope::spec sp = rope::make_spec(64, 64, 1e4, l);
    const auto pos = rerotation_positions();
    const auto n = static_cast<std::ptrdiff_t>(pos.size());
    const std::vector<double> x = uniform_keys<double>(pos.size() * 64, 3);
    for (const auto& tr : transitions(sp)) {
      std::vector<double> keys = x;
      const auto view = rope::packed_heads(keys.data(), n, 1, 64);
      auto tab =
          rope::table<double>::build(tr.from, l, std::int64_t{1} << 22, rope::table_mode::compact);
      ASSERT_EQ(rope::apply<double>(*tab, view, pos.data()), rope::status::ok);
      ASSERT_EQ(rope::rerotate<double>(tr.from, tr.to, l, view, pos.data()), rope::status::ok);
      // Angles up to 4e6 rad: the table's double bound (3 + |theta|) u grows with each angle;
      // the re-rotation adds a few u. Bounded per element, not by the largest angle.
      const ld err = max_error_vs_oracle(x, keys, 1, 64, 64, l, tr.to, pos, 0, 0x1p-53L, &tr.from);
      EXPECT_LE(err, 1.0L) << tr.name;
      worst = std::max(worst, err);
    }
  }
  std::printf("rerotate (double): largest error %.3Lf * (16 + |p w_from| + |p w_to|) * 2^-53 * r "
              "(bound 1)\n",
              worst);
}

TEST(ShiftPositions, EqualsRotationAtTheShiftedPosition) {
  const int heads = 2;
  for (rope::layout l : kLayouts) {
    const rope::spec sp = rope::make_spec(128, 128, 1e6, l);
    for (const rope::frequencies& f :
         {rope::default_frequencies(sp),
          rope::compute_frequencies(sp, rope::scaling::yarn_scaling(4, 32768)).frequencies}) {
      for (std::int64_t delta : {std::int64_t{-4}, std::int64_t{-1000}, std::int64_t{1},
                                 std::int64_t{123457}, -(std::int64_t{1} << 20)}) {
        std::vector<std::int64_t> pos;
        for (std::int64_t p : rerotation_positions())
          if (p + delta >= 0) pos.push_back(p);
        const auto n = static_cast<std::ptrdiff_t>(pos.size());
        const std::vector<float> x = uniform_keys<float>(pos.size() * heads * 128, 17);
        std::vector<float> keys = x;
        const auto view = rope::packed_heads(keys.data(), n, heads, 128);
        auto tab =
            rope::table<float>::build(f, l, std::int64_t{1} << 22, rope::table_mode::compact);
        ASSERT_EQ(rope::apply<float>(*tab, view, pos.data()), rope::status::ok);
        ASSERT_EQ(rope::shift_positions<float>(f, l, view, pos.data(), delta), rope::status::ok);
        EXPECT_LE(max_error_vs_oracle(x, keys, heads, 128, 128, l, f, pos, delta, kU), 4.0L)
            << f.description << " delta " << delta;
      }
    }
  }
}

// Out of place within one cache: the keys of tokens [from, from + n) moved to [to, to + n)
// with delta = to - from (down: a cache dropping tokens [to, from); up: making room), token-
// and head-major, each with exactly the bits of the same shift from a copy into a buffer of its
// own (rows outside [to, to + n) keep their old values either way). Overlaps that are not a
// move by whole tokens, or where a head-major view's rows would reach the next head's, are
// refused with nothing written.
TEST(ShiftPositions, WithinOneCacheMovesKeysByWholeTokens) {
  const std::ptrdiff_t D = 64, H = 3, C = 40;  // C slots
  using move = std::array<std::ptrdiff_t, 3>;   // from, to, n
  int moves = 0;
  for (rope::layout l : kLayouts)
    for (bool head_major : {false, true})
      for (const move& m : {move{12, 4, 28}, move{0, 5, 30}, move{10, 9, 30}, move{3, 4, 36}}) {
        const std::ptrdiff_t from = m[0], to = m[1], n = m[2];
        const std::ptrdiff_t ts = head_major ? D : H * D, hs = head_major ? C * D : D;
        const rope::frequencies f = rope::default_frequencies(rope::make_spec(D, D, 1e4, l));
        std::vector<float> cache = uniform_keys<float>(static_cast<std::size_t>(C * H * D), 5);
        std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
        for (std::size_t t = 0; t < pos.size(); ++t) pos[t] = 100 + from + static_cast<std::int64_t>(t);
        const std::int64_t delta = to - from;
        std::vector<float> copy = cache, ref = cache;
        ASSERT_EQ(rope::shift_positions<float>(
                      f, l, rope::heads_view<const float>{copy.data() + from * ts, n, H, D, ts, hs},
                      rope::heads_view<float>{ref.data() + to * ts, n, H, D, ts, hs}, pos.data(),
                      delta),
                  rope::status::ok);
        ASSERT_EQ(rope::shift_positions<float>(
                      f, l, rope::heads_view<const float>{cache.data() + from * ts, n, H, D, ts, hs},
                      rope::heads_view<float>{cache.data() + to * ts, n, H, D, ts, hs}, pos.data(),
                      delta),
                  rope::status::ok);
        EXPECT_EQ(0, std::memcmp(cache.data(), ref.data(), cache.size() * sizeof(float)))
            << rope::to_string(l) << (head_major ? " head-major" : " token-major") << " " << from
            << " -> " << to << " x " << n;
        ++moves;
      }
  EXPECT_EQ(moves, 16);
  // Refused, nothing written: one head's row apart (not a whole token, token-major); a
  // head-major move whose rows reach the next head's (40 slots, 36 tokens moved by 5); another
  // token stride.
  const rope::frequencies f =
      rope::default_frequencies(rope::make_spec(D, D, 1e4, rope::layout::half_split));
  std::vector<float> cache = uniform_keys<float>(static_cast<std::size_t>((C + 8) * H * D), 6);
  const std::vector<float> before = cache;
  std::vector<std::int64_t> pos(36, 50);
  auto shift = [&](std::ptrdiff_t in_off, std::ptrdiff_t out_off, std::ptrdiff_t ts,
                   std::ptrdiff_t out_ts, std::ptrdiff_t hs) {
    return rope::shift_positions<float>(
        f, rope::layout::half_split,
        rope::heads_view<const float>{cache.data() + in_off, 36, H, D, ts, hs},
        rope::heads_view<float>{cache.data() + out_off, 36, H, D, out_ts, hs}, pos.data(), 1);
  };
  EXPECT_EQ(shift(0, D, H * D, H * D, D), rope::status::overlapping_buffers);
  EXPECT_EQ(shift(0, 5 * D, D, D, C * D), rope::status::overlapping_buffers);
  EXPECT_EQ(shift(0, 2 * H * D, H * D, H * D + 1, D), rope::status::overlapping_buffers);
  EXPECT_EQ(0, std::memcmp(cache.data(), before.data(), cache.size() * sizeof(float)));
  // The same head-major move within a head stride of 41 slots is accepted.
  EXPECT_EQ(shift(0, 5 * D, D, D, (C + 1) * D), rope::status::ok);
}

// Keys cached in fp16 or bf16 (float keys rotated by rope::apply and rounded once, within 1 ulp)
// and then re-rotated or shifted end within (1 + 2 sqrt 2) u r of the float keys rotated
// exactly with the new frequencies at the new position (u = 2^-11 fp16, 2^-8 bf16; r as
// above): the cached keys' own error (1 ulp <= 2 u r per member; the rotation keeps its norm,
// sqrt 2 times that) and one more rounding. A cache re-rotated in 16-bit arithmetic would not
// hold it.
template <class T16>
void sixteen_bit_cache_within_bound(const char* name, ld u) {
  const int heads = 2;
  ld worst = 0;
  const ld bound = 1 + 2 * std::sqrt(2.0L);
  for (rope::layout l : kLayouts) {
    const rope::spec sp = rope::make_spec(128, 128, 1e4, l);
    const auto pos = rerotation_positions();
    const auto n = static_cast<std::ptrdiff_t>(pos.size());
    const std::vector<float> x = uniform_keys<float>(pos.size() * heads * 128, 23);
    const auto xv = rope::heads_view<const float>(rope::packed_heads(x.data(), n, heads, 128));
    auto cached = [&](const rope::frequencies& f) {
      std::vector<T16> keys(x.size());
      auto tab = rope::table<float>::build(f, l, std::int64_t{1} << 22, rope::table_mode::compact);
      EXPECT_EQ(rope::apply<float>(*tab, xv, rope::packed_heads(keys.data(), n, heads, 128),
                                   pos.data()),
                rope::status::ok);
      return keys;
    };
    for (const auto& tr : transitions(sp)) {
      std::vector<T16> keys = cached(tr.from);
      ASSERT_EQ(rope::rerotate<T16>(tr.from, tr.to, l,
                                    rope::packed_heads(keys.data(), n, heads, 128), pos.data()),
                rope::status::ok);
      const ld err = max_error_vs_oracle(x, keys, heads, 128, 128, l, tr.to, pos, 0, u);
      EXPECT_LE(err, bound) << name << " " << tr.name << " " << rope::to_string(l);
      worst = std::max(worst, err);
    }
    const rope::frequencies f = transitions(sp)[4].to;  // yarn, A = 1 + 0.1 ln 4
    for (std::int64_t delta : {std::int64_t{-1000}, std::int64_t{123457}}) {
      std::vector<std::int64_t> shifted_pos;
      for (std::int64_t p : pos) shifted_pos.push_back(p < 1000 ? p + 1000 : p);
      std::vector<T16> keys(x.size());
      auto tab = rope::table<float>::build(f, l, std::int64_t{1} << 22, rope::table_mode::compact);
      ASSERT_EQ(rope::apply<float>(*tab, xv, rope::packed_heads(keys.data(), n, heads, 128),
                                   shifted_pos.data()),
                rope::status::ok);
      ASSERT_EQ(rope::shift_positions<T16>(f, l, rope::packed_heads(keys.data(), n, heads, 128),
                                           shifted_pos.data(), delta),
                rope::status::ok);
      const ld err = max_error_vs_oracle(x, keys, heads, 128, 128, l, f, shifted_pos, delta, u);
      EXPECT_LE(err, bound) << name << " shift " << delta << " " << rope::to_string(l);
      worst = std::max(worst, err);
    }
  }
  std::printf("rerotate/shift_positions (%s cache): largest error %.3Lf * u * r * max(1, A) "
              "(bound %.3Lf)\n",
              name, worst, bound);
}

TEST(Rerotate, Fp16AndBf16CachesWithinTheirBound) {
  sixteen_bit_cache_within_bound<rope::float16>("fp16", 0x1p-11L);
  sixteen_bit_cache_within_bound<rope::bfloat16>("bf16", 0x1p-8L);
}

TEST(Rerotate, BadInputIsRefusedAndNothingWritten) {
  const rope::spec sp = spec(64, 1e4);
  const rope::frequencies a = rope::default_frequencies(sp);
  const rope::frequencies b =
      rope::compute_frequencies(sp, rope::scaling::linear_interpolation(2)).frequencies;
  const rope::frequencies other = rope::default_frequencies(spec(32, 1e4));
  std::vector<float> keys(3 * 64, 7777.25f);
  const std::vector<float> canary = keys;
  const auto view = rope::packed_heads(keys.data(), 3, 1, 64);
  std::int64_t pos[3] = {5, 0, 9};
  EXPECT_EQ(rope::rerotate<float>(a, other, rope::layout::half_split, view, pos),
            rope::status::bad_dimension);
  EXPECT_EQ(rope::rerotate<float>(a, b, static_cast<rope::layout>(0), view, pos),
            rope::status::bad_option);
  EXPECT_EQ(rope::shift_positions<float>(a, static_cast<rope::layout>(7), view, pos, 3),
            rope::status::bad_option);
  EXPECT_EQ((rope::rerotate<float, 32>(a, b, rope::layout::half_split, view, pos)),
            rope::status::bad_dimension);
  rope::frequencies broken = b;
  broken.inv_freq[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(rope::rerotate<float>(a, broken, rope::layout::half_split, view, pos),
            rope::status::bad_dimension);
  broken = b;
  broken.attention_factor = 0;
  EXPECT_EQ(rope::rerotate<float>(a, broken, rope::layout::half_split, view, pos),
            rope::status::bad_dimension);
  EXPECT_EQ(rope::rerotate<float>(a, b, rope::layout::half_split, view,
                                  static_cast<const std::int64_t*>(nullptr)),
            rope::status::null_pointer);
  pos[2] = -1;
  EXPECT_EQ(rope::rerotate<float>(a, b, rope::layout::half_split, view, pos),
            rope::status::position_out_of_range);
  pos[2] = std::int64_t{1} << 32;
  EXPECT_EQ(rope::rerotate<float>(a, b, rope::layout::half_split, view, pos),
            rope::status::position_out_of_range);
  pos[2] = 9;
  // The shifted position of token 1 (0) would be -1.
  EXPECT_EQ(rope::shift_positions<float>(a, rope::layout::half_split, view, pos, -1),
            rope::status::position_out_of_range);
  EXPECT_EQ(
      rope::shift_positions<float>(a, rope::layout::half_split, view, pos, std::int64_t{1} << 40),
      rope::status::position_out_of_range);
  const auto narrow = rope::heads_view<float>{keys.data(), 3, 1, 32, 64, 32};
  EXPECT_EQ(rope::rerotate<float>(a, b, rope::layout::half_split, narrow, pos),
            rope::status::bad_dimension);
  // Partially overlapping in and out.
  EXPECT_EQ(
      (rope::rerotate<float>(a, b, rope::layout::half_split, rope::heads_view<const float>(view),
                             rope::packed_heads(keys.data() + 1, 2, 1, 64), pos)),
      rope::status::bad_dimension);
  EXPECT_EQ((rope::rerotate<float>(a, b, rope::layout::half_split,
                                   rope::heads_view<const float>{keys.data(), 2, 1, 64, 64, 64},
                                   rope::packed_heads(keys.data() + 1, 2, 1, 64), pos)),
            rope::status::overlapping_buffers);
  EXPECT_EQ(keys, canary);
  // Zero tokens: success, nothing touched, positions not read.
  EXPECT_EQ(rope::rerotate<float>(a, b, rope::layout::half_split,
                                  rope::packed_heads(keys.data(), 0, 1, 64),
                                  static_cast<const std::int32_t*>(nullptr)),
            rope::status::ok);
  EXPECT_EQ(keys, canary);
}

// ---------------------------------------------------------------------------------------------
// Long contexts in little memory: compact tables of scaled frequencies.

TEST(LongContext, CompactMatchesDenseUpTo2To20AndTheOracleBeyond) {
  // Scaled frequencies with A != 1 (yarn, longrope long). A dense table over 2^20 positions is
  // built at rotary_dim 16 (64 MiB); at 128 compact entries are checked against the oracle.
  const std::int64_t n20 = std::int64_t{1} << 20;
  std::vector<std::int64_t> sample;
  std::mt19937_64 gen(23);
  for (int k = 10; k <= 20; ++k)
    for (std::int64_t dd : {-1, 0, 1}) sample.push_back((std::int64_t{1} << k) + dd);
  for (int i = 0; i < 3000; ++i)
    sample.push_back(static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(n20)));
  for (rope::layout l : kLayouts) {
    const rope::spec sp16 = rope::make_spec(128, 16, 1e4, l);
    const auto f16 =
        rope::compute_frequencies(sp16, rope::scaling::yarn_scaling(16, 4096)).frequencies;
    auto dense = rope::table<float>::build(f16, l, n20, rope::table_mode::dense);
    auto compact = rope::table<float>::build(f16, l, n20, rope::table_mode::compact);
    std::vector<float> scratch(2 * compact->row_width());
    const auto w = as_ld(f16.inv_freq);
    const ld a = f16.attention_factor;
    ld worst_diff = 0, worst_exact = 0;
    for (std::int64_t p : sample) {
      if (p >= n20) continue;
      const float* dr = dense->row(p, nullptr);
      const float* cr = compact->row(p, scratch.data());
      for (std::size_t i = 0; i < 2 * compact->row_width(); ++i)
        worst_diff = std::max(worst_diff, std::fabs(static_cast<ld>(dr[i]) - cr[i]) / (kU * a));
      for (std::size_t j = 0; j < 8; ++j) {
        const ld c = a * std::cos(static_cast<ld>(p) * w[j]);
        const ld cc = l == rope::layout::interleaved ? cr[2 * j] : cr[j];
        worst_exact = std::max(worst_exact, std::fabs(cc - c) / (kU * a));
      }
    }
    EXPECT_LE(worst_diff, 2.0L) << rope::to_string(l);  // both within 2^-24 A of the exact value
    EXPECT_LE(worst_exact, 1.0L) << rope::to_string(l);

    // rotary_dim 128, 2^22 positions, compact: <= 4 MiB per 2^20 and within 2^-24 A.
    const rope::spec sp = rope::make_spec(128, 128, 1e4, l);
    const auto lr = rope::compute_frequencies(sp, longrope_example(64), 5000).frequencies;
    auto big = rope::get_table<float>(sp, longrope_example(64), 5000, std::int64_t{1} << 22,
                                      rope::table_mode::compact);
    EXPECT_EQ(big->mode(), rope::table_mode::compact);
    EXPECT_LE(big->bytes(), std::size_t{4} << 20);
    auto big20 = rope::table<float>::build(lr, l, n20);  // automatic: compact at 2^20
    EXPECT_EQ(big20->mode(), rope::table_mode::compact);
    EXPECT_LE(big20->bytes(), std::size_t{4} << 20);
    const auto wl = as_ld(lr.inv_freq);
    const ld al = lr.attention_factor;
    std::vector<float> s2(2 * big->row_width());
    ld worst = 0;
    for (std::int64_t p : sample) {
      for (std::int64_t q : {p, p * 3 + 1}) {  // up to 3 * 2^20 + 1 < 2^22
        const float* row = big->row(q, s2.data());
        for (std::size_t j = 0; j < 64; ++j) {
          const ld phi = static_cast<ld>(q) * wl[j];
          const ld gc = l == rope::layout::interleaved ? row[2 * j] : row[j];
          const ld gs = l == rope::layout::interleaved ? row[big->row_width() + 2 * j + 1]
                                                       : row[big->row_width() + j];
          worst = std::max({worst, std::fabs(gc - al * std::cos(phi)) / (kU * al),
                            std::fabs(gs - al * std::sin(phi)) / (kU * al)});
        }
      }
    }
    EXPECT_LE(worst, 1.0L) << rope::to_string(l);
  }
}

// ---------------------------------------------------------------------------------------------
// ggml's (llama.cpp's) rope parameters (rope/ggml.hpp).

// ggml's CPU rope restated from its code (ggml-cpu/ops.cpp: ggml_rope_yarn_corr_dims,
// rope_yarn_ramp, rope_yarn), element i0 = 2j at position 1 (its angle is p times that), in long
// double where ggml uses float32, except the correction dims, which decide integers and are
// float32 as in ggml.
struct ggml_reference {
  std::vector<ld> w;
  ld a = 1;
};
ggml_reference ggml_rope_reference(const rope::ggml_rope_params& g) {
  const float pi = 3.14159265358979323846f;
  const auto corr_dim = [&](double n_rot) {
    return static_cast<float>(g.n_dims) *
           std::log(static_cast<float>(g.n_ctx_orig) / (static_cast<float>(n_rot) * 2 * pi)) /
           (2 * std::log(static_cast<float>(g.freq_base)));
  };
  const float corr0 = std::max(0.0f, std::floor(corr_dim(g.beta_fast)));
  const float corr1 = std::min(static_cast<float>(g.n_dims - 1), std::ceil(corr_dim(g.beta_slow)));
  ggml_reference out;
  for (int i0 = 0; i0 < g.n_dims; i0 += 2) {
    const ld freq_factor =
        g.freq_factors.empty() ? 1 : g.freq_factors[static_cast<std::size_t>(i0 / 2)];
    const ld theta_extrap =
        std::pow(static_cast<ld>(g.freq_base), -static_cast<ld>(i0) / g.n_dims) / freq_factor;
    const ld theta_interp = static_cast<ld>(g.freq_scale) * theta_extrap;
    ld theta = theta_interp;
    ld mscale = g.attn_factor;
    if (g.ext_factor != 0) {
      const ld y = (static_cast<ld>(i0 / 2) - corr0) /
                   std::max(0.001L, static_cast<ld>(corr1) - static_cast<ld>(corr0));
      const ld ramp_mix = (1 - std::min(1.0L, std::max(0.0L, y))) * static_cast<ld>(g.ext_factor);
      theta = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
      mscale *= 1 + 0.1L * std::log(1 / static_cast<ld>(g.freq_scale));
    }
    out.w.push_back(theta);
    out.a = mscale;
  }
  return out;
}

rope::ggml_rope_params ggml_yarn(int n_dims, double base, double s, std::int64_t n_ctx_orig) {
  rope::ggml_rope_params g;
  g.n_dims = n_dims;
  g.freq_base = base;
  g.freq_scale = 1 / s;
  g.ext_factor = 1;
  g.n_ctx_orig = n_ctx_orig;
  return g;
}

TEST(Ggml, FrequenciesAreGgmlsRopeInLongDouble) {
  std::mt19937_64 gen(64);
  std::uniform_real_distribution<double> factor(0.5, 40);
  for (int n_dims : {64, 96, 128})
    for (double base : {1e4, 5e5, 1e6})
      for (double s : {1.0, 4.0, 8.0, 3.0})
        for (double ext : {0.0, 0.5, 1.0})
          for (bool factors : {false, true}) {
            rope::ggml_rope_params g = ggml_yarn(n_dims, base, s, 4096);
            g.ext_factor = ext;
            g.attn_factor = factors ? 0.75 : 1;
            if (factors)
              for (int j = 0; j < n_dims / 2; ++j) g.freq_factors.push_back(factor(gen));
            const rope::frequencies f = rope::ggml_frequencies(g);
            const ggml_reference want = ggml_rope_reference(g);
            ASSERT_EQ(f.rotary_dim, n_dims);
            ASSERT_EQ(f.inv_freq.size(), want.w.size());
            for (std::size_t j = 0; j < want.w.size(); ++j)
              EXPECT_LE(ulps_off(f.inv_freq[j], want.w[j]), kMaxUlps)
                  << "n_dims " << n_dims << " base " << base << " s " << s << " ext " << ext
                  << " j " << j;
            EXPECT_LE(std::fabs(f.attention_factor - want.a) / want.a, 4e-16L) << s << " " << ext;
          }
}

// Worked out by hand: d = 128, base 1e6, n_ctx_orig 32768: c(32) = 128 ln(32768 / 64 pi) /
// (2 ln 1e6) = 23.60 and c(1) = 39.65, so the ramp runs from 23 to 40; below it (ext_factor 1)
// w_j = theta_j, above it theta_j / s, in between a blend of the two.
TEST(Ggml, RampWorkedOutByHand) {
  const rope::frequencies f = rope::ggml_frequencies(ggml_yarn(128, 1e6, 4, 32768));
  EXPECT_EQ(f.description, "ggml:base=1000000,freq_scale=0.25,ext_factor=1,ramp=[23,40]");
  const auto theta = oracle::inv_freq(1e6, 128);
  for (std::size_t j = 0; j < 64; ++j) {
    if (j <= 23) {
      EXPECT_LE(ulps_off(f.inv_freq[j], theta[j]), kMaxUlps) << j;
    } else if (j >= 40) {
      EXPECT_LE(ulps_off(f.inv_freq[j], theta[j] / 4), kMaxUlps) << j;
    } else {
      EXPECT_LT(f.inv_freq[j], theta[j]) << j;
      EXPECT_GT(f.inv_freq[j], theta[j] / 4) << j;
    }
  }
  EXPECT_NEAR(f.attention_factor, 1 + 0.1 * std::log(4.0), 1e-15);
}

// With ext_factor 1, attn_factor 1 and no factors, freq_scale 1/s is HF's yarn(s); with
// ext_factor 0 it is linear(s): the same frequencies (the library evaluates both in long
// double, rounded once), and the same attention factor.
TEST(Ggml, ExtFactorOneIsHfYarnAndZeroIsLinear) {
  for (int d : {64, 128})
    for (double base : {1e4, 1e6})
      for (double s : {2.0, 4.0, 32.0, 3.0})
        for (std::int64_t m0 : {std::int64_t{4096}, std::int64_t{32768}}) {
          rope::ggml_rope_params g = ggml_yarn(d, base, s, m0);
          const rope::frequencies yarn = rope::ggml_frequencies(g);
          const rope::frequencies hf =
              rope::compute_frequencies(spec(d, base), rope::scaling::yarn_scaling(s, m0))
                  .frequencies;
          for (std::size_t j = 0; j < hf.inv_freq.size(); ++j)
            EXPECT_LE(ulps_off(yarn.inv_freq[j], hf.inv_freq[j]), 1.0L)
                << d << " " << s << " j " << j;
          EXPECT_NEAR(yarn.attention_factor, hf.attention_factor, 4e-16 * hf.attention_factor);
          EXPECT_GT(yarn.attention_factor, 1.0);
          g.ext_factor = 0;
          const rope::frequencies lin = rope::ggml_frequencies(g);
          const rope::frequencies hf_lin =
              rope::compute_frequencies(spec(d, base), rope::scaling::linear_interpolation(s))
                  .frequencies;
          for (std::size_t j = 0; j < hf_lin.inv_freq.size(); ++j)
            EXPECT_LE(ulps_off(lin.inv_freq[j], hf_lin.inv_freq[j]), 1.0L)
                << d << " " << s << " j " << j;
          EXPECT_EQ(lin.attention_factor, 1.0);
        }
}

// llama.cpp's converter writes Llama 3.1's bands into rope_freqs.weight (convert_hf_to_gguf.py,
// LlamaModel: 1, factor, or 1 / ((1 - smooth) / factor + smooth) by wavelength; formed here in
// double, where the converter's float32 ones match HF's to about 1e-7), and Phi-3's LongRoPE
// lists as they are (rope_factors_long / rope_factors_short), with the attention factor in
// attn_factor: ggml's theta_j / f_j is then HF's llama3 and longrope frequencies.
TEST(Ggml, ConvertersFreqFactorsGiveHfLlama3AndLongrope) {
  const int d = 128;
  const double base = 5e5, s = 8, low = 1, high = 4, m0 = 8192;
  rope::ggml_rope_params g;
  g.n_dims = d;
  g.freq_base = base;
  for (int i = 0; i < d; i += 2) {
    const double freq = 1.0 / std::pow(base, static_cast<double>(i) / d);
    const double wavelen = 2 * 3.141592653589793 / freq;
    if (wavelen < m0 / high) {
      g.freq_factors.push_back(1);
    } else if (wavelen > m0 / low) {
      g.freq_factors.push_back(s);
    } else {
      const double smooth = (m0 / wavelen - low) / (high - low);
      g.freq_factors.push_back(1 / ((1 - smooth) / s + smooth));
    }
  }
  const rope::frequencies f = rope::ggml_frequencies(g);
  const rope::frequencies hf =
      rope::compute_frequencies(spec(d, base), rope::scaling::llama3_scaling(s, low, high, 8192))
          .frequencies;
  int changed = 0;
  for (std::size_t j = 0; j < hf.inv_freq.size(); ++j) {
    EXPECT_LE(std::fabs(f.inv_freq[j] - hf.inv_freq[j]) / hf.inv_freq[j], 1e-15)
        << "llama3 j " << j;
    changed += g.freq_factors[j] != 1;
  }
  EXPECT_GT(changed, 20);
  EXPECT_EQ(f.attention_factor, 1.0);

  // LongRoPE (Phi-3 128k's shape: 48 pairs, M0 4096, factor 32), the long list.
  const int dl = 96;
  std::vector<double> short_f, long_f;
  for (int j = 0; j < dl / 2; ++j) {
    short_f.push_back(1 + 0.02 * j);
    long_f.push_back(1 + 0.9 * j);
  }
  const auto lr = rope::compute_frequencies(
      spec(dl, 1e4), rope::scaling::longrope_scaling(short_f, long_f, 32, 4096), 8192);
  ASSERT_EQ(lr.choice.list, rope::factor_list::long_factors);
  rope::ggml_rope_params gl;
  gl.n_dims = dl;
  gl.freq_base = 1e4;
  gl.freq_factors = long_f;
  gl.attn_factor = std::sqrt(1 + std::log(32.0) / std::log(4096.0));  // the converter's A
  const rope::frequencies fl = rope::ggml_frequencies(gl);
  for (std::size_t j = 0; j < long_f.size(); ++j)
    EXPECT_LE(ulps_off(fl.inv_freq[j], lr.frequencies.inv_freq[j]), 1.0L) << "longrope j " << j;
  EXPECT_NEAR(fl.attention_factor, lr.frequencies.attention_factor,
              4e-16 * lr.frequencies.attention_factor);
}

// Where the ramp's ends cross (hi < lo), ggml's max(0.001, hi - lo) makes r_j 0 for j <= lo and 1
// above, where HF's negative denominator gives other frequencies. c(beta_fast) floored past
// n_dims - 1: every pair extrapolated (theta_j itself with ext_factor 1); c(beta_slow) ceiled
// below 0 (n_ctx_orig 1): pair 0 extrapolated, the others interpolated (theta_j / s).
TEST(Ggml, CrossedRampEndsFollowGgml) {
  const rope::ggml_rope_params g = ggml_yarn(8, 10, 4, 1000000000);
  const rope::frequencies f = rope::ggml_frequencies(g);
  EXPECT_EQ(f.description, "ggml:base=10,freq_scale=0.25,ext_factor=1,ramp=[26,7]");
  const auto theta = oracle::inv_freq(10, 8);
  for (std::size_t j = 0; j < 4; ++j) EXPECT_LE(ulps_off(f.inv_freq[j], theta[j]), kMaxUlps) << j;
  const rope::frequencies hf =
      rope::compute_frequencies(spec(8, 10), rope::scaling::yarn_scaling(4, 1000000000))
          .frequencies;
  EXPECT_NE(hf.inv_freq, f.inv_freq);

  const rope::frequencies low = rope::ggml_frequencies(ggml_yarn(8, 10, 4, 1));
  EXPECT_EQ(low.description, "ggml:base=10,freq_scale=0.25,ext_factor=1,ramp=[0,-3]");
  EXPECT_LE(ulps_off(low.inv_freq[0], theta[0]), kMaxUlps);
  for (std::size_t j = 1; j < 4; ++j)
    EXPECT_LE(ulps_off(low.inv_freq[j], theta[j] / 4), kMaxUlps) << j;
  const rope::frequencies hf_low =
      rope::compute_frequencies(spec(8, 10), rope::scaling::yarn_scaling(4, 1)).frequencies;
  EXPECT_NE(hf_low.inv_freq, low.inv_freq);
}

// Rotated by rope::apply (float, 96 of 128 dims, both layouts: GGUF Llama is interleaved, NeoX
// models half-split) against the long double 2x2 oracle at ggml's frequencies and magnitude,
// positions up to 2^20 - 1; tables cached per parameter set.
TEST(Ggml, ApplyWithinTheBoundOfTheRotationAtGgmlsAngles) {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    rope::ggml_rope_params g = ggml_yarn(96, 1e6, 16, 8192);
    g.attn_factor = 0.9;
    for (int j = 0; j < 48; ++j) g.freq_factors.push_back(1 + j / 16.0);
    const ggml_reference want = ggml_rope_reference(g);
    rope::table_cache cache;
    auto tab = cache.get<float>(rope::ggml_frequencies(g), l, std::int64_t{1} << 20);
    EXPECT_EQ(tab.get(), cache.get<float>(rope::ggml_frequencies(g), l, 4096).get());
    rope::ggml_rope_params other = g;
    other.ext_factor = 0.5;
    EXPECT_NE(tab.get(), cache.get<float>(rope::ggml_frequencies(other), l, 4096).get());
    std::mt19937_64 gen(96);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> x(128), y(128);
    ld worst = 0;
    for (std::int64_t p : {std::int64_t{0}, std::int64_t{3}, std::int64_t{8191},
                           std::int64_t{65537}, (std::int64_t{1} << 20) - 1}) {
      for (auto& v : x) v = dist(gen);
      ASSERT_EQ(rope::apply<float>(*tab, p, x.data(), y.data(), 128), rope::status::ok);
      const auto ref = oracle::rotate(x.data(), 128, 96, want.w, l, static_cast<ld>(p), 1, want.a);
      for (std::size_t j = 0; j < 48; ++j) {
        const std::size_t i0 = oracle::first(l, j, 48), i1 = oracle::second(l, j, 48);
        const ld r = want.a * std::hypot(static_cast<ld>(x[i0]), static_cast<ld>(x[i1]));
        worst = std::max({worst, std::fabs(y[i0] - ref[i0]) / (kU * r),
                          std::fabs(y[i1] - ref[i1]) / (kU * r)});
      }
      for (std::size_t k = 96; k < 128; ++k) EXPECT_EQ(y[k], x[k]) << k;
    }
    EXPECT_LE(worst, 3.0L) << rope::to_string(l);
    std::printf("ggml yarn + freq_factors (%s, 96 of 128 dims): within %.3Lf * 2^-24 * A * r\n",
                rope::to_string(l), worst);
  }
}

#if ROPE_HAS_EXCEPTIONS
TEST(Ggml, EveryBadParameterIsAnErrorNamingIt) {
  const auto expect = [](const rope::ggml_rope_params& g, const std::string& key) {
    try {
      (void)rope::ggml_frequencies(g);
      ADD_FAILURE() << "no error for " << key;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(key + "=", 0), 0u) << e.what();
    }
  };
  const rope::ggml_rope_params good = ggml_yarn(64, 1e4, 4, 4096);
  EXPECT_NO_THROW((void)rope::ggml_frequencies(good));
  rope::ggml_rope_params g = good;
  for (int n : {0, 7, -2, 2048}) {
    g = good;
    g.n_dims = n;
    expect(g, "n_dims");
  }
  for (double b : {1.0, 0.5, std::nan(""), HUGE_VAL}) {
    g = good;
    g.freq_base = b;
    expect(g, "freq_base");
  }
  for (double v : {0.0, -0.25, std::nan("")}) {
    g = good;
    g.freq_scale = v;
    expect(g, "freq_scale");
  }
  g = good;
  g.freq_scale = 1e5;  // the temperature 1 + 0.1 ln(1e-5) < 0
  expect(g, "freq_scale");
  g = good;
  g.freq_scale = 200;  // the temperature 0.47: attn_factor times it rounds to 0
  g.attn_factor = std::numeric_limits<double>::denorm_min();
  expect(g, "freq_scale");
  g.freq_scale = 100;  // 0.539: rounds to denorm_min, a positive A (the table decides on it)
  EXPECT_NO_THROW((void)rope::ggml_frequencies(g));
  for (double v : {-1.0, 1.5, std::nan("")}) {
    g = good;
    g.ext_factor = v;
    expect(g, "ext_factor");
  }
  g = good;
  g.attn_factor = 0;
  expect(g, "attn_factor");
  g = good;
  g.beta_fast = 0.5;
  expect(g, "beta_fast");
  g = good;
  g.beta_slow = -1;
  expect(g, "beta_slow");
  g = good;
  g.beta_slow = 1e-40;  // ggml's float32: a subnormal count
  expect(g, "beta_slow");
  g = good;
  g.beta_fast = 1e39;  // past float32's range
  expect(g, "beta_fast");
  g = good;
  g.freq_base = 1e39;
  expect(g, "freq_base");
  g.ext_factor = 0;  // the ramp's ends are not formed: a double base is fine
  EXPECT_NO_THROW((void)rope::ggml_frequencies(g));
  g = good;
  g.n_ctx_orig = 0;
  expect(g, "n_ctx_orig");
  g.ext_factor = 0;  // read only by yarn's ramp
  EXPECT_NO_THROW((void)rope::ggml_frequencies(g));
  g = good;
  g.freq_factors.assign(31, 1.0);
  expect(g, "freq_factors");
  g.freq_factors.assign(32, 1.0);
  g.freq_factors[5] = 0;
  expect(g, "freq_factors[5]");
}
#endif  // ROPE_HAS_EXCEPTIONS

}  // namespace
