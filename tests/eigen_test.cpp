// rope/eigen.hpp: the Eigen overloads on row-major matrices, Maps with outer strides, blocks
// and Refs. Every result is checked twice: bitwise against rope::apply on the same memory
// described by a raw heads_view (the overloads must only describe memory, never compute
// differently), and against the long double 2x2 oracle of tests/oracle.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <rope/eigen.hpp>
#include <rope/rope.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "oracle.hpp"

// Eigen's 16-bit types adopted with the README's one line each (rope/storage.hpp); compiled
// with the suite's warnings as errors (GCC's -Wclass-memaccess once fired on these).
template <>
struct rope::storage_traits<Eigen::half> : rope::fp16_storage<Eigen::half> {};
template <>
struct rope::storage_traits<Eigen::bfloat16> : rope::bf16_storage<Eigen::bfloat16> {};

namespace {

using ld = long double;
template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMap = Eigen::Map<RowMajor<float>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <class T>
T unit() {
  return std::is_same<T, float>::value ? static_cast<T>(0x1p-24) : static_cast<T>(0x1p-53);
}

template <class M>
void fill_random(M& m, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    for (Eigen::Index c = 0; c < m.cols(); ++c)
      m(r, c) = static_cast<typename M::Scalar>(dist(gen));
}

std::vector<std::int64_t> some_positions(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::int64_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::int64_t>(gen() % 100000);
  if (n > 0) p[0] = 0;
  if (n > 1) p[1] = 99999;
  return p;
}

template <class A, class B>
bool bitwise_equal(const A& a, const B& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  for (Eigen::Index r = 0; r < a.rows(); ++r)
    for (Eigen::Index c = 0; c < a.cols(); ++c) {
      const auto x = a(r, c);
      const auto y = b(r, c);
      if (std::memcmp(&x, &y, sizeof x) != 0) return false;
    }
  return true;
}

// out (rows x n_heads*head_dim) against the oracle applied to in, row t at pos[t]. The float
// bound is 3u*r per element (r the pair's norm); double adds |theta| u for the angle.
template <class In, class Out>
void expect_matches_oracle(const In& in, const Out& out, std::ptrdiff_t n_heads,
                           const rope::spec& s, const std::vector<std::int64_t>& pos) {
  using T = typename In::Scalar;
  const std::vector<ld> w = oracle::inv_freq(s.base, s.rotary_dim);
  const std::size_t pairs = static_cast<std::size_t>(s.rotary_dim / 2);
  const ld u = static_cast<ld>(unit<T>());
  ld worst = 0;
  for (Eigen::Index t = 0; t < in.rows(); ++t)
    for (std::ptrdiff_t h = 0; h < n_heads; ++h) {
      std::vector<T> x(static_cast<std::size_t>(s.head_dim));
      for (int i = 0; i < s.head_dim; ++i)
        x[static_cast<std::size_t>(i)] = in(t, h * s.head_dim + i);
      const ld p = static_cast<ld>(pos[static_cast<std::size_t>(t)]);
      const std::vector<ld> ref =
          oracle::rotate(x.data(), s.head_dim, s.rotary_dim, w, s.layout, p);
      for (std::size_t j = 0; j < pairs; ++j) {
        const std::size_t i0 = oracle::first(s.layout, j, pairs),
                          i1 = oracle::second(s.layout, j, pairs);
        const ld r = std::hypot(static_cast<ld>(x[i0]), static_cast<ld>(x[i1]));
        const ld theta = p * w[j];
        const ld bound = (std::is_same<T, float>::value ? 3 * u : (3 + std::fabs(theta)) * u) * r;
        for (std::size_t i : {i0, i1}) {
          const ld got = static_cast<ld>(out(t, h * s.head_dim + static_cast<Eigen::Index>(i)));
          const ld err = std::fabs(got - ref[i]);
          if (bound > 0) worst = std::max(worst, err / bound);
          ASSERT_LE(err, bound) << "token " << t << " head " << h << " dim " << i;
        }
      }
      for (int i = s.rotary_dim; i < s.head_dim; ++i) {  // pass-through dims, bit for bit
        const T a = x[static_cast<std::size_t>(i)], b = out(t, h * s.head_dim + i);
        ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "pass-through dim " << i;
      }
    }
  ::testing::Test::RecordProperty("worst_error_over_bound",
                                  std::to_string(static_cast<double>(worst)));
}

// The same rows rotated by rope::apply through a raw packed heads_view (the reference path).
template <class T>
RowMajor<T> rotate_raw(const rope::table<T>& tab, RowMajor<T> m, std::ptrdiff_t n_heads,
                       const std::vector<std::int64_t>& pos,
                       rope::direction dir = rope::direction::forward) {
  const std::ptrdiff_t hd = m.cols() / n_heads;
  EXPECT_EQ(
      rope::apply<T>(tab, rope::packed_heads(m.data(), m.rows(), n_heads, hd), pos.data(), dir),
      rope::status::ok);
  return m;
}

TEST(Eigen, FixedHeadDimMatrixInPlace) {
  const rope::spec s = rope::make_spec(128, 128, 1e4, rope::layout::half_split);
  const auto tab = rope::get_table<float>(s, 100000);
  Eigen::Matrix<float, Eigen::Dynamic, 128, Eigen::RowMajor> q(37, 128);
  fill_random(q, 1);
  const auto pos = some_positions(37, 2);
  const RowMajor<float> before = q;
  ASSERT_EQ(rope::eigen::apply(*tab, q, pos.data()), rope::status::ok);
  EXPECT_TRUE(bitwise_equal(q, rotate_raw(*tab, before, 1, pos)));
  expect_matches_oracle(before, q, 1, s, pos);
}

TEST(Eigen, DynamicMatrixWithHeadsInterleavedPartialRotary) {
  const rope::spec s = rope::make_spec(64, 32, 5e5, rope::layout::interleaved);
  const auto tab = rope::get_table<float>(s, 100000);
  RowMajor<float> q(19, 4 * 64);
  fill_random(q, 3);
  const auto pos = some_positions(19, 4);
  const RowMajor<float> before = q;
  ASSERT_EQ(rope::eigen::apply(*tab, q, 4, pos.data()), rope::status::ok);
  EXPECT_TRUE(bitwise_equal(q, rotate_raw(*tab, before, 4, pos)));
  expect_matches_oracle(before, q, 4, s, pos);
}

TEST(Eigen, FixedColumnsWithPartialRotaryFallsBackToDynamic) {
  // 128 columns but only 64 rotated: the fixed column count is not the rotary dim, so the
  // overload must not pass Dim = 128 (which rope::apply would refuse).
  const rope::spec s = rope::make_spec(128, 64, 1e4, rope::layout::half_split);
  const auto tab = rope::get_table<float>(s, 100000);
  Eigen::Matrix<float, 5, 128, Eigen::RowMajor> q;
  fill_random(q, 5);
  const auto pos = some_positions(5, 6);
  const RowMajor<float> before = q;
  ASSERT_EQ(rope::eigen::apply(*tab, q, pos.data()), rope::status::ok);
  EXPECT_TRUE(bitwise_equal(q, rotate_raw(*tab, before, 1, pos)));
  expect_matches_oracle(before, q, 1, s, pos);
  // An explicit Dim is passed through unchanged: 64 works, 128 is refused with nothing written.
  const RowMajor<float> rotated = q;
  EXPECT_EQ(rope::eigen::apply<128>(*tab, q, pos.data()), rope::status::bad_dimension);
  EXPECT_TRUE(bitwise_equal(q, rotated));
  ASSERT_EQ(rope::eigen::apply<64>(*tab, q, pos.data(), rope::direction::inverse),
            rope::status::ok);
  EXPECT_TRUE(bitwise_equal(q, rotate_raw(*tab, rotated, 1, pos, rope::direction::inverse)));
}

TEST(Eigen, DoubleMatrix) {
  const rope::spec s = rope::make_spec(80, 80, 1e6, rope::layout::half_split);
  const auto tab = rope::get_table<double>(s, 100000);
  Eigen::Matrix<double, Eigen::Dynamic, 80, Eigen::RowMajor> k(11, 80);
  fill_random(k, 7);
  const auto pos = some_positions(11, 8);
  const RowMajor<double> before = k;
  ASSERT_EQ(rope::eigen::apply(*tab, k, pos.data()), rope::status::ok);
  EXPECT_TRUE(bitwise_equal(k, rotate_raw(*tab, before, 1, pos)));
  expect_matches_oracle(before, k, 1, s, pos);
}

// A fused qkv projection output: each token row holds q (8 heads), k (2 heads), v (2 heads).
// q and k are Maps into it with the row length as outer stride; v must not change.
TEST(Eigen, MapsWithOuterStrideIntoFusedQkv) {
  const int D = 64, Hq = 8, Hkv = 2, T = 13;
  const Eigen::Index row = (Hq + 2 * Hkv) * D;
  const rope::spec s = rope::make_spec(D, D, 1e4, rope::layout::half_split);
  const auto tab = rope::get_table<float>(s, 100000);
  RowMajor<float> qkv(T, row);
  fill_random(qkv, 9);
  const RowMajor<float> before = qkv;
  const auto pos32 = [&] {
    std::vector<std::int32_t> p;
    for (std::int64_t v : some_positions(T, 10)) p.push_back(static_cast<std::int32_t>(v));
    return p;
  }();
  std::vector<std::int64_t> pos(pos32.begin(), pos32.end());

  // Each map rotated in place, one call per map.
  ASSERT_EQ(rope::eigen::apply(*tab, StridedMap(qkv.data(), T, Hq * D, Eigen::OuterStride<>(row)),
                               Hq, pos32.data()),
            rope::status::ok);
  StridedMap k(qkv.data() + Hq * D, T, Hkv * D, Eigen::OuterStride<>(row));
  ASSERT_EQ(rope::eigen::apply(*tab, k, Hkv, pos32.data()), rope::status::ok);

  // Reference: the same buffer described by raw strided views.
  RowMajor<float> ref = before;
  ASSERT_EQ(
      rope::apply<float>(*tab, rope::heads_view<float>{ref.data(), T, Hq, D, row, D}, pos.data()),
      rope::status::ok);
  ASSERT_EQ(rope::apply<float>(
                *tab, rope::heads_view<float>{ref.data() + Hq * D, T, Hkv, D, row, D}, pos.data()),
            rope::status::ok);
  EXPECT_TRUE(bitwise_equal(qkv, ref));
  expect_matches_oracle(before.leftCols(Hq * D), qkv.leftCols(Hq * D), Hq, s, pos);
  expect_matches_oracle(before.middleCols(Hq * D, Hkv * D), qkv.middleCols(Hq * D, Hkv * D), Hkv, s,
                        pos);
  EXPECT_TRUE(bitwise_equal(qkv.rightCols(Hkv * D), before.rightCols(Hkv * D))) << "v was written";

  // q and k in separate buffers through apply_qk (grouped-query: 8 and 2 heads), each a Map
  // with an outer stride, give the same bits. (q and k fused in one buffer through apply_qk:
  // GroupedQuery.FusedQkvBufferInOneCall in apply_test.)
  RowMajor<float> qbuf = RowMajor<float>::Zero(T, row), kbuf = RowMajor<float>::Zero(T, row);
  qbuf.leftCols(Hq * D) = before.leftCols(Hq * D);
  kbuf.leftCols(Hkv * D) = before.middleCols(Hq * D, Hkv * D);
  StridedMap qm(qbuf.data(), T, Hq * D, Eigen::OuterStride<>(row));
  StridedMap km(kbuf.data(), T, Hkv * D, Eigen::OuterStride<>(row));
  ASSERT_EQ(rope::eigen::apply_qk(*tab, qm, Hq, km, Hkv, pos32.data()), rope::status::ok);
  EXPECT_TRUE(bitwise_equal(qbuf.leftCols(Hq * D), ref.leftCols(Hq * D)));
  EXPECT_TRUE(bitwise_equal(kbuf.leftCols(Hkv * D), ref.middleCols(Hq * D, Hkv * D)));
  EXPECT_EQ(rope::eigen::apply_qk(*tab, qm, 3, km, Hkv, pos32.data()), rope::status::bad_dimension);

  // 64-bit positions give the same bits as 32-bit ones.
  RowMajor<float> again = before;
  ASSERT_EQ(rope::eigen::apply(*tab, StridedMap(again.data(), T, Hq * D, Eigen::OuterStride<>(row)),
                               Hq, pos.data()),
            rope::status::ok);
  ASSERT_EQ(rope::eigen::apply(
                *tab, StridedMap(again.data() + Hq * D, T, Hkv * D, Eigen::OuterStride<>(row)), Hkv,
                pos.data()),
            rope::status::ok);
  EXPECT_TRUE(bitwise_equal(again, ref));
}

TEST(Eigen, BlocksAndRefs) {
  const int D = 32, H = 6, T = 9;
  const rope::spec s = rope::make_spec(D, D, 1e4, rope::layout::interleaved);
  const auto tab = rope::get_table<float>(s, 100000);
  RowMajor<float> m(T, H * D);
  fill_random(m, 11);
  const RowMajor<float> before = m;
  const auto pos = some_positions(4, 12);

  // Rows 2..5, heads 1..3: a temporary block, written in place.
  ASSERT_EQ(rope::eigen::apply(*tab, m.block(2, D, 4, 3 * D), 3, pos.data()), rope::status::ok);
  RowMajor<float> ref = before;
  ASSERT_EQ(
      rope::apply<float>(
          *tab, rope::heads_view<float>{ref.data() + 2 * H * D + D, 4, 3, D, H * D, D}, pos.data()),
      rope::status::ok);
  EXPECT_TRUE(bitwise_equal(m, ref)) << "the block or something outside it differs";
  expect_matches_oracle(before.block(2, D, 4, 3 * D), m.block(2, D, 4, 3 * D), 3, s, pos);

  // A Ref to a block (how an engine passes views through its own functions).
  RowMajor<float> r = before;
  Eigen::Ref<RowMajor<float>> view = r.block(2, D, 4, 3 * D);
  ASSERT_EQ(rope::eigen::apply(*tab, view, 3, pos.data()), rope::status::ok);
  EXPECT_TRUE(bitwise_equal(r, ref));

  // A single row is one token (a row vector's outer stride plays no part).
  RowMajor<float> one = before;
  const std::int64_t p = 4321;
  ASSERT_EQ(rope::eigen::apply(*tab, one.row(3), H, &p), rope::status::ok);
  RowMajor<float> one_ref = before;
  ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(one_ref.data() + 3 * H * D, 1, H, D), &p),
            rope::status::ok);
  EXPECT_TRUE(bitwise_equal(one, one_ref));
}

