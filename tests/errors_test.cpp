// Bad input: the exact error, and nothing written (shared/testing.md, "Bad input").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <rope/rope.hpp>

namespace {

constexpr float kCanary = 7777.25f;

// The cold path reports errors by exception; a -fno-exceptions build routes them to
// rope::set_error_handler instead, which tests/noexcept_test.cpp covers. The hot-path tests
// below run in both builds.
#if ROPE_HAS_EXCEPTIONS

// Expects `f` to throw E whose message contains `needle`.
template <class E, class F>
void expect_throw_naming(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one naming '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  } catch (...) {
    ADD_FAILURE() << "wrong exception type; expected one naming '" << needle << "'";
  }
}

TEST(ColdPath, BadRotaryDimIsInvalidArgumentNamingIt) {
  for (int d : {7, 0, -2, 130, 2048})
    expect_throw_naming<std::invalid_argument>(
        [&] { (void)rope::make_spec(128, d, 1e4, rope::layout::half_split); },
        "rotary_dim=" + std::to_string(d));
  expect_throw_naming<std::invalid_argument>(
      [] { (void)rope::make_spec(0, 0, 1e4, rope::layout::half_split); }, "head_dim=0");
}

TEST(ColdPath, BadBaseIsInvalidArgumentNamingIt) {
  for (double b : {1.0, 0.5, -3.0, std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::infinity()})
    expect_throw_naming<std::invalid_argument>(
        [&] { (void)rope::make_spec(64, 64, b, rope::layout::interleaved); }, "base=");
}

TEST(ColdPath, LayoutHasNoDefault) {
  rope::spec s;
  s.head_dim = 64;
  s.rotary_dim = 64;
  expect_throw_naming<std::invalid_argument>([&] { rope::validate(s); }, "layout");
  expect_throw_naming<std::invalid_argument>([&] { (void)rope::get_table<float>(s, 10); }, "layout");
}

TEST(ColdPath, TableLengthOutOfRange) {
  const rope::spec s = rope::make_spec(64, 64, 1e4, rope::layout::interleaved);
  expect_throw_naming<std::out_of_range>([&] { (void)rope::get_table<float>(s, 0); }, "positions=0");
  expect_throw_naming<std::out_of_range>(
      [&] { (void)rope::get_table<float>(s, (std::int64_t{1} << 32) + 1); }, "positions=");
  expect_throw_naming<std::out_of_range>(
      [&] { (void)rope::get_table<float>(s, std::int64_t{1} << 30, rope::table_mode::dense); }, "dense");
}

TEST(ColdPath, BadFrequenciesNamed) {
  rope::frequencies f = rope::default_frequencies(rope::make_spec(8, 8, 1e4, rope::layout::half_split));
  f.inv_freq[2] = std::numeric_limits<double>::quiet_NaN();
  expect_throw_naming<std::invalid_argument>(
      [&] { (void)rope::table<float>::build(f, rope::layout::half_split, 10); }, "inv_freq[2]");
  f = rope::default_frequencies(rope::make_spec(8, 8, 1e4, rope::layout::half_split));
  f.attention_factor = 0;
  expect_throw_naming<std::invalid_argument>(
      [&] { (void)rope::table<float>::build(f, rope::layout::half_split, 10); }, "attention_factor");
  // Finite as a double but past float's range: a float table would hold infinities.
  f.attention_factor = 1e39;
  expect_throw_naming<std::invalid_argument>(
      [&] { (void)rope::table<float>::build(f, rope::layout::half_split, 10); },
      "does not fit the table's float entries");
  rope::table_cache cache;
  expect_throw_naming<std::invalid_argument>(
      [&] { (void)cache.get<float>(f, rope::layout::half_split, 10); }, "attention_factor=");
  EXPECT_EQ(cache.size(), 0u);
  const auto wide = rope::table<double>::build(f, rope::layout::half_split, 10);
  EXPECT_EQ(wide->attention_factor(), 1e39);
  // Below 2^-102 a float table's low parts go subnormal (and with them the 2^-48 * A bound);
  // 2^-102 itself is built and holds A, a double table takes far smaller factors.
  f.attention_factor = 1e-35;
  expect_throw_naming<std::invalid_argument>(
      [&] { (void)rope::table<float>::build(f, rope::layout::half_split, 10); },
      "attention_factor=1e-35 is below");
  expect_throw_naming<std::invalid_argument>(
      [&] { (void)cache.get<float>(f, rope::layout::half_split, 10); }, "attention_factor=");
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(rope::table<double>::build(f, rope::layout::half_split, 10)->attention_factor(), 1e-35);
  f.attention_factor = 1e-310;  // subnormal in double too
  expect_throw_naming<std::invalid_argument>(
      [&] { (void)rope::table<double>::build(f, rope::layout::half_split, 10); },
      "double entries would be subnormal");
  f.attention_factor = 0x1p-102;
  EXPECT_EQ(rope::table<float>::build(f, rope::layout::half_split, 10)->attention_factor(),
            0x1p-102);
  // A table_mode outside the enumeration.
  f.attention_factor = 1;
  expect_throw_naming<std::invalid_argument>(
      [&] {
        (void)rope::table<float>::build(f, rope::layout::half_split, 10,
                                        static_cast<rope::table_mode>(7));
      },
      "mode=7");
}

