// rope::apply against the independent 2x2 rotation oracle (tests/oracle.hpp), over the head
// dims, rotary dims, bases, layouts and positions of shared/testing.md, plus the properties
// RoPE exists for (relative position), inverse, identity at 0, aliasing and strides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <rope/rope.hpp>

#include "oracle.hpp"
#include "test_scale.hpp"

namespace {

using ld = long double;
constexpr ld kUf = 0x1p-24L;  // unit roundoff, float
constexpr ld kUd = 0x1p-53L;  // unit roundoff, double
constexpr std::int64_t kBig = (std::int64_t{1} << 24) + 2;  // positions up to 2^24 + 1

using rope_test::kHeadDims;

// ROPE_TEST_SCALE=quick (slow configurations: TSan, qemu) shrinks the grid: every head dim,
// rotary dim and layout stays, with positions 0..255 (instead of 0..4095), the same 2^k - 1,
// 2^k, 2^k + 1 up to 2^24, 16 random ones (instead of 64), and bases 1e4 and 1e6 for full
// rotation (instead of 1e4, 5e5, 1e6, 1e7).
using rope_test::quick_scale;

// Positions 0 .. small_positions()-1 come first in grid_positions (the dense table covers them).
std::int64_t small_positions() { return quick_scale() ? 256 : 4096; }

std::vector<std::int64_t> grid_positions() {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i < small_positions(); ++i) p.push_back(i);
  for (int k = 8; k <= 24; ++k)
    for (std::int64_t d = -1; d <= 1; ++d)
      if ((std::int64_t{1} << k) + d >= small_positions()) p.push_back((std::int64_t{1} << k) + d);
  std::mt19937_64 gen(20261129);
  const int n_random = quick_scale() ? 16 : 64;
  for (int i = 0; i < n_random; ++i) p.push_back(static_cast<std::int64_t>(gen() % (std::uint64_t{1} << 24)));
  return p;
}

std::vector<int> rotary_variants(int head_dim) {
  std::vector<int> v = {head_dim, head_dim / 2, head_dim / 4, 2, 6, 32, head_dim - 2};
  std::vector<int> out;
  for (int d : v)
    if (d >= 2 && d % 2 == 0 && d <= head_dim && std::find(out.begin(), out.end(), d) == out.end())
      out.push_back(d);
  return out;
}

template <class T>
std::vector<T> random_vector(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& e : v) e = static_cast<T>(dist(gen));
  return v;
}

// Per-config oracle cos/sin, shared by every check of that config.
struct oracle_table {
  std::vector<ld> c, s;
  std::size_t pairs;
  oracle_table(const std::vector<std::int64_t>& pos, const std::vector<ld>& w) : pairs(w.size()) {
    c.resize(pos.size() * pairs);
    s.resize(pos.size() * pairs);
    for (std::size_t t = 0; t < pos.size(); ++t)
      for (std::size_t j = 0; j < pairs; ++j) {
        const ld phi = static_cast<ld>(pos[t]) * w[j];
        c[t * pairs + j] = std::cos(phi);
        s[t * pairs + j] = std::sin(phi);
      }
  }
};

struct worst {
  ld ratio = 0;  // |err| / (bound)
  std::string where;
};

// Checks out (n_tokens x heads x head_dim, packed) against the oracle and returns the largest
// error relative to its bound. Float bound: 3u r. Double bound: (3 + |theta|) 2^-53 r.
template <class T>
worst check_against_oracle(const std::vector<T>& x, const std::vector<T>& out,
                           const std::vector<std::int64_t>& pos, std::size_t n_tokens,
                           const oracle_table& ot, const std::vector<ld>& w, int heads,
                           int head_dim, int rotary_dim, rope::layout l) {
  worst wst;
  const std::size_t P = static_cast<std::size_t>(rotary_dim / 2);
  const std::size_t D = static_cast<std::size_t>(head_dim);
  for (std::size_t t = 0; t < n_tokens; ++t)
    for (std::size_t h = 0; h < static_cast<std::size_t>(heads); ++h) {
      const std::size_t base = (t * static_cast<std::size_t>(heads) + h) * D;
      for (std::size_t j = 0; j < P; ++j) {
        const std::size_t i0 = oracle::first(l, j, P), i1 = oracle::second(l, j, P);
        const ld u = x[base + i0], v = x[base + i1];
        Eigen::Matrix<ld, 2, 2> R;
        const ld c = ot.c[t * P + j], s = ot.s[t * P + j];
        R << c, -s, s, c;
        const Eigen::Matrix<ld, 2, 1> ref = R * Eigen::Matrix<ld, 2, 1>(u, v);
        const ld r = std::hypot(u, v);
        const ld bound = std::is_same<T, float>::value
                             ? 3 * kUf * r
                             : (3 + static_cast<ld>(pos[t]) * w[j]) * kUd * r;
        const ld e = std::max(std::fabs(out[base + i0] - ref(0)), std::fabs(out[base + i1] - ref(1)));
        const ld ratio = bound > 0 ? e / bound : (e > 0 ? 1e9L : 0);
        if (ratio > wst.ratio) {
          wst.ratio = ratio;
          wst.where = "p=" + std::to_string(pos[t]) + " j=" + std::to_string(j);
        }
      }
      for (std::size_t k = static_cast<std::size_t>(rotary_dim); k < D; ++k)
        if (std::memcmp(&out[base + k], &x[base + k], sizeof(T)) != 0) {
          wst.ratio = 1e9L;
          wst.where = "tail dim " + std::to_string(k) + " changed";
        }
    }
  return wst;
}

// Rotates x out of place and in place with tab, checks they agree bit for bit, returns out.
template <class T>
std::vector<T> rotate_both_ways(const rope::table<T>& tab, const std::vector<T>& x,
                                const std::int64_t* pos, std::ptrdiff_t n_tokens, int heads,
                                int head_dim) {
  std::vector<T> out(x.size()), inplace(x.begin(),
                                         x.begin() + n_tokens * heads * head_dim);
  out.resize(inplace.size());
  const auto in_view = rope::packed_heads<const T>(x.data(), n_tokens, heads, head_dim);
  EXPECT_EQ(rope::apply<T>(tab, in_view, rope::packed_heads(out.data(), n_tokens, heads, head_dim), pos),
            rope::status::ok);
  EXPECT_EQ(rope::apply<T>(tab, rope::packed_heads(inplace.data(), n_tokens, heads, head_dim), pos),
            rope::status::ok);
  EXPECT_EQ(0, std::memcmp(out.data(), inplace.data(), out.size() * sizeof(T)))
      << "in place and out of place differ";
  return out;
}