TEST(Eigen, OutOfPlaceEqualsInPlace) {
  const rope::spec s = rope::make_spec(96, 64, 1e4, rope::layout::half_split);
  const auto tab = rope::get_table<float>(s, 100000);
  RowMajor<float> in(7, 2 * 96);
  fill_random(in, 13);
  const RowMajor<float> before = in;
  const auto pos = some_positions(7, 14);

  RowMajor<float> out = RowMajor<float>::Constant(7, 2 * 96, 12345.0f);
  ASSERT_EQ(rope::eigen::apply(*tab, in, out, 2, pos.data()), rope::status::ok);
  EXPECT_TRUE(bitwise_equal(in, before)) << "input was written";
  RowMajor<float> inplace = in;
  ASSERT_EQ(rope::eigen::apply(*tab, inplace, 2, pos.data()), rope::status::ok);
  EXPECT_TRUE(bitwise_equal(out, inplace));
  expect_matches_oracle(before, out, 2, s, pos);

  // Out of place into a block of a wider cache-like matrix, from a const Map.
  RowMajor<float> cache = RowMajor<float>::Constant(10, 4 * 96, -7.0f);
  const RowMajor<float> cache_before = cache;
  Eigen::Map<const RowMajor<float>> in_map(in.data(), 7, 2 * 96);
  ASSERT_EQ(rope::eigen::apply(*tab, in_map, cache.block(3, 96, 7, 2 * 96), 2, pos.data()),
            rope::status::ok);
  EXPECT_TRUE(bitwise_equal(cache.block(3, 96, 7, 2 * 96), inplace));
  RowMajor<float> outside = cache;
  outside.block(3, 96, 7, 2 * 96) = cache_before.block(3, 96, 7, 2 * 96);
  EXPECT_TRUE(bitwise_equal(outside, cache_before)) << "wrote outside the block";

  // One head per row, fixed columns.
  Eigen::Matrix<float, Eigen::Dynamic, 96, Eigen::RowMajor> in1 = before.leftCols(96);
  Eigen::Matrix<float, Eigen::Dynamic, 96, Eigen::RowMajor> out1(7, 96);
  ASSERT_EQ(rope::eigen::apply(*tab, in1, out1, pos.data()), rope::status::ok);
  EXPECT_TRUE(bitwise_equal(out1, rotate_raw(*tab, RowMajor<float>(before.leftCols(96)), 1, pos)));
}