// Finite frequencies whose angles are not: cos and sin of (length - 1) * w_j past double's range
// would put NaN in the table (a linear factor of 1e-308 divides w_0 = 1 up to 1e308). Refused
// at table creation, dense and compact, through the cache too; a table whose last position is
// 0 has no such angle and is built.
TEST(ColdPath, AnglesPastDoubleRangeAreRefused) {
  const rope::spec s = rope::make_spec(64, 64, 1e4, rope::layout::half_split);
  const rope::frequencies f =
      rope::compute_frequencies(s, rope::scaling::linear_interpolation(1e-308)).frequencies;
  ASSERT_TRUE(std::isfinite(f.inv_freq[0]));
  for (rope::table_mode m : {rope::table_mode::dense, rope::table_mode::compact})
    expect_throw_naming<std::invalid_argument>(
        [&] { (void)rope::table<float>::build(f, s.layout, 4, m); },
        "inv_freq[0]=1e+308 times the last position 3 passes double's range");
  rope::table_cache cache;
  expect_throw_naming<std::invalid_argument>([&] { (void)cache.get<double>(f, s.layout, 1 << 20); },
                                             "inv_freq[0]=");
  EXPECT_EQ(cache.size(), 0u);
  const auto one = rope::table<float>::build(f, s.layout, 1);
  std::vector<float> x(64, 0.5f);
  EXPECT_EQ(rope::apply<float>(*one, 0, x.data()), rope::status::ok);
  for (float v : x) EXPECT_EQ(v, 0.5f);  // position 0: the identity
}

// rotary_dim is refused at table creation too (frequencies built by hand), and a refused request
// changes nothing in the cache: the handle it already gave out stays the cached one, no build
// is counted, no key is added.
TEST(ColdPath, BadRequestsLeaveTheCacheUntouched) {
  rope::table_cache cache;
  const rope::spec s = rope::make_spec(64, 64, 1e4, rope::layout::half_split);
  auto held = cache.get<float>(s, 100);
  const std::uint64_t builds = cache.builds();
  const std::size_t keys = cache.size();
  for (int d : {7, 0, -2, 2048}) {
    rope::frequencies f = rope::default_frequencies(s);
    f.rotary_dim = d;
    expect_throw_naming<std::invalid_argument>([&] { (void)cache.get<float>(f, s.layout, 100); },
                                               "rotary_dim=" + std::to_string(d));
    expect_throw_naming<std::invalid_argument>(
        [&] { (void)rope::table<double>::build(f, s.layout, 100); }, "rotary_dim=" + std::to_string(d));
  }
  rope::spec bad_base = s;
  bad_base.base = std::numeric_limits<double>::infinity();
  expect_throw_naming<std::invalid_argument>([&] { (void)cache.get<float>(bad_base, 100); }, "base=inf");
  expect_throw_naming<std::out_of_range>([&] { (void)cache.get<float>(s, -1); }, "positions=-1");
  expect_throw_naming<std::invalid_argument>(
      [&] { (void)cache.get<float>(rope::default_frequencies(s), static_cast<rope::layout>(3), 100); }, "layout=3");
  EXPECT_EQ(cache.builds(), builds);
  EXPECT_EQ(cache.size(), keys);
  EXPECT_EQ(cache.get<float>(s, 100), held);
}