// One configuration in storage type T: a compact table over every position and a dense table
// over 0..4095, each out of place and in place, against the oracle.
template <class T>
void check_config(const rope::frequencies& f, rope::layout l, const std::vector<std::int64_t>& pos,
                  const oracle_table& ot, const std::vector<ld>& w, int heads, int head_dim,
                  int rotary_dim, std::uint64_t seed) {
  const std::size_t n = pos.size();
  const std::vector<T> x = random_vector<T>(n * static_cast<std::size_t>(heads * head_dim), seed);
  const char* type = std::is_same<T, float>::value ? "float" : "double";
  auto compact = rope::table<T>::build(f, l, kBig, rope::table_mode::compact);
  auto out = rotate_both_ways(*compact, x, pos.data(), static_cast<std::ptrdiff_t>(n), heads, head_dim);
  const worst wc = check_against_oracle(x, out, pos, n, ot, w, heads, head_dim, rotary_dim, l);
  EXPECT_LE(wc.ratio, 1.0L) << type << " compact, worst at " << wc.where;
  const std::int64_t n_small = small_positions();
  auto dense = rope::table<T>::build(f, l, n_small, rope::table_mode::dense);
  out = rotate_both_ways(*dense, x, pos.data(), n_small, heads, head_dim);
  const worst wd = check_against_oracle(x, out, pos, static_cast<std::size_t>(n_small), ot, w, heads,
                                        head_dim, rotary_dim, l);
  EXPECT_LE(wd.ratio, 1.0L) << type << " dense, worst at " << wd.where;
}

class OracleGrid : public ::testing::TestWithParam<std::tuple<int, rope::layout>> {};

TEST_P(OracleGrid, FloatAndDoubleWithinBoundAtEveryPosition) {
  const int head_dim = std::get<0>(GetParam());
  const rope::layout l = std::get<1>(GetParam());
  const std::vector<std::int64_t> pos = grid_positions();
  const int heads = 2;
  for (int rotary_dim : rotary_variants(head_dim)) {
    const bool full = rotary_dim == head_dim;
    const std::vector<double> bases = !full          ? std::vector<double>{1e4}
                                      : quick_scale() ? std::vector<double>{1e4, 1e6}
                                                      : std::vector<double>{1e4, 5e5, 1e6, 1e7};
    for (double base : bases) {
      SCOPED_TRACE("head_dim=" + std::to_string(head_dim) + " rotary_dim=" +
                   std::to_string(rotary_dim) + " base=" + std::to_string(base) + " layout=" +
                   rope::to_string(l));
      const rope::spec sp = rope::make_spec(head_dim, rotary_dim, base, l);
      const rope::frequencies f = rope::default_frequencies(sp);
      const std::vector<ld> w = oracle::inv_freq(base, rotary_dim);
      const oracle_table ot(pos, w);
      const auto seed = static_cast<std::uint64_t>(head_dim * 1000 + rotary_dim) ^ static_cast<std::uint64_t>(base);

      check_config<float>(f, l, pos, ot, w, heads, head_dim, rotary_dim, seed);
      // Double at every base and rotary dim (at quick scale full rotary only: qemu emulates the
      // oracle's long double on AArch64).
      if (full || !quick_scale())
        check_config<double>(f, l, pos, ot, w, heads, head_dim, rotary_dim, seed);
    }
  }
}

std::string grid_name(const ::testing::TestParamInfo<std::tuple<int, rope::layout>>& info) {
  return "D" + std::to_string(std::get<0>(info.param)) + "_" + rope::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllHeadDims, OracleGrid,
                         ::testing::Combine(::testing::ValuesIn(kHeadDims),
                                            ::testing::Values(rope::layout::interleaved,
                                                              rope::layout::half_split)),
                         grid_name);

// <R_m q, R_n k> must equal <R_{m+t} q, R_{n+t} k>: the score depends on m - n only. A wrong
// frequency or a float angle breaks this long before it breaks norm preservation.
TEST(RelativePosition, ScoreDependsOnlyOnDistance) {
  const std::int64_t shifts[] = {1, 3, 100, 4095, 65536, 1000003, 1 << 20};
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (double base : {1e4, 5e5, 1e6, 1e7}) {
      const rope::spec sp = rope::make_spec(128, 128, base, l);
      auto tab = rope::get_table<float>(sp, (1 << 21) + 4096);
      std::mt19937_64 gen(7);
      ld worst = 0;
      for (int trial = 0; trial < 64; ++trial) {
        const auto q0 = random_vector<float>(128, gen());
        const auto k0 = random_vector<float>(128, gen());
        const std::int64_t m = static_cast<std::int64_t>(gen() % 4096), n = static_cast<std::int64_t>(gen() % 4096);
        ld qn = 0, kn = 0;
        for (int i = 0; i < 128; ++i) {
          qn += static_cast<ld>(q0[static_cast<std::size_t>(i)]) * q0[static_cast<std::size_t>(i)];
          kn += static_cast<ld>(k0[static_cast<std::size_t>(i)]) * k0[static_cast<std::size_t>(i)];
        }
        auto score = [&](std::int64_t a, std::int64_t b) {
          std::vector<float> q = q0, k = k0;
          EXPECT_EQ(rope::apply<float>(*tab, a, q.data()), rope::status::ok);
          EXPECT_EQ(rope::apply<float>(*tab, b, k.data()), rope::status::ok);
          double dot = 0;
          for (std::size_t i = 0; i < 128; ++i) dot += static_cast<double>(q[i]) * k[i];
          return dot;
        };
        const double s0 = score(m, n);
        for (std::int64_t t : shifts) {
          const ld diff = std::fabs(static_cast<ld>(score(m + t, n + t)) - s0);
          worst = std::max(worst, diff / (kUf * std::sqrt(qn * kn)));
        }
      }
      EXPECT_LE(worst, 8.0L) << rope::to_string(l) << " base " << base;
    }
}