// Eigen::half / Eigen::bfloat16 storage: the same bits as rope::float16 / rope::bfloat16, out
// of place from float (a KV cache write) and in place, and within one 16-bit ulp of the long
// double oracle read through Eigen's own conversion to float.
template <class E, class R>
void check_adopted_16bit(int mantissa_bits) {
  const rope::spec s = rope::make_spec(128, 128, 1e4, rope::layout::half_split);
  const auto tab = rope::get_table<float>(s, 100000);
  constexpr std::ptrdiff_t T = 5, H = 3, D = 128;
  const std::size_t n = static_cast<std::size_t>(T * H * D);
  RowMajor<float> in(T, H * D);
  fill_random(in, 31);
  const auto pos = some_positions(static_cast<std::size_t>(T), 32);
  std::vector<E> e(n);
  std::vector<R> r(n);
  const auto in_view = rope::packed_heads<const float>(in.data(), T, H, D);
  rope::status st =
      rope::apply<float, 128>(*tab, in_view, rope::packed_heads(e.data(), T, H, D), pos.data());
  ASSERT_EQ(st, rope::status::ok);
  st = rope::apply<float, 128>(*tab, in_view, rope::packed_heads(r.data(), T, H, D), pos.data());
  ASSERT_EQ(st, rope::status::ok);
  ASSERT_EQ(std::memcmp(e.data(), r.data(), n * 2), 0) << "float -> adopted type";
  const std::vector<ld> w = oracle::inv_freq(s.base, s.rotary_dim);
  const ld ulp = std::ldexp(1.0L, -mantissa_bits);
  for (std::ptrdiff_t t = 0; t < T; ++t)
    for (std::ptrdiff_t h = 0; h < H; ++h) {
      const float* x = in.data() + (t * H + h) * D;
      const std::vector<ld> ref =
          oracle::rotate(x, static_cast<int>(D), static_cast<int>(D), w, s.layout,
                         static_cast<ld>(pos[static_cast<std::size_t>(t)]));
      for (std::ptrdiff_t i = 0; i < D; ++i) {
        const ld got =
            static_cast<ld>(static_cast<float>(e[static_cast<std::size_t>((t * H + h) * D + i)]));
        const ld want = ref[static_cast<std::size_t>(i)];
        // Within one ulp of the correctly rounded value: 1.5 ulps of the 16-bit type at |want|
        // (2^-24, fp16's subnormal spacing, at least).
        const ld one = std::max(std::ldexp(1.0L, std::ilogb(want == 0 ? 1e-30L : want)) * ulp,
                                std::ldexp(1.0L, -24));
        ASSERT_LE(std::fabs(got - want), 1.5L * one)
            << "token " << t << " head " << h << " dim " << i;
      }
    }
  // In place from the same 16-bit values.
  std::vector<E> e2 = e;
  std::vector<R> r2 = r;
  st = rope::apply<E, 128>(*tab, rope::packed_heads(e2.data(), T, H, D), pos.data());
  ASSERT_EQ(st, rope::status::ok);
  st = rope::apply<R, 128>(*tab, rope::packed_heads(r2.data(), T, H, D), pos.data());
  ASSERT_EQ(st, rope::status::ok);
  EXPECT_EQ(std::memcmp(e2.data(), r2.data(), n * 2), 0) << "in place";
  EXPECT_NE(std::memcmp(e2.data(), e.data(), n * 2), 0) << "in place changed nothing";
}