#endif  // ROPE_HAS_EXCEPTIONS

// Hot path fixture: a packed [T=4, H=2, D=64] input and a canary-filled output.
struct HotPath : ::testing::Test {
  static constexpr std::ptrdiff_t T = 4, H = 2, D = 64;
  std::shared_ptr<const rope::table<float>> tab =
      rope::get_table<float>(rope::make_spec(D, 32, 1e4, rope::layout::half_split), 100);
  std::vector<float> in = std::vector<float>(T * H * D, 0.5f);
  std::vector<float> out = std::vector<float>(T * H * D + 64, kCanary);
  std::vector<std::int64_t> pos = {0, 1, 2, 3};

  rope::heads_view<const float> in_view() const { return rope::packed_heads<const float>(in.data(), T, H, D); }
  rope::heads_view<float> out_view() { return rope::packed_heads(out.data(), T, H, D); }
  void expect_out_untouched() {
    for (float v : out) ASSERT_EQ(v, kCanary);
  }
  void expect_in_untouched() {
    for (float v : in) ASSERT_EQ(v, 0.5f);
  }
};

TEST_F(HotPath, PositionOutOfRangeWritesNothing) {
  for (std::int64_t bad : {std::int64_t{-1}, std::int64_t{100}, std::int64_t{1} << 40}) {
    pos[3] = bad;  // the last token: nothing of the first three may be written either
    EXPECT_EQ(rope::apply<float>(*tab, in_view(), out_view(), pos.data()), rope::status::position_out_of_range);
    EXPECT_EQ(rope::kind(rope::status::position_out_of_range), rope::error_kind::out_of_range);
    expect_out_untouched();
    EXPECT_EQ(rope::apply<float>(*tab, rope::packed_heads(in.data(), T, H, D), pos.data()),
              rope::status::position_out_of_range);
    expect_in_untouched();
  }
  float x[64] = {};
  EXPECT_EQ(rope::apply<float>(*tab, -5, x), rope::status::position_out_of_range);
}