// testing.md's numeric test 5: inverse(apply(x)) within 6u r of x, u the compute type's unit
// roundoff (a 16-bit store rounds far above that, so the storage types here are float and
// double). Every head dim, both layouts, the four bases, full and half rotary dims; compact
// tables with positions anywhere below 2^24 + 2 (2^24 - 1 .. 2^24 + 1 among them) and dense
// tables below 4096. Prints the worst error in units of u r. ROPE_TEST_SCALE=quick (TSan, qemu)
// keeps 7 head dims and bases 1e4 and 1e6.
//
// The inverse reuses the forward row with -s, so the angle's own error cancels and what is left is
// c^2 + s^2, up to 2 sqrt(2) e u from 1 (e: the entries' error in units of u), the second
// rotation's rounding (b s rounded, then one fma: 2u r per output) and the first's carried through
// it (its norm, 2u r): (4 + 2.83 e) u r. Float entries are rounded once from a double (e = 0.5):
// 5.4u, inside 6u. Double entries are rounded once from double-double values evaluated in long
// double (table.hpp, form_row_double; Table.DoubleEntriesWithinHalfAnUlp: e = 0.5 + 2^-58 A):
// 5.4u too, and 6u is asserted. Where long double is no wider than double (MSVC, Apple arm64)
// double entries are evaluated in double; stop 32's audit measured e = 1.82 dense (the direct
// path, which build_dense keeps there), 2.69 compact for such entries, and there the
// test asserts (4 + 2.83 e) u r: 9.2u dense, 11.6u compact. With an attention factor A the
// round trip gives A^2 x, in units of A^2 r (A = 1 here).
template <class T>
ld worst_round_trip(int head_dim, int rotary_dim, double base, rope::layout l, std::int64_t length,
                    rope::table_mode mode, std::uint64_t seed) {
  const ld u = std::is_same<T, float>::value ? kUf : kUd;
  const rope::spec sp = rope::make_spec(head_dim, rotary_dim, base, l);
  auto tab = rope::table<T>::build(rope::default_frequencies(sp), l, length, mode);
  std::mt19937_64 gen(seed);
  const std::size_t P = static_cast<std::size_t>(rotary_dim / 2);
  ld worst = 0;
  for (std::int64_t trial = 0; trial < 40; ++trial) {
    const auto x = random_vector<T>(static_cast<std::size_t>(head_dim), gen());
    const std::int64_t p = trial < 3 ? length - 1 - trial
                                     : static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(length));
    std::vector<T> y = x;
    EXPECT_EQ(rope::apply<T>(*tab, p, y.data()), rope::status::ok);
    EXPECT_EQ(rope::apply<T>(*tab, p, y.data(), rope::direction::inverse), rope::status::ok);
    for (std::size_t j = 0; j < P; ++j) {
      const std::size_t i0 = oracle::first(l, j, P), i1 = oracle::second(l, j, P);
      const ld r = std::hypot(static_cast<ld>(x[i0]), static_cast<ld>(x[i1]));
      if (r == 0) continue;
      worst = std::max({worst, std::fabs(static_cast<ld>(y[i0]) - x[i0]) / (u * r),
                        std::fabs(static_cast<ld>(y[i1]) - x[i1]) / (u * r)});
    }
    for (std::size_t k = static_cast<std::size_t>(rotary_dim); k < x.size(); ++k)
      EXPECT_EQ(y[k], x[k]) << "dims past the rotary dim are not touched";
  }
  return worst;
}

TEST(Inverse, RoundTripWithinItsBound) {
  ld worst_f = 0, worst_dense = 0, worst_compact = 0;
  const rope::table_mode compact = rope::table_mode::compact, dense = rope::table_mode::dense;
  const std::vector<int> dims = quick_scale() ? std::vector<int>{2, 8, 62, 64, 80, 128, 256}
                                              : std::vector<int>(std::begin(kHeadDims), std::end(kHeadDims));
  const std::vector<double> bases = quick_scale() ? std::vector<double>{1e4, 1e6}
                                                  : std::vector<double>{1e4, 5e5, 1e6, 1e7};
  std::uint64_t seed = 11;
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (int head_dim : dims)
      for (double base : bases)
        for (int rotary_dim : {head_dim, head_dim / 2}) {
          if (rotary_dim % 2 != 0) continue;
          SCOPED_TRACE("head_dim=" + std::to_string(head_dim) + " rotary_dim=" +
                       std::to_string(rotary_dim) + " base=" + std::to_string(base) + " " +
                       rope::to_string(l));
          const ld fc = worst_round_trip<float>(head_dim, rotary_dim, base, l, kBig, compact, ++seed);
          const ld fd = worst_round_trip<float>(head_dim, rotary_dim, base, l, 4096, dense, ++seed);
          const ld f = std::max(fc, fd);
          const ld dc = worst_round_trip<double>(head_dim, rotary_dim, base, l, kBig, compact, ++seed);
          const ld dd = worst_round_trip<double>(head_dim, rotary_dim, base, l, 4096, dense, ++seed);
          EXPECT_LE(f, 6.0L) << "float";
          const bool wide = rope::detail::long_double_is_wider;
          EXPECT_LE(dd, wide ? 6.0L : 4 + 2.83L * 1.82L) << "double, dense table";
          EXPECT_LE(dc, wide ? 6.0L : 4 + 2.83L * 2.69L) << "double, compact table";
          worst_f = std::max(worst_f, f);
          worst_dense = std::max(worst_dense, dd);
          worst_compact = std::max(worst_compact, dc);
        }
  std::printf("round trip: worst |inverse(apply(x)) - x| float %.3Lf u r; double %.3Lf u r (dense "
              "tables), %.3Lf u r (compact)\n",
              worst_f, worst_dense, worst_compact);
}