TEST(Eigen, HalfAdoptedThroughTraits) {
  check_adopted_16bit<Eigen::half, rope::float16>(10);
}
TEST(Eigen, Bfloat16AdoptedThroughTraits) {
  check_adopted_16bit<Eigen::bfloat16, rope::bfloat16>(7);
}

// Bad input: the documented status, and not one element written.
TEST(Eigen, BadShapesAndStridesWriteNothing) {
  const rope::spec s = rope::make_spec(64, 64, 1e4, rope::layout::half_split);
  const auto tab = rope::get_table<float>(s, 1000);
  RowMajor<float> m(4, 128);
  fill_random(m, 15);
  const RowMajor<float> before = m;
  const std::int64_t pos[4] = {1, 2, 3, 4};

  EXPECT_EQ(rope::eigen::apply(*tab, m, 3, pos), rope::status::bad_dimension);  // 128 % 3 != 0
  EXPECT_EQ(rope::eigen::apply(*tab, m, 0, pos), rope::status::bad_dimension);
  EXPECT_EQ(rope::eigen::apply(*tab, m, -2, pos), rope::status::bad_dimension);
  EXPECT_EQ(rope::eigen::apply(*tab, m, 4, pos), rope::status::bad_dimension);  // head 32 < 64
  EXPECT_EQ(rope::eigen::apply(*tab, m, 2, static_cast<const std::int64_t*>(nullptr)),
            rope::status::null_pointer);
  const std::int64_t far[4] = {1, 2, tab->length(), 4};  // the cache may hold a longer table
  EXPECT_EQ(rope::eigen::apply(*tab, m, 2, far), rope::status::position_out_of_range);
  EXPECT_TRUE(bitwise_equal(m, before));

  // A run-time inner stride other than 1: heads are not contiguous.
  using Strided =
      Eigen::Map<RowMajor<float>, Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
  Strided every_other(m.data(), 4, 64, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(128, 2));
  EXPECT_EQ(rope::eigen::apply(*tab, every_other, pos), rope::status::bad_stride);
  EXPECT_TRUE(bitwise_equal(m, before));
  // The same Map type with inner stride 1 is fine.
  Strided contiguous(m.data(), 4, 64, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(128, 1));
  ASSERT_EQ(rope::eigen::apply(*tab, contiguous, pos), rope::status::ok);
  RowMajor<float> ref = before;
  ASSERT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{ref.data(), 4, 1, 64, 128, 64}, pos),
            rope::status::ok);
  EXPECT_TRUE(bitwise_equal(m, ref));

  // Out of place: shapes differ, or the output overlaps the input without being it.
  RowMajor<float> in = before, small(3, 128);
  EXPECT_EQ(rope::eigen::apply(*tab, in, small, 2, pos), rope::status::bad_dimension);
  EXPECT_EQ(rope::eigen::apply(*tab, in.middleCols(0, 64), in.middleCols(32, 64), pos),
            rope::status::overlapping_buffers);
  EXPECT_TRUE(bitwise_equal(in, before));

  // Zero tokens: success, nothing touched.
  RowMajor<float> empty(0, 128);
  EXPECT_EQ(rope::eigen::apply(*tab, empty, 2, static_cast<const std::int64_t*>(nullptr)),
            rope::status::ok);
}

}  // namespace