// A direction or rounding outside its enumeration (an integer cast to it) is refused by every
// hot-path entry point with status::bad_option before anything is written; the four valid
// combinations still run.
TEST_F(HotPath, DirectionOrRoundingOutsideTheEnumerationWritesNothing) {
  const rope::direction fwd = rope::direction::forward;
  const rope::rounding acc = rope::rounding::accurate;
  struct opts {
    rope::direction dir;
    rope::rounding rnd;
  };
  const opts bad[] = {{static_cast<rope::direction>(2), acc},
                      {static_cast<rope::direction>(255), rope::rounding::fast},
                      {fwd, static_cast<rope::rounding>(2)},
                      {rope::direction::inverse, static_cast<rope::rounding>(200)}};
  std::vector<rope::float16> h(static_cast<std::size_t>(T * H * D),
                               rope::storage_traits<rope::float16>::store(0.5f));
  const std::vector<rope::float16> h0 = h;
  std::vector<float> k(T * D, 0.5f), k_out(T * D, kCanary);
  for (const opts& o : bad) {
    const rope::status want = rope::status::bad_option;
    EXPECT_EQ(rope::apply<float>(*tab, in_view(), out_view(), pos.data(), o.dir, o.rnd), want);
    EXPECT_EQ((rope::apply<float, 64>(*tab, in_view(), out_view(), pos.data(), o.dir, o.rnd)),
              want);
    expect_out_untouched();
    EXPECT_EQ(
        rope::apply<float>(*tab, rope::packed_heads(in.data(), T, H, D), pos.data(), o.dir, o.rnd),
        want);
    EXPECT_EQ(rope::apply<float>(*tab, 3, in.data(), o.dir, o.rnd), want);
    EXPECT_EQ(rope::apply<float>(*tab, 3, in.data(), out.data(), D, o.dir, o.rnd), want);
    EXPECT_EQ(
        rope::apply_qk<float>(*tab, rope::packed_heads(in.data(), T, H, D),
                              rope::packed_heads(k.data(), T, 1, D), pos.data(), o.dir, o.rnd),
        want);
    EXPECT_EQ(rope::apply_qk<float>(
                  *tab, in_view(), out_view(), rope::packed_heads<const float>(k.data(), T, 1, D),
                  rope::packed_heads(k_out.data(), T, 1, D), pos.data(), o.dir, o.rnd),
              want);
    EXPECT_EQ(rope::apply<rope::float16>(*tab, rope::packed_heads(h.data(), T, H, D), pos.data(),
                                         o.dir, o.rnd),
              want);
    expect_in_untouched();
    expect_out_untouched();
    for (float v : k) ASSERT_EQ(v, 0.5f);
    for (float v : k_out) ASSERT_EQ(v, kCanary);
    for (std::size_t i = 0; i < h.size(); ++i) ASSERT_EQ(h[i].bits, h0[i].bits) << i;
  }
  EXPECT_EQ(rope::kind(rope::status::bad_option), rope::error_kind::invalid_argument);
  EXPECT_NE(std::string(rope::message(rope::status::bad_option)).find("enumeration"),
            std::string::npos);
  // The valid options run: forward then inverse gives the input back (A = 1) within rounding.
  for (rope::rounding rnd : {acc, rope::rounding::fast}) {
    EXPECT_EQ(rope::apply<float>(*tab, in_view(), out_view(), pos.data(), fwd, rnd),
              rope::status::ok);
    EXPECT_EQ(rope::apply<float>(*tab, rope::heads_view<const float>(out_view()), out_view(),
                                 pos.data(), rope::direction::inverse, rnd),
              rope::status::ok);
    for (std::ptrdiff_t i = 0; i < T * H * D; ++i)
      ASSERT_NEAR(out[static_cast<std::size_t>(i)], 0.5f, 1e-6f) << i;
  }
}

TEST_F(HotPath, NullPointersWithWorkAreRefused) {
  EXPECT_EQ(rope::apply<float>(*tab, rope::heads_view<const float>{nullptr, T, H, D, H * D, D}, out_view(), pos.data()),
            rope::status::null_pointer);
  EXPECT_EQ(rope::apply<float>(*tab, in_view(), rope::heads_view<float>{nullptr, T, H, D, H * D, D}, pos.data()),
            rope::status::null_pointer);
  EXPECT_EQ(rope::apply<float>(*tab, in_view(), out_view(), static_cast<const std::int64_t*>(nullptr)),
            rope::status::null_pointer);
  EXPECT_EQ(rope::apply<float>(*tab, 0, static_cast<float*>(nullptr)), rope::status::null_pointer);
  EXPECT_EQ(rope::kind(rope::status::null_pointer), rope::error_kind::invalid_argument);
  expect_out_untouched();
}

TEST_F(HotPath, ZeroTokensOrHeadsIsNoOpSuccess) {
  EXPECT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{nullptr, 0, H, D, H * D, D},
                               static_cast<const std::int64_t*>(nullptr)),
            rope::status::ok);
  EXPECT_EQ(rope::apply<float>(*tab, rope::packed_heads<const float>(in.data(), T, 0, D),
                               rope::packed_heads(out.data(), T, 0, D), pos.data()),
            rope::status::ok);
  expect_out_untouched();
}