TEST(Inverse, MatchesOracleInverseRotation) {
  const rope::spec sp = rope::make_spec(96, 96, 5e5, rope::layout::half_split);
  auto tab = rope::get_table<double>(sp, 5000);
  const auto w = oracle::inv_freq(5e5, 96);
  const auto x = random_vector<double>(96, 3);
  for (std::int64_t p : {0, 1, 17, 4999}) {
    std::vector<double> y = x;
    ASSERT_EQ(rope::apply<double>(*tab, p, y.data(), rope::direction::inverse), rope::status::ok);
    const auto ref = oracle::rotate(x.data(), 96, 96, w, sp.layout, static_cast<ld>(p), -1);
    // The double contract per pair: (3 + |p w_j|) * 2^-53 * r.
    for (std::size_t j = 0; j < 48; ++j) {
      const std::size_t a = oracle::first(sp.layout, j, 48), b = oracle::second(sp.layout, j, 48);
      const ld r = std::hypot(static_cast<ld>(x[a]), static_cast<ld>(x[b]));
      const ld tol = (3 + static_cast<ld>(p) * w[j]) * 0x1p-53L * r;
      EXPECT_LE(std::fabs(ref[a] - static_cast<ld>(y[a])), tol) << "p=" << p << " j=" << j;
      EXPECT_LE(std::fabs(ref[b] - static_cast<ld>(y[b])), tol) << "p=" << p << " j=" << j;
    }
  }
}

TEST(Conformance, PositionZeroIsIdentity) {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
    for (int d : {2, 6, 64, 80}) {
      auto tab = rope::get_table<float>(rope::make_spec(d, d, 1e4, l), 16);
      const auto x = random_vector<float>(static_cast<std::size_t>(d), 5);
      std::vector<float> y = x;
      ASSERT_EQ(rope::apply<float>(*tab, 0, y.data()), rope::status::ok);
      for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], y[i]);
    }
}

TEST(Conformance, HandExampleFromFormulas) {
  // shared/rope-formulas.md section 14: D = d = 4, base 1e4, x = (1, 2, 3, 4), p = 1.
  const double x[4] = {1, 2, 3, 4};
  const double half[4] = {-1.9841106486, 1.9599006675, 2.4623779024, 4.0197996683};
  const double inter[4] = {-1.1426396637, 1.9220755965, 2.9598506679, 4.0297995017};
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    auto tab = rope::get_table<double>(rope::make_spec(4, 4, 1e4, l), 2);
    double y[4];
    ASSERT_EQ(rope::apply<double>(*tab, 1, x, y, 4), rope::status::ok);
    const double* want = l == rope::layout::half_split ? half : inter;
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], want[i], 1e-10) << rope::to_string(l) << " " << i;
  }
}

TEST(Conformance, StaticAndDynamicDimAgreeBitwise) {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    auto tab = rope::get_table<float>(rope::make_spec(128, 128, 1e4, l), 512);
    const auto x = random_vector<float>(512 * 4 * 128, 9);
    std::vector<std::int64_t> pos(512);
    for (std::size_t t = 0; t < pos.size(); ++t) pos[t] = static_cast<std::int64_t>((t * 37) % 512);
    std::vector<float> a = x, b = x;
    ASSERT_EQ((rope::apply<float, 128>(*tab, rope::packed_heads(a.data(), 512, 4, 128), pos.data())), rope::status::ok);
    ASSERT_EQ((rope::apply<float, rope::dynamic>(*tab, rope::packed_heads(b.data(), 512, 4, 128), pos.data())), rope::status::ok);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  }
}

TEST(Conformance, Int32AndInt64PositionsAgree) {
  auto tab = rope::get_table<float>(rope::make_spec(64, 64, 1e4, rope::layout::half_split), 1000);
  const auto x = random_vector<float>(10 * 64, 2);
  std::vector<std::int32_t> p32 = {0, 999, 5, 5, 17, 400, 1, 2, 3, 998};
  std::vector<std::int64_t> p64(p32.begin(), p32.end());
  std::vector<float> a = x, b = x;
  ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(a.data(), 10, 1, 64), p32.data()), rope::status::ok);
  ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(b.data(), 10, 1, 64), p64.data()), rope::status::ok);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

// Strided rows (padding between heads and tokens, [H, T, D] order, an odd element offset)
// with canaries: every element outside the rows is unchanged, every row equals the packed
// result, and the padding inside rows past head_dim is untouched.
TEST(Memory, StridedAndOffsetRowsWriteNothingOutside) {
  constexpr float kCanary = -12345.5f;
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    const int D = 80, d = 40, T = 7, H = 3;
    auto tab = rope::get_table<float>(rope::make_spec(D, d, 1e4, l), 100);
    std::vector<std::int64_t> pos = {3, 99, 0, 42, 42, 7, 64};
    const auto packed_x = random_vector<float>(T * H * D, 4);
    std::vector<float> packed_out(packed_x.size());
    ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads<const float>(packed_x.data(), T, H, D),
                                 rope::packed_heads(packed_out.data(), T, H, D), pos.data()),
              rope::status::ok);
    struct layout_case { std::ptrdiff_t ts, hs, offset; };
    for (layout_case c : {layout_case{H * (D + 5) + 3, D + 5, 1}, layout_case{D + 2, T * (D + 2) + 1, 3}}) {
      const std::size_t size = static_cast<std::size_t>(c.offset + (T - 1) * c.ts + (H - 1) * c.hs + D + 16);
      std::vector<float> src(size, kCanary), dst(size, kCanary);
      for (int t = 0; t < T; ++t)
        for (int h = 0; h < H; ++h)
          for (int k = 0; k < D; ++k)
            src[static_cast<std::size_t>(c.offset + t * c.ts + h * c.hs + k)] =
                packed_x[static_cast<std::size_t>((t * H + h) * D + k)];
      std::vector<float> inplace = src;
      rope::heads_view<const float> in{src.data() + c.offset, T, H, D, c.ts, c.hs};
      rope::heads_view<float> out{dst.data() + c.offset, T, H, D, c.ts, c.hs};
      rope::heads_view<float> io{inplace.data() + c.offset, T, H, D, c.ts, c.hs};
      ASSERT_EQ(rope::apply<float>(*tab, in, out, pos.data()), rope::status::ok);
      ASSERT_EQ(rope::apply<float>(*tab, io, pos.data()), rope::status::ok);
      std::vector<bool> in_row(size, false);
      for (int t = 0; t < T; ++t)
        for (int h = 0; h < H; ++h)
          for (int k = 0; k < D; ++k) {
            const std::size_t at = static_cast<std::size_t>(c.offset + t * c.ts + h * c.hs + k);
            in_row[at] = true;
            const float want = packed_out[static_cast<std::size_t>((t * H + h) * D + k)];
            EXPECT_EQ(0, std::memcmp(&dst[at], &want, sizeof(float)));
            EXPECT_EQ(0, std::memcmp(&inplace[at], &want, sizeof(float)));
          }
      for (std::size_t i = 0; i < size; ++i)
        if (!in_row[i]) {
          ASSERT_EQ(dst[i], kCanary) << "out-of-place wrote outside the rows at " << i;
          ASSERT_EQ(inplace[i], kCanary) << "in-place wrote outside the rows at " << i;
        }
    }
  }
}

