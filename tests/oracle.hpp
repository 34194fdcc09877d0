// An independent reference for rope's tests: the angle formed in long double from a long
// double frequency, cos/sin in long double, and an explicit 2x2 rotation matrix (Eigen) applied
// to each pair. Shares no code with the library.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <rope/spec.hpp>

namespace oracle {

using ld = long double;

/// |got - want| in ulps of got (double): how far a double the library formed is from its
/// long double reference.
inline ld ulps_off(double got, ld want) {
  const double ulp = std::nextafter(got, std::numeric_limits<double>::infinity()) - got;
  return std::fabs(static_cast<ld>(got) - want) / static_cast<ld>(ulp);
}

/// w_j = base^(-2j/d) in long double.
inline std::vector<ld> inv_freq(double base, int rotary_dim) {
  std::vector<ld> w(static_cast<std::size_t>(rotary_dim / 2));
  for (std::size_t j = 0; j < w.size(); ++j)
    w[j] = std::pow(static_cast<ld>(base), -static_cast<ld>(2 * j) / static_cast<ld>(rotary_dim));
  return w;
}

/// cos and sin of p * w for a double w and 0 <= p < 2^32, with the product exact: w is split
/// into its top 32 bits and the other 21, so both products with p fit long double's 64-bit
/// significand, and the sum goes through the angle-addition identity. (A long double product
/// p * w is off by up to |p w| 2^-64: 2^-44 rad at p w = 2^20, many ulps of a tiny result.)
struct cos_sin {
  ld c, s;
};
inline cos_sin cos_sin_of_product(std::int64_t p, double w) {
  int e;
  const double m = std::frexp(w, &e);
  const double w1 = std::ldexp(std::trunc(std::ldexp(m, 32)), e - 32);  // w's top 32 bits
  const double w2 = w - w1;                                               // the other 21
  const ld a1 = static_cast<ld>(p) * static_cast<ld>(w1);  // exact: 32 + 32 bits
  const ld a2 = static_cast<ld>(p) * static_cast<ld>(w2);  // exact: 32 + 21 bits
  return {std::cos(a1) * std::cos(a2) - std::sin(a1) * std::sin(a2),
          std::sin(a1) * std::cos(a2) + std::cos(a1) * std::sin(a2)};
}

/// Index of the first and second member of pair j.
inline std::size_t first(rope::layout l, std::size_t j, std::size_t) { return l == rope::layout::interleaved ? 2 * j : j; }
inline std::size_t second(rope::layout l, std::size_t j, std::size_t pairs) {
  return l == rope::layout::interleaved ? 2 * j + 1 : j + pairs;
}

/// The 2x2 rotation by angle phi (counter-clockwise), scaled by a.
inline Eigen::Matrix<ld, 2, 2> rotation(ld phi, ld a = 1) {
  Eigen::Matrix<ld, 2, 2> r;
  const ld c = std::cos(phi), s = std::sin(phi);
  r << c, -s, s, c;
  return a * r;
}

/// Rotates the first rotary_dim entries of x (length head_dim) at position p; the rest are
/// copied. sign = -1 gives the inverse rotation.
template <class T>
std::vector<ld> rotate(const T* x, int head_dim, int rotary_dim, const std::vector<ld>& w,
                       rope::layout l, ld p, int sign = 1, ld a = 1) {
  std::vector<ld> out(static_cast<std::size_t>(head_dim));
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = static_cast<ld>(x[k]);
  const std::size_t P = static_cast<std::size_t>(rotary_dim / 2);
  for (std::size_t j = 0; j < P; ++j) {
    const std::size_t i0 = first(l, j, P), i1 = second(l, j, P);
    Eigen::Matrix<ld, 2, 1> v(static_cast<ld>(x[i0]), static_cast<ld>(x[i1]));
    const Eigen::Matrix<ld, 2, 1> r = rotation(static_cast<ld>(sign) * p * w[j], a) * v;
    out[i0] = r(0);
    out[i1] = r(1);
  }
  return out;
}

}  // namespace oracle
