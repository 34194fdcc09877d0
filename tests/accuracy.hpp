// Accuracy measurements shared by tests/accuracy_test.cpp (which asserts them) and
// tests/tools/accuracy_table.cpp (which prints the README's table). The reference is
// independent of the library: frequencies base^(-2j/d) and angles p * w_j in long double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <rope/rope.hpp>
#include <type_traits>
#include <vector>

#include "oracle.hpp"

namespace accuracy {

using ld = long double;

/// Positions 2^10 .. 2^24: every 2^k - 1, 2^k, 2^k + 1, and `n_random` random ones in between.
inline std::vector<std::int64_t> large_positions(int n_random) {
  std::vector<std::int64_t> p;
  for (int k = 10; k <= 24; ++k)
    for (std::int64_t d = -1; d <= 1; ++d) p.push_back((std::int64_t{1} << k) + d);
  std::mt19937_64 gen(0x5eed2024);
  for (int i = 0; i < n_random; ++i)
    p.push_back((std::int64_t{1} << 10) +
                static_cast<std::int64_t>(gen() % ((std::uint64_t{1} << 24) - 1024)));
  return p;
}

/// |a - b| reduced to [0, pi].
inline ld angle_distance(ld a, ld b) {
  const ld two_pi = 2 * 3.141592653589793238462643383279502884L;
  ld d = std::fmod(a - b, two_pi);
  if (d < 0) d += two_pi;
  return d > two_pi / 2 ? two_pi - d : d;
}

/// Largest phase error (radians) over every pair of one head_dim = rotary_dim head, recovered
/// from the outputs with atan2 in double: head 0 has every pair = (1, 0), head 1 has pair j =
/// (cos a_j, sin a_j) for arbitrary a_j, so both members of the multiply-add are exercised.
template <class T>
ld max_phase_error(const rope::table<rope::compute_type_t<T>>& tab, double base,
                   const std::vector<std::int64_t>& positions) {
  const int d = tab.rotary_dim();
  const std::size_t P = static_cast<std::size_t>(d / 2);
  const rope::layout l = tab.layout();
  const std::vector<ld> w = oracle::inv_freq(base, d);
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(positions.size());
  std::vector<T> x(static_cast<std::size_t>(n) * 2 * static_cast<std::size_t>(d));
  std::vector<double> a0(P);
  for (std::size_t j = 0; j < P; ++j) a0[j] = 0.7 + 0.37 * static_cast<double>(j);
  for (std::size_t t = 0; t < static_cast<std::size_t>(n); ++t)
    for (std::size_t j = 0; j < P; ++j) {
      T* h0 = &x[(2 * t) * static_cast<std::size_t>(d)];
      T* h1 = h0 + d;
      h0[oracle::first(l, j, P)] = T(1);
      h0[oracle::second(l, j, P)] = T(0);
      h1[oracle::first(l, j, P)] = static_cast<T>(std::cos(a0[j]));
      h1[oracle::second(l, j, P)] = static_cast<T>(std::sin(a0[j]));
    }
  const std::vector<T> in = x;
  if (rope::apply<T>(tab, rope::packed_heads(x.data(), n, 2, d), positions.data()) !=
      rope::status::ok)
    return 1e9L;
  ld worst = 0;
  for (std::size_t t = 0; t < static_cast<std::size_t>(n); ++t)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t j = 0; j < P; ++j) {
        const std::size_t base_i = (2 * t + h) * static_cast<std::size_t>(d);
        const std::size_t i0 = base_i + oracle::first(l, j, P),
                          i1 = base_i + oracle::second(l, j, P);
        const double before = std::atan2(static_cast<double>(in[i1]), static_cast<double>(in[i0]));
        const double after = std::atan2(static_cast<double>(x[i1]), static_cast<double>(x[i0]));
        const ld expected = static_cast<ld>(positions[t]) * w[j];
        const ld e = angle_distance(static_cast<ld>(after) - static_cast<ld>(before), expected);
        if (e > worst) worst = e;
      }
  return worst;
}

struct output_error {
  ld relative = 0;  ///< largest |out - ref| / r
  ld of_bound =
      0;  ///< largest |out - ref| / bound, bound = 3 u r (float), (3 + |theta|) u r (double)
};

/// Output errors over random inputs in [-1, 1], ref the long double 2x2 rotation of each pair
/// (u = 2^-24 for float storage, 2^-53 for double): head_dim = rotary_dim.
template <class T>
output_error max_output_error(const rope::table<rope::compute_type_t<T>>& tab, double base,
                              const std::vector<std::int64_t>& positions) {
  using R = rope::compute_type_t<T>;
  const ld u = static_cast<ld>(std::numeric_limits<R>::epsilon()) / 2;
  const int d = tab.rotary_dim();
  const std::size_t P = static_cast<std::size_t>(d / 2);
  const rope::layout l = tab.layout();
  const std::vector<ld> w = oracle::inv_freq(base, d);
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(positions.size());
  std::vector<T> x(static_cast<std::size_t>(n) * static_cast<std::size_t>(d));
  std::mt19937_64 gen(static_cast<std::uint64_t>(d) * 7919u + static_cast<std::uint64_t>(base));
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (auto& e : x) e = static_cast<T>(dist(gen));
  std::vector<T> out(x.size());
  output_error worst;
  if (rope::apply<T>(tab, rope::packed_heads<const T>(x.data(), n, 1, d),
                     rope::packed_heads(out.data(), n, 1, d), positions.data()) != rope::status::ok)
    return {1e9L, 1e9L};
  for (std::size_t t = 0; t < static_cast<std::size_t>(n); ++t)
    for (std::size_t j = 0; j < P; ++j) {
      const std::size_t i0 = t * static_cast<std::size_t>(d) + oracle::first(l, j, P);
      const std::size_t i1 = t * static_cast<std::size_t>(d) + oracle::second(l, j, P);
      const ld phi = static_cast<ld>(positions[t]) * w[j];
      const ld c = std::cos(phi), s = std::sin(phi), x0 = x[i0], x1 = x[i1];
      const ld r = std::hypot(x0, x1);
      if (r == 0) continue;
      const ld e = std::max(std::fabs(static_cast<ld>(out[i0]) - (c * x0 - s * x1)),
                            std::fabs(static_cast<ld>(out[i1]) - (s * x0 + c * x1)));
      const ld bound = (std::is_same<R, float>::value ? 3 : 3 + std::fabs(phi)) * u * r;
      worst.relative = std::max(worst.relative, e / r);
      worst.of_bound = std::max(worst.of_bound, e / bound);
    }
  return worst;
}

}  // namespace accuracy