TEST(GroupedQuery, QAndKInOneCallEqualTwoCalls) {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    auto tab = rope::get_table<float>(rope::make_spec(128, 64, 1e6, l), 2048);
    const int T = 5, Hq = 8, Hk = 2, D = 128;
    std::vector<std::int32_t> pos = {2047, 0, 1, 1000, 33};
    const auto q0 = random_vector<float>(T * Hq * D, 1);
    const auto k0 = random_vector<float>(T * Hk * D, 2);
    std::vector<float> q = q0, k = k0, q2 = q0, k2 = k0;
    ASSERT_EQ(rope::apply_qk<float>(*tab, rope::packed_heads(q.data(), T, Hq, D),
                                    rope::packed_heads(k.data(), T, Hk, D), pos.data()),
              rope::status::ok);
    ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(q2.data(), T, Hq, D), pos.data()), rope::status::ok);
    ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(k2.data(), T, Hk, D), pos.data()), rope::status::ok);
    EXPECT_EQ(0, std::memcmp(q.data(), q2.data(), q.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(k.data(), k2.data(), k.size() * sizeof(float)));
    // out of place, then inverse back in place: original within 6u r (checked loosely here,
    // tightly in Inverse.*)
    std::vector<float> qo(q0.size()), ko(k0.size());
    ASSERT_EQ(rope::apply_qk<float>(*tab, rope::packed_heads<const float>(q0.data(), T, Hq, D),
                                    rope::packed_heads(qo.data(), T, Hq, D),
                                    rope::packed_heads<const float>(k0.data(), T, Hk, D),
                                    rope::packed_heads(ko.data(), T, Hk, D), pos.data()),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(qo.data(), q2.data(), q.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(ko.data(), k2.data(), k.size() * sizeof(float)));
  }
}

// The storage type is deduced when one input view is mutable and the other const (queries
// rotated in place, keys read from a read-only buffer straight into an fp16 cache), or both
// mutable, in apply_qk, apply_qk_to_slots and apply_qk_mrope: the explicit-T calls' bits, and
// queries within the float bound 3 * 2^-24 * r of a long double rotation.
TEST(Deduction, MutableAndConstInputViewsDeduceTheStorageType) {
  const int T = 3, Hq = 4, Hk = 2, D = 64;
  const rope::layout l = rope::layout::half_split;
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, l), 1024);
  const std::vector<std::int64_t> pos = {5, 1000, 0};
  const std::vector<std::int32_t> slots = {2, -1, 0};
  const rope::mrope_sections sec{16, 8, 8, false};
  const std::vector<float> q0 = random_vector<float>(T * Hq * D, 11);
  std::vector<float> k0 = random_vector<float>(T * Hk * D, 12);
  const std::vector<ld> w = oracle::inv_freq(1e4, D);
  using h16 = rope::float16;
  const h16 canary = rope::storage_traits<h16>::store(-7.25f);
  const auto run = [&](auto k, int entry) {
    std::vector<float> qa = q0, qb = q0;
    std::vector<h16> ca(k0.size(), canary), cb(k0.size(), canary);
    const rope::heads_view<float> qva = rope::packed_heads(qa.data(), T, Hq, D);
    const rope::heads_view<float> qvb = rope::packed_heads(qb.data(), T, Hq, D);
    const rope::heads_view<const float> qb_in = qvb, kb_in = k;
    const rope::heads_view<h16> cva = rope::packed_heads(ca.data(), T, Hk, D);
    const rope::heads_view<h16> cvb = rope::packed_heads(cb.data(), T, Hk, D);
    const std::int64_t* p = pos.data();
    rope::status deduced = rope::status::ok, named = rope::status::ok;
    if (entry == 0) {
      deduced = rope::apply_qk(*tab, qva, qva, k, cva, p);
      named = rope::apply_qk<float>(*tab, qb_in, qvb, kb_in, cvb, p);
    } else if (entry == 1) {
      deduced = rope::apply_qk_to_slots(*tab, qva, qva, k, cva, p, slots.data());
      named = rope::apply_qk_to_slots<float>(*tab, qb_in, qvb, kb_in, cvb, p, slots.data());
    } else {
      deduced = rope::apply_qk_mrope(*tab, sec, qva, qva, k, cva, p, p, p);
      named = rope::apply_qk_mrope<float>(*tab, sec, qb_in, qvb, kb_in, cvb, p, p, p);
    }
    ASSERT_EQ(deduced, rope::status::ok) << entry;
    ASSERT_EQ(named, rope::status::ok) << entry;
    EXPECT_EQ(0, std::memcmp(qa.data(), qb.data(), qa.size() * sizeof(float))) << entry;
    EXPECT_EQ(0, std::memcmp(ca.data(), cb.data(), ca.size() * sizeof(h16))) << entry;
    EXPECT_NE(0, std::memcmp(&ca[0], &canary, sizeof(h16))) << entry;  // a key was written
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < Hq; ++h) {
        const std::size_t row = static_cast<std::size_t>((t * Hq + h) * D);
        const std::vector<ld> want =
            oracle::rotate(q0.data() + row, D, D, w, l, static_cast<ld>(pos[static_cast<std::size_t>(t)]));
        for (std::size_t j = 0; j < static_cast<std::size_t>(D / 2); ++j) {
          const std::size_t a = row + j, b = row + j + D / 2;
          const ld r = std::hypot(static_cast<ld>(q0[a]), static_cast<ld>(q0[b]));
          ASSERT_LE(std::fabs(static_cast<ld>(qa[a]) - want[j]), 3 * kUf * r) << entry;
          ASSERT_LE(std::fabs(static_cast<ld>(qa[b]) - want[j + D / 2]), 3 * kUf * r) << entry;
        }
      }
  };
  for (int entry = 0; entry < 3; ++entry) {
    run(rope::heads_view<const float>{k0.data(), T, Hk, D, Hk * D, D}, entry);
    run(rope::heads_view<float>{k0.data(), T, Hk, D, Hk * D, D}, entry);
  }
}

