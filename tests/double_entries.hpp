// Table.DoubleEntriesWithinHalfAnUlp's check, shared with
// FastMath.DoubleTableEntriesWithinHalfAnUlp (compiled with -ffast-math): every sampled entry of double tables within half its ulp plus
// 2^-58 A of A times the exact cos or sin.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <rope/table.hpp>

namespace rope_test {

/// Finite by the exponent bits: a NaN or Inf fails it even in a file built with -ffast-math,
/// where -ffinite-math-only lets the compiler assume comparisons (and std::isfinite) never see
/// one.
inline bool finite_bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return ((b >> 52) & 0x7FFu) != 0x7FFu;
}
inline bool finite_bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return ((b >> 23) & 0xFFu) != 0xFFu;
}

struct double_entries_grid {
  int rotary_dim;
  std::int64_t dense_length, compact_length;
};

/// Largest |entry - exact| and largest excess over half an ulp of the entry, in units of 2^-53 A.
struct double_entries_worst {
  long double error = 0, excess = 0;
};

/// Builds a double table for every grid, base, attention factor, layout and mode (dense and
/// compact) and checks its entries at positions(n): exact(p, w, c, s) sets c and s to the cos and
/// sin of the exact p * w. Stops at the first entry past the bound (a fatal failure).
template <class Exact, class Positions>
void check_double_entries(const std::vector<double_entries_grid>& grids,
                          const std::vector<double>& bases, const std::vector<double>& factors,
                          Exact exact, Positions positions, double_entries_worst& worst) {
  using ld = long double;
  for (const double_entries_grid& g : grids)
    for (double base : bases)
      for (double a : factors)
        for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
          for (rope::table_mode mode : {rope::table_mode::dense, rope::table_mode::compact}) {
            rope::frequencies f =
                rope::default_frequencies(rope::make_spec(g.rotary_dim, g.rotary_dim, base, l));
            f.attention_factor = a;
            const std::int64_t n =
                mode == rope::table_mode::dense ? g.dense_length : g.compact_length;
            auto tab = rope::table<double>::build(f, l, n, mode);
            ASSERT_EQ(tab->mode(), mode);
            const std::size_t P = f.inv_freq.size(), m = tab->row_width();
            const bool inter = l == rope::layout::interleaved;
            std::vector<double> scratch(2 * m);
            for (std::int64_t p : positions(n)) {
              const double* row = tab->row(p, scratch.data());
              for (std::size_t j = 0; j < P; ++j) {
                ld c, s;
                exact(p, f.inv_freq[j], c, s);
                const double gc = inter ? row[2 * j] : row[j];
                const double gs = inter ? row[m + 2 * j + 1] : row[m + j];
                for (const auto& [got, want] : {std::pair<double, ld>{gc, a * c}, {gs, a * s}}) {
                  ASSERT_TRUE(finite_bits(got)) << "p=" << p << " j=" << j << " base=" << base;
                  const ld err = std::fabs(static_cast<ld>(got) - want);
                  const ld half_ulp =
                      static_cast<ld>(std::nextafter(std::fabs(got), 2.0 * a) - std::fabs(got)) / 2;
                  worst.error = std::max(worst.error, err / (0x1p-53L * a));
                  worst.excess = std::max(worst.excess, (err - half_ulp) / (0x1p-53L * a));
                  ASSERT_LE(err, half_ulp + 0x1p-58L * a)
                      << "p=" << p << " j=" << j << " base=" << base << " A=" << a
                      << " rotary_dim=" << g.rotary_dim << " " << rope::to_string(l) << " mode "
                      << static_cast<int>(mode);
                }
                if (inter) {
                  ASSERT_EQ(row[2 * j], row[2 * j + 1]);
                  ASSERT_EQ(row[m + 2 * j], -row[m + 2 * j + 1]);
                }
              }
            }
          }
}

}  // namespace rope_test