TEST_F(HotPath, HeadStrideBelowHeadDimOrOverlappingTokensAreRefused) {
  rope::heads_view<float> bad_heads{out.data(), T, H, D, H * D, D - 1};
  EXPECT_EQ(rope::apply<float>(*tab, in_view(), bad_heads, pos.data()), rope::status::bad_stride);
  rope::heads_view<float> bad_tokens{out.data(), T, H, D, D, D};  // token t's head 1 = token t+1's head 0
  EXPECT_EQ(rope::apply<float>(*tab, in_view(), bad_tokens, pos.data()), rope::status::bad_stride);
  rope::heads_view<float> negative{out.data(), T, H, D, -H * D, D};
  EXPECT_EQ(rope::apply<float>(*tab, in_view(), negative, pos.data()), rope::status::bad_stride);
  // A negative token stride is refused with one token too, where it is never used (as a head
  // stride below head_dim is with one head).
  rope::heads_view<float> one_token{out.data(), 1, H, D, -H * D, D};
  EXPECT_EQ(rope::apply<float>(*tab, one_token, pos.data()), rope::status::bad_stride);
  EXPECT_EQ(rope::apply<float>(*tab, rope::packed_heads<const float>(in.data(), 1, H, D), one_token,
                               pos.data()),
            rope::status::bad_stride);
  // Conservative: 3 tokens x 2 heads at token stride 2D and head stride 3D share no element
  // (rows at 0, 2D, 3D, 4D, 5D, 7D) but are neither token-major nor head-major: refused.
  rope::heads_view<float> apart_but_mixed{out.data(), 3, H, D, 2 * D, 3 * D};
  EXPECT_EQ(rope::apply<float>(*tab, rope::packed_heads<const float>(in.data(), 3, H, D),
                               apart_but_mixed, pos.data()),
            rope::status::bad_stride);
  expect_out_untouched();
}

TEST_F(HotPath, ShapeMismatchesAreRefused) {
  EXPECT_EQ(rope::apply<float>(*tab, in_view(), rope::packed_heads(out.data(), T, H, 16), pos.data()),
            rope::status::bad_dimension);  // head_dim 16 < rotary_dim 32
  EXPECT_EQ(rope::apply<float>(*tab, in_view(), rope::packed_heads(out.data(), T - 1, H, D), pos.data()),
            rope::status::bad_dimension);
  EXPECT_EQ((rope::apply<float, 64>(*tab, in_view(), out_view(), pos.data())), rope::status::bad_dimension);
  EXPECT_EQ(rope::apply<float>(*tab, in_view(), rope::heads_view<float>{out.data(), -1, H, D, H * D, D}, pos.data()),
            rope::status::bad_dimension);
  // A negative count is bad_dimension wherever it is: tokens, heads or head_dim, in place and in
  // the input view out of place (the output's negative token count is above; a zero count is a
  // no-op success, ZeroTokensOrHeadsIsNoOpSuccess).
  const rope::heads_view<float> negative[] = {{out.data(), -1, H, D, H * D, D},
                                              {out.data(), T, -2, D, H * D, D},
                                              {out.data(), T, H, -D, H * D, D}};
  for (const rope::heads_view<float>& v : negative) {
    EXPECT_EQ(rope::apply<float>(*tab, v, pos.data()), rope::status::bad_dimension);
    EXPECT_EQ(rope::apply<float>(*tab, rope::heads_view<const float>(v), out_view(), pos.data()),
              rope::status::bad_dimension);
  }
  expect_out_untouched();
}