// q, k and v in one fused projection buffer [T, Hq + 2 Hk, D]: q and k rows interleave in
// memory without sharing an element, so apply_qk accepts them; v is untouched. A k view that
// starts inside q's block does share elements and is refused with nothing written.
TEST(GroupedQuery, FusedQkvBufferInOneCall) {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    const std::ptrdiff_t T = 9, Hq = 4, Hk = 2, D = 64, row = (Hq + 2 * Hk) * D;
    auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, l), 100);
    std::vector<std::int64_t> pos = {0, 5, 99, 3, 3, 42, 7, 8, 1};
    const auto qkv0 = random_vector<float>(static_cast<std::size_t>(T * row), 12);
    std::vector<float> fused = qkv0, ref = qkv0;
    rope::heads_view<float> q{fused.data(), T, Hq, D, row, D};
    rope::heads_view<float> k{fused.data() + Hq * D, T, Hk, D, row, D};
    ASSERT_EQ(rope::apply_qk<float>(*tab, q, k, pos.data()), rope::status::ok);
    ASSERT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{ref.data(), T, Hq, D, row, D}, pos.data()),
              rope::status::ok);
    ASSERT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{ref.data() + Hq * D, T, Hk, D, row, D}, pos.data()),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(fused.data(), ref.data(), fused.size() * sizeof(float)));
    for (std::ptrdiff_t t = 0; t < T; ++t)
      for (std::ptrdiff_t i = (Hq + Hk) * D; i < row; ++i)
        ASSERT_EQ(fused[static_cast<std::size_t>(t * row + i)], qkv0[static_cast<std::size_t>(t * row + i)]) << "v written";
    const std::vector<float> before = fused;
    rope::heads_view<float> k_bad{fused.data() + (Hq - 1) * D, T, Hk, D, row, D};
    EXPECT_EQ(rope::apply_qk<float>(*tab, q, k_bad, pos.data()), rope::status::overlapping_buffers);
    EXPECT_EQ(0, std::memcmp(fused.data(), before.data(), fused.size() * sizeof(float)));
  }
}

