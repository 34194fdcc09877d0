// The program every packaging consumer builds (find_package, add_subdirectory, FetchContent,
// pkg-config): it rotates one head vector with rope and checks each pair against a 2x2
// rotation computed here, so a package that builds but ships wrong headers still fails.
#include <cmath>
#include <cstdio>
#include <rope/rope.hpp>

int main() {
  constexpr int head_dim = 8;
  constexpr double base = 10000.0;
  constexpr long position = 12345;
  const rope::spec spec = rope::make_spec(head_dim, head_dim, base, rope::layout::half_split);
  const auto table = rope::get_table<float>(spec, position + 1);

  const float x[head_dim] = {1.0f, -2.0f, 0.5f, 3.0f, 0.25f, 1.5f, -1.0f, 2.0f};
  float y[head_dim];
  if (rope::apply<float, head_dim>(*table, position, x, y, head_dim) != rope::status::ok) {
    std::printf("rope::apply failed\n");
    return 1;
  }

  // Pair j = (x[j], x[j + 4]) turned by p * base^(-2j/8): (u, v) -> (u c - v s, u s + v c).
  double worst = 0;
  for (int j = 0; j < head_dim / 2; ++j) {
    const double angle = static_cast<double>(position) * std::pow(base, -2.0 * j / head_dim);
    const double c = std::cos(angle), s = std::sin(angle);
    const double u = x[j], v = x[j + head_dim / 2];
    const double r = std::hypot(u, v);
    worst = std::fmax(worst, std::fabs(y[j] - (u * c - v * s)) / r);
    worst = std::fmax(worst, std::fabs(y[j + head_dim / 2] - (u * s + v * c)) / r);
  }
  // rope promises 3 * 2^-24 * r; the reference here is only double, so allow a little more.
  const bool ok = worst <= 4.0 * std::ldexp(1.0, -24);
  std::printf("rope %d.%d.%d: position %ld, max |y - R y| / r = %.3g (%s)\n", ROPE_VERSION_MAJOR,
              ROPE_VERSION_MINOR, ROPE_VERSION_PATCH, position, worst, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