TEST_F(HotPath, PartialOverlapIsRefusedExactAliasIsInPlace) {
  std::vector<float> buf(T * H * D + 8, 0.25f);
  const std::vector<float> before = buf;
  auto src = rope::packed_heads<const float>(buf.data(), T, H, D);
  auto shifted = rope::packed_heads(buf.data() + 3, T, H, D);
  EXPECT_EQ(rope::apply<float>(*tab, src, shifted, pos.data()), rope::status::overlapping_buffers);
  EXPECT_EQ(0, std::memcmp(buf.data(), before.data(), buf.size() * sizeof(float)));
  auto same = rope::packed_heads(buf.data(), T, H, D);
  EXPECT_EQ(rope::apply<float>(*tab, src, same, pos.data()), rope::status::ok);
  // same pointer, other strides: overlapping, not in place
  rope::heads_view<float> restrided{buf.data(), T, H, D, H * D, D};
  restrided.n_tokens = 2;
  restrided.token_stride = 2 * H * D;
  auto src2 = rope::packed_heads<const float>(buf.data(), 2, H, D);
  const std::vector<float> before2 = buf;
  EXPECT_EQ(rope::apply<float>(*tab, src2, restrided, pos.data()), rope::status::overlapping_buffers);
  EXPECT_EQ(0, std::memcmp(buf.data(), before2.data(), buf.size() * sizeof(float)));
}

TEST_F(HotPath, OverlappingQAndKAreRefused) {
  std::vector<float> buf(T * H * D * 2, 0.5f);
  const std::vector<float> before = buf;
  auto q = rope::packed_heads(buf.data(), T, H, D);
  auto k = rope::packed_heads(buf.data() + D, T, H, D);
  EXPECT_EQ(rope::apply_qk<float>(*tab, q, k, pos.data()), rope::status::overlapping_buffers);
  pos[0] = -1;
  auto k_ok = rope::packed_heads(buf.data() + T * H * D, T, H, D);
  EXPECT_EQ(rope::apply_qk<float>(*tab, q, k_ok, pos.data()), rope::status::position_out_of_range);
  EXPECT_EQ(0, std::memcmp(buf.data(), before.data(), buf.size() * sizeof(float)));
}

TEST_F(HotPath, Int32PositionsOutOfRangeWriteNothing) {
  for (std::int32_t bad : {std::int32_t{-1}, std::int32_t{100}, std::numeric_limits<std::int32_t>::min(),
                           std::numeric_limits<std::int32_t>::max()}) {
    std::vector<std::int32_t> p32 = {0, 1, 2, bad};
    EXPECT_EQ(rope::apply<float>(*tab, in_view(), out_view(), p32.data()), rope::status::position_out_of_range);
    expect_out_untouched();
    EXPECT_EQ(rope::apply<float>(*tab, rope::packed_heads(in.data(), T, H, D), p32.data()),
              rope::status::position_out_of_range);
    expect_in_untouched();
  }
}

// apply_qk validates q and k (and the positions) before writing either: a bad k leaves a valid q
// untouched, in place and out of place.
TEST_F(HotPath, ApplyQkWritesNeitherWhenOneIsBad) {
  std::vector<float> q(T * H * D, 0.5f), k(T * 1 * D, 0.5f);
  std::vector<float> q_out(T * H * D, kCanary), k_out(T * 1 * D, kCanary);
  const auto qv = rope::packed_heads(q.data(), T, H, D);
  struct bad_case {
    rope::heads_view<float> k;
    rope::status expected;
  };
  const bad_case cases[] = {
      {rope::heads_view<float>{nullptr, T, 1, D, D, D}, rope::status::null_pointer},
      {rope::heads_view<float>{k.data(), T, 2, D, D, D / 2}, rope::status::bad_stride},
      {rope::heads_view<float>{k.data(), T, 1, 16, 16, 16}, rope::status::bad_dimension},
      {rope::heads_view<float>{k.data(), T - 1, 1, D, D, D}, rope::status::bad_dimension},
  };
  for (const bad_case& c : cases) {
    EXPECT_EQ(rope::apply_qk<float>(*tab, qv, c.k, pos.data()), c.expected);
    EXPECT_EQ(rope::apply_qk<float>(*tab, rope::heads_view<const float>(qv), rope::packed_heads(q_out.data(), T, H, D),
                                    rope::heads_view<const float>(c.k), rope::packed_heads(k_out.data(), T, 1, D),
                                    pos.data()),
              c.expected);
    for (float v : q) ASSERT_EQ(v, 0.5f);
    for (float v : k) ASSERT_EQ(v, 0.5f);
    for (float v : q_out) ASSERT_EQ(v, kCanary);
    for (float v : k_out) ASSERT_EQ(v, kCanary);
  }
  pos[1] = 100;  // both valid, one position past the table
  EXPECT_EQ(rope::apply_qk<float>(*tab, qv, rope::packed_heads(k.data(), T, 1, D), pos.data()),
            rope::status::position_out_of_range);
  for (float v : q) ASSERT_EQ(v, 0.5f);
  for (float v : k) ASSERT_EQ(v, 0.5f);
  // k alone (q empty): its positions are still checked.
  EXPECT_EQ(rope::apply_qk<float>(*tab, rope::packed_heads(q.data(), T, 0, D), rope::packed_heads(k.data(), T, 1, D),
                                  pos.data()),
            rope::status::position_out_of_range);
  for (float v : k) ASSERT_EQ(v, 0.5f);
}