// The engine's step in one call: queries rotated in place in the fused float projection
// [T, Hq + 2 Hk, D], keys rotated out of it into a 16-bit KV cache laid out head-major
// [Hk][max_seq][D] at slots s0.. (out head stride max_seq * D). The same bits as two separate
// calls; v and the cache outside the written rows untouched; a bad k output (one head too
// many) refused before either q or the cache is written.
template <class K16>
void check_queries_in_place_keys_into_cache() {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    const std::ptrdiff_t T = 6, Hq = 8, Hk = 2, D = 128, row = (Hq + 2 * Hk) * D;
    const std::ptrdiff_t max_seq = 64, s0 = 17;
    auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e6, l), 4096);
    std::vector<std::int64_t> pos = {4095, 0, 17, 18, 19, 2000};
    const auto qkv0 = random_vector<float>(static_cast<std::size_t>(T * row), 31);
    std::vector<float> fused = qkv0, ref = qkv0;
    const K16 canary = rope::storage_traits<K16>::store(-7.25f);
    const auto cache_size = static_cast<std::size_t>(Hk * max_seq * D);
    std::vector<K16> cache(cache_size, canary), cache_ref(cache_size, canary);
    const rope::heads_view<const float> q_in{fused.data(), T, Hq, D, row, D};
    const rope::heads_view<float> q_out{fused.data(), T, Hq, D, row, D};
    const rope::heads_view<const float> k_in{fused.data() + Hq * D, T, Hk, D, row, D};
    const rope::heads_view<K16> k_out{cache.data() + s0 * D, T, Hk, D, D, max_seq * D};

    const rope::heads_view<K16> k_bad{cache.data() + s0 * D, T, Hk + 1, D, D, max_seq * D};
    EXPECT_EQ(rope::apply_qk<float>(*tab, q_in, q_out, k_in, k_bad, pos.data()),
              rope::status::bad_dimension);
    EXPECT_EQ(0, std::memcmp(fused.data(), qkv0.data(), fused.size() * sizeof(float)));
    for (const K16& c : cache)
      ASSERT_EQ(0, std::memcmp(&c, &canary, sizeof(K16))) << "cache written";

    ASSERT_EQ(rope::apply_qk<float>(*tab, q_in, q_out, k_in, k_out, pos.data()), rope::status::ok);
    ASSERT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{ref.data(), T, Hq, D, row, D},
                                 pos.data()),
              rope::status::ok);
    ASSERT_EQ(rope::apply<float>(
                  *tab, rope::heads_view<const float>{ref.data() + Hq * D, T, Hk, D, row, D},
                  rope::heads_view<K16>{cache_ref.data() + s0 * D, T, Hk, D, D, max_seq * D},
                  pos.data()),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(fused.data(), ref.data(), fused.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(cache.data(), cache_ref.data(), cache_size * sizeof(K16)));
    // The same calls from mutable input views, the storage type deduced: the same bits.
    std::vector<float> fused_d = qkv0, ref_d = qkv0;
    std::vector<K16> cache_d(cache_size, canary), cache_rd(cache_size, canary);
    const rope::heads_view<float> q_d{fused_d.data(), T, Hq, D, row, D};
    const rope::heads_view<float> k_d{fused_d.data() + Hq * D, T, Hk, D, row, D};
    ASSERT_EQ(rope::apply_qk(*tab, q_d, q_d, k_d,
                             rope::heads_view<K16>{cache_d.data() + s0 * D, T, Hk, D, D,
                                                   max_seq * D},
                             pos.data()),
              rope::status::ok);
    ASSERT_EQ(rope::apply(*tab, rope::heads_view<float>{ref_d.data() + Hq * D, T, Hk, D, row, D},
                          rope::heads_view<K16>{cache_rd.data() + s0 * D, T, Hk, D, D, max_seq * D},
                          pos.data()),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(fused_d.data(), fused.data(), fused.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(cache_d.data(), cache.data(), cache_size * sizeof(K16)));
    EXPECT_EQ(0, std::memcmp(cache_rd.data(), cache.data(), cache_size * sizeof(K16)));
    // Against the long double 2x2 rotation by the table's angle (oracle::cos_sin_of_product):
    // within 1 ulp of the 16-bit result, and k rows only in the slots s0 .. s0 + T - 1.
    const std::ptrdiff_t H = D / 2;
    for (std::ptrdiff_t h = 0; h < Hk; ++h)
      for (std::ptrdiff_t s = 0; s < max_seq; ++s)
        for (std::ptrdiff_t i = 0; i < D; ++i) {
          const K16 got = cache[static_cast<std::size_t>((h * max_seq + s) * D + i)];
          const std::ptrdiff_t t = s - s0;
          if (t < 0 || t >= T) {
            ASSERT_EQ(0, std::memcmp(&got, &canary, sizeof(K16))) << "slot " << s << " written";
            continue;
          }
          const std::ptrdiff_t j = l == rope::layout::interleaved ? i / 2 : i % H;
          const std::ptrdiff_t a = l == rope::layout::interleaved ? 2 * j : j;
          const std::ptrdiff_t b = l == rope::layout::interleaved ? 2 * j + 1 : j + H;
          const float* k_row = qkv0.data() + t * row + (Hq + h) * D;
          const oracle::cos_sin cs = oracle::cos_sin_of_product(
              pos[static_cast<std::size_t>(t)], tab->inv_freq()[static_cast<std::size_t>(j)]);
          const double x = k_row[a], y = k_row[b];
          const ld want = i == a ? x * cs.c - y * cs.s : y * cs.c + x * cs.s;
          // One ulp at the result: the next 16-bit value away from zero (sign-magnitude bits).
          std::uint16_t bits = 0;
          std::memcpy(&bits, &got, sizeof bits);
          const auto next_bits = static_cast<std::uint16_t>(bits + 1u);
          K16 next;
          std::memcpy(&next, &next_bits, sizeof next);
          const double g = static_cast<double>(rope::storage_traits<K16>::load(got));
          const double ulp =
              std::fabs(static_cast<double>(rope::storage_traits<K16>::load(next)) - g);
          EXPECT_LE(std::fabs(g - want), ulp + 1e-12 * std::hypot(x, y))
              << "head " << h << " slot " << s << " dim " << i;
        }
  }
}

TEST(GroupedQuery, QueriesInPlaceKeysIntoFp16CacheInOneCall) {
  check_queries_in_place_keys_into_cache<rope::float16>();
}

TEST(GroupedQuery, QueriesInPlaceKeysIntoBf16CacheInOneCall) {
  check_queries_in_place_keys_into_cache<rope::bfloat16>();
}

// GPT-NeoX's fused projection viewed as [T, H, 3, D]: per head q, k, v side by side, so q and
// k have head stride 3D and token stride 3HD, and k's rows sit D after q's. They share no
// element: apply_qk accepts them and equals two separate calls; v is untouched. A k view
// D/2 after q (shares elements) or 2.5 D after (its rows run into the next head's q) is
// refused with nothing written.
TEST(GroupedQuery, NeoxFusedQkvPerHeadInOneCall) {
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    const std::ptrdiff_t T = 7, H = 4, D = 64, hs = 3 * D, ts = H * hs;
    auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, l), 100);
    std::vector<std::int64_t> pos = {0, 5, 99, 3, 42, 7, 1};
    const auto qkv0 = random_vector<float>(static_cast<std::size_t>(T * ts + 2 * D), 21);
    std::vector<float> fused = qkv0, ref = qkv0;
    rope::heads_view<float> q{fused.data(), T, H, D, ts, hs};
    rope::heads_view<float> k{fused.data() + D, T, H, D, ts, hs};
    ASSERT_EQ(rope::apply_qk<float>(*tab, q, k, pos.data()), rope::status::ok);
    ASSERT_EQ(
        rope::apply<float>(*tab, rope::heads_view<float>{ref.data(), T, H, D, ts, hs}, pos.data()),
        rope::status::ok);
    ASSERT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{ref.data() + D, T, H, D, ts, hs},
                                 pos.data()),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(fused.data(), ref.data(), fused.size() * sizeof(float)));
    std::size_t changed = 0;
    for (std::ptrdiff_t t = 0; t < T; ++t)
      for (std::ptrdiff_t h = 0; h < H; ++h)
        for (std::ptrdiff_t i = 0; i < 3 * D; ++i) {
          const auto at = static_cast<std::size_t>(t * ts + h * hs + i);
          if (i >= 2 * D)
            ASSERT_EQ(fused[at], qkv0[at]) << "v written";
          else
            changed += fused[at] != qkv0[at];
        }
    // Token 0 is at position 0 (the identity); the others move nearly every element.
    EXPECT_GT(changed, static_cast<std::size_t>((T - 1) * H * 2 * D * 9 / 10)) << "q and k rotated";
    const std::vector<float> before = fused;
    for (std::ptrdiff_t off : {D / 2, 5 * D / 2}) {
      rope::heads_view<float> k_bad{fused.data() + off, T, H, D, ts, hs};
      EXPECT_EQ(rope::apply_qk<float>(*tab, q, k_bad, pos.data()),
                rope::status::overlapping_buffers)
          << "k at +" << off;
    }
    EXPECT_EQ(0, std::memcmp(fused.data(), before.data(), fused.size() * sizeof(float)));
  }
}

