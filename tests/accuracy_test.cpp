// Accuracy at long context (shared/testing.md, numeric test 3): the phase recovered from the
// outputs with atan2 in double stays within 4 * 2^-24 rad of p * w_j at positions 2^10 .. 2^24
// for every base in {1e4, 5e5, 1e6, 1e7}, both layouts, float and double storage, dense and
// compact tables: the error does not grow with the position. Double is also held to
// (8 + p_max) * 2^-53 rad (double_bound below).
#include "accuracy.hpp"
#include "test_scale.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <rope/rope.hpp>
#include <string>
#include <vector>

namespace {

constexpr long double kBound = 4 * 0x1p-24L;

// Double storage is held to its own precision as well: w_j is rounded once to double, so the
// angle p * w_j is off by up to p * w_0 * 2^-53 (w_0 = 1), plus a few units of 2^-53 from the
// entries and atan2. (8 + p_max) * 2^-53 is 2^-29 at p = 2^24, 128 times below kBound: a double
// table whose entries were float's would pass kBound and fail this.
long double double_bound(const std::vector<std::int64_t>& positions) {
  std::int64_t p_max = 0;
  for (std::int64_t p : positions) p_max = p > p_max ? p : p_max;
  return (8 + static_cast<long double>(p_max)) * 0x1p-53L;
}

using rope_test::quick_scale;

template <class T>
void check_phase(rope::layout l) {
  using R = rope::compute_type_t<T>;
  const std::vector<std::int64_t> positions = accuracy::large_positions(quick_scale() ? 8 : 64);
  std::vector<std::int64_t> dense_positions;
  for (std::int64_t p : positions)
    if (p < (std::int64_t{1} << 14) + 2) dense_positions.push_back(p);
  for (double base : {1e4, 5e5, 1e6, 1e7}) {
    const rope::spec s = rope::make_spec(128, 128, base, l);
    const rope::frequencies f = rope::default_frequencies(s);
    auto compact =
        rope::table<R>::build(f, l, (std::int64_t{1} << 24) + 2, rope::table_mode::compact);
    const long double ec = accuracy::max_phase_error<T>(*compact, base, positions);
    EXPECT_LE(ec, kBound) << "compact, base " << base << ", " << rope::to_string(l);
    auto dense = rope::table<R>::build(f, l, (std::int64_t{1} << 14) + 2, rope::table_mode::dense);
    const long double ed = accuracy::max_phase_error<T>(*dense, base, dense_positions);
    EXPECT_LE(ed, kBound) << "dense, base " << base << ", " << rope::to_string(l);
    if constexpr (sizeof(R) == 8) {
      EXPECT_LE(ec, double_bound(positions))
          << "compact, base " << base << ", " << rope::to_string(l);
      EXPECT_LE(ed, double_bound(dense_positions))
          << "dense, base " << base << ", " << rope::to_string(l);
    }
    std::printf(
        "%-6s %-11s base %-7g: max phase error %.3Lf * 2^-24 rad (compact, 2^10..2^24), %.3Lf * "
        "2^-24 (dense, 2^10..2^14)\n",
        sizeof(T) == 4 ? "float" : "double", rope::to_string(l), base, ec / 0x1p-24L,
        ed / 0x1p-24L);
  }
}

TEST(PhaseAtScale, FloatHalfSplit) {
  check_phase<float>(rope::layout::half_split);
}
TEST(PhaseAtScale, FloatInterleaved) {
  check_phase<float>(rope::layout::interleaved);
}
TEST(PhaseAtScale, DoubleHalfSplit) {
  check_phase<double>(rope::layout::half_split);
}
TEST(PhaseAtScale, DoubleInterleaved) {
  check_phase<double>(rope::layout::interleaved);
}

// The check can fail: frequencies rounded to float (one of the two roundings a float32 angle
// p * w_j suffers in HF and ggml) already move the phase at p = 2^24 far past the bound.
TEST(PhaseAtScale, DetectsFloatRoundedFrequencies) {
  const double base = 1e4;
  const std::vector<std::int64_t> positions = accuracy::large_positions(0);
  rope::frequencies f =
      rope::default_frequencies(rope::make_spec(8, 8, base, rope::layout::half_split));
  for (double& w : f.inv_freq) w = static_cast<double>(static_cast<float>(w));
  auto tab = rope::table<float>::build(f, rope::layout::half_split, (std::int64_t{1} << 24) + 2,
                                       rope::table_mode::compact);
  EXPECT_GT(accuracy::max_phase_error<float>(*tab, base, positions), kBound);
}

}  // namespace