// The positions array inside an output (here the bytes of a token's row): the kernels read
// positions[t] after writing earlier tokens' rows, so a checked position could change before
// its use. Refused, nothing written, for apply in and out of place, apply_qk and the
// re-rotations; positions just past the output's last element are fine.
TEST_F(HotPath, PositionsInsideAnOutputAreRefused) {
  // One int64 block holds the output rows (as floats: the library never writes them here) and
  // the positions; D = 64 floats are 32 int64s per row.
  const std::ptrdiff_t rows = T * H, row64 = D / 2;
  std::vector<std::int64_t> block(static_cast<std::size_t>(rows * row64 + 8), 0);
  float* out_rows = reinterpret_cast<float*>(block.data());
  auto out_v = rope::packed_heads(out_rows, T, H, D);
  for (std::ptrdiff_t at : {std::ptrdiff_t{0}, row64 + 5, (rows - 1) * row64 + row64 - 1}) {
    std::int64_t* p = block.data() + at;
    for (std::ptrdiff_t t = 0; t < T && at + t < static_cast<std::ptrdiff_t>(block.size()); ++t) p[t] = t;
    const std::vector<std::int64_t> before = block;
    auto unchanged = [&] { return std::memcmp(block.data(), before.data(), block.size() * 8) == 0; };
    EXPECT_EQ(rope::apply<float>(*tab, in_view(), out_v, p), rope::status::overlapping_buffers) << at;
    EXPECT_TRUE(unchanged()) << at;
    EXPECT_EQ(rope::apply<float>(*tab, out_v, p), rope::status::overlapping_buffers) << at;
    EXPECT_TRUE(unchanged()) << at;
    std::vector<float> q(static_cast<std::size_t>(T * H * D), 0.5f);
    EXPECT_EQ(rope::apply_qk<float>(*tab, rope::packed_heads(q.data(), T, H, D), out_v, p),
              rope::status::overlapping_buffers) << at;
    EXPECT_TRUE(unchanged()) << at;
    for (float v : q) ASSERT_EQ(v, 0.5f);
    const rope::frequencies f = tab->frequencies();
    EXPECT_EQ(rope::shift_positions<float>(f, rope::layout::half_split, out_v, p, 1),
              rope::status::overlapping_buffers) << at;
    EXPECT_EQ(rope::rerotate<float>(f, f, rope::layout::half_split, in_view(), out_v, p),
              rope::status::overlapping_buffers) << at;
    EXPECT_TRUE(unchanged()) << at;
    std::fill(block.begin(), block.end(), 0);
  }
  // Right after the last row: no shared byte.
  std::int64_t* after = block.data() + rows * row64;
  for (std::ptrdiff_t t = 0; t < T; ++t) after[t] = t;
  EXPECT_EQ(rope::apply<float>(*tab, in_view(), out_v, after), rope::status::ok);
}