// A NaN or an infinity spreads to its own pair's partner (pairs (x1, x5) and (x2, x6) at
// half-split rotary dim 8; at p = 3 every pair's sin and cos are non-zero) and nowhere else.
template <class T>
void check_nan_and_inf_stay_in_their_pair() {
  auto tab = rope::get_table<T>(rope::make_spec(8, 8, 1e4, rope::layout::half_split), 10);
  std::vector<T> x = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<T> y = x, ref = x;
  y[1] = std::numeric_limits<T>::quiet_NaN();  // pair 1 = (x1, x5)
  y[2] = std::numeric_limits<T>::infinity();   // pair 2 = (x2, x6)
  ASSERT_EQ(rope::apply<T>(*tab, 3, y.data()), rope::status::ok);
  ASSERT_EQ(rope::apply<T>(*tab, 3, ref.data()), rope::status::ok);
  EXPECT_TRUE(std::isnan(y[1]) && std::isnan(y[5]));
  EXPECT_FALSE(std::isfinite(y[2]));
  EXPECT_FALSE(std::isfinite(y[6]));
  for (std::size_t i : {0u, 3u, 4u, 7u}) EXPECT_EQ(y[i], ref[i]) << i;
}

TEST(Values, NanAndInfStayInTheirPair) {
  check_nan_and_inf_stay_in_their_pair<float>();
  check_nan_and_inf_stay_in_their_pair<double>();
}

// Double tables with an attention factor A != 1 (LongRoPE here, A = sqrt(17/12)), dense and
// compact, against the 2x2 rotation by the exact angle scaled by A: within (3 + |theta|) 2^-53 r
// (r = A |pair|, the README's double bound) at every position of the table. Compact double rows
// once multiplied A into their coarse half and rounded both products: entries up to 3.6 units of
// 2^-53 A off and 1 output in about 200,000 past the bound (an audit found it; 1.09x at worst);
// with the row's sum carried exactly and A applied once, 2.7 units and no output past 0.9 of it;
// with halves carried as long double double-doubles (dense rows too), half an ulp and 0.61.
TEST(OracleScaled, DoubleTablesWithAnAttentionFactorWithinBound) {
  std::vector<double> short_f(64), long_f(64);
  for (std::size_t j = 0; j < 64; ++j) {
    short_f[j] = 1.0 + 0.01 * static_cast<double>(j);
    long_f[j] = 1.0 + 0.7 * static_cast<double>(j);
  }
  const auto sc = rope::scaling::longrope_scaling(short_f, long_f, 32, 4096);
  const std::int64_t n = 20000;
  // Every position (every 97th at quick scale: the oracle's long double cos/sin is slow under
  // qemu), the oracle shared by both layouts, modes and directions (same frequencies).
  const std::int64_t step = quick_scale() ? 97 : 1;
  const std::vector<double> w =
      rope::compute_frequencies(rope::make_spec(128, 128, 1e6, rope::layout::half_split), sc, 8192)
          .frequencies.inv_freq;
  std::vector<oracle::cos_sin> ref;
  for (std::int64_t p = 0; p < n; p += step)
    for (std::size_t j = 0; j < 64; ++j) ref.push_back(oracle::cos_sin_of_product(p, w[j]));
  std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
  for (std::int64_t p = 0; p < n; ++p) pos[static_cast<std::size_t>(p)] = p;
  const std::vector<double> x = random_vector<double>(static_cast<std::size_t>(n) * 128, 77);
  for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split}) {
    const rope::spec sp = rope::make_spec(128, 128, 1e6, l);
    for (rope::table_mode mode : {rope::table_mode::dense, rope::table_mode::compact}) {
      const auto tab = rope::get_table<double>(sp, sc, /*seq_len=*/8192, n, mode);
      ASSERT_EQ(tab->mode(), mode);
      ASSERT_EQ(tab->inv_freq(), w);
      const ld A = tab->attention_factor();
      ASSERT_GT(A, 1.1L);
      for (rope::direction dir : {rope::direction::forward, rope::direction::inverse}) {
        std::vector<double> y = x;
        const rope::status st = rope::apply<double, 128>(*tab, rope::packed_heads(y.data(), n, 1, 128),
                                                         pos.data(), dir);
        ASSERT_EQ(st, rope::status::ok);
        ld worst = 0;
        std::size_t over = 0, k = 0;
        for (std::int64_t p = 0; p < n; p += step)
          for (std::size_t j = 0; j < 64; ++j, ++k) {
            const ld s = dir == rope::direction::forward ? ref[k].s : -ref[k].s;
            const std::size_t b = static_cast<std::size_t>(p) * 128;
            const std::size_t i0 = b + oracle::first(l, j, 64), i1 = b + oracle::second(l, j, 64);
            const ld u = x[i0], v = x[i1];
            const ld r = A * std::hypot(u, v);
            const ld bound = (3 + static_cast<ld>(p) * static_cast<ld>(w[j])) * kUd * r;
            const ld e = std::max(std::fabs(y[i0] - A * (u * ref[k].c - v * s)),
                                  std::fabs(y[i1] - A * (v * ref[k].c + u * s)));
            if (bound > 0) worst = std::max(worst, e / bound);
            over += e > bound;
          }
        std::printf("double %s %s %s, A = %.6Lf: worst %.3Lf of (3 + |theta|) 2^-53 r over %zu outputs\n",
                    rope::to_string(l), mode == rope::table_mode::dense ? "dense" : "compact",
                    dir == rope::direction::forward ? "forward" : "inverse", A, worst, 2 * k);
        EXPECT_EQ(over, 0u) << rope::to_string(l) << (mode == rope::table_mode::dense ? " dense" : " compact")
                            << ": worst " << static_cast<double>(worst) << " of the bound";
      }
    }
  }
}

}  // namespace