// rerotate / shift_positions: a frequency whose angles pass double's range below 2^32, or an
// attention-factor ratio past it, is refused (bad_dimension, as other invalid frequencies
// there), nothing written; 2^-10 below the limit is accepted.
TEST_F(HotPath, RerotationAnglesOrRatioPastDoubleRangeAreRefused) {
  rope::frequencies f = tab->frequencies();
  auto keys = rope::packed_heads(in.data(), T, H, D);
  f.inv_freq[1] = 0x1p990;
  EXPECT_EQ(rope::shift_positions<float>(f, rope::layout::half_split, keys, pos.data(), 1),
            rope::status::bad_dimension);
  EXPECT_EQ(rope::rerotate<float>(tab->frequencies(), f, rope::layout::half_split, in_view(),
                                  out_view(), pos.data()),
            rope::status::bad_dimension);
  expect_in_untouched();
  expect_out_untouched();
  rope::frequencies from = tab->frequencies(), to = tab->frequencies();
  from.attention_factor = 1e-300;
  to.attention_factor = 1e300;
  EXPECT_EQ(rope::rerotate<float>(from, to, rope::layout::half_split, in_view(), out_view(),
                                  pos.data()),
            rope::status::bad_dimension);
  expect_out_untouched();
  f.inv_freq[1] = 0x1p980;
  EXPECT_EQ(rope::rerotate<float>(tab->frequencies(), f, rope::layout::half_split, in_view(),
                                  out_view(), pos.data()),
            rope::status::ok);
}

// shared/testing.md: a 16-bit result out of range is +-Inf with the right sign, never NaN.
// Float keys past the fp16 range (65504) are rotated straight into an fp16 cache; in bf16 the
// same happens past float's range, reached here with the attention factor.
template <class H>
void expect_out_of_range_is_signed_inf(float big, double attention_factor) {
  rope::frequencies f = rope::default_frequencies(rope::make_spec(8, 8, 1e4, rope::layout::half_split));
  f.attention_factor = attention_factor;
  auto tab = rope::table<float>::build(f, rope::layout::half_split, 4);
  // pairs (x0, x4) .. (x3, x7); position 0 leaves each pair's direction, scaled by A
  const float in[8] = {big, -big, 1.0f, -1.0f, 0.0f, 0.0f, 0.5f, -0.5f};
  H out[8];
  const std::int64_t p = 0;
  ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads<const float>(in, 1, 1, 8), rope::packed_heads(out, 1, 1, 8), &p),
            rope::status::ok);
  const float o0 = rope::storage_traits<H>::load(out[0]), o1 = rope::storage_traits<H>::load(out[1]);
  EXPECT_TRUE(std::isinf(o0) && o0 > 0) << o0;
  EXPECT_TRUE(std::isinf(o1) && o1 < 0) << o1;
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(std::isnan(rope::storage_traits<H>::load(out[i]))) << i;
  EXPECT_TRUE(std::isfinite(rope::storage_traits<H>::load(out[2])));
}

TEST(OutOfRange16, Fp16ResultPastRangeIsSignedInfinity) { expect_out_of_range_is_signed_inf<rope::float16>(70000.0f, 1.0); }
TEST(OutOfRange16, Bf16ResultPastRangeIsSignedInfinity) { expect_out_of_range_is_signed_inf<rope::bfloat16>(3.0e38f, 1.5); }

TEST(Status, EveryCodeHasAMessageAndKind) {
  for (rope::status s :
       {rope::status::null_pointer, rope::status::bad_dimension, rope::status::bad_stride,
        rope::status::overlapping_buffers, rope::status::bad_option})
    EXPECT_EQ(rope::kind(s), rope::error_kind::invalid_argument) << rope::message(s);
  EXPECT_EQ(rope::kind(rope::status::ok), rope::error_kind::none);
  EXPECT_NE(std::string(rope::message(rope::status::position_out_of_range)).find("out of range"), std::string::npos);
}

}  // namespace
