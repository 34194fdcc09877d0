// Quick start: build a spec and a table, rotate a query and a key for a token, and see that
// their score depends only on the distance m - n between their positions, and equals the
// closed form of two 2x2 rotations computed here in double.
#include <cmath>
#include <cstdio>
#include <vector>

#include <rope/rope.hpp>

int main() {
  // A Llama-style head: 128 dims, all rotated, base 10000, HF half-split pairs.
  const rope::spec spec = rope::make_spec(/*head_dim=*/128, /*rotary_dim=*/128, /*base=*/1e4,
                                          rope::layout::half_split);
  // Cached and shared: every layer and thread asking for the same spec gets this table.
  const auto table = rope::get_table<float>(spec, /*positions=*/100000);

  std::vector<float> q0(128), k0(128);
  for (int i = 0; i < 128; ++i) {
    q0[static_cast<std::size_t>(i)] = std::sin(0.37f * static_cast<float>(i));
    k0[static_cast<std::size_t>(i)] = std::cos(0.11f * static_cast<float>(i) + 1.0f);
  }

  // score(m, n) = <RoPE_m(q), RoPE_n(k)>
  auto score = [&](long m, long n) {
    std::vector<float> q = q0, k = k0;
    if (rope::apply<float, 128>(*table, m, q.data()) != rope::status::ok ||
        rope::apply<float, 128>(*table, n, k.data()) != rope::status::ok)
      return NAN;
    double s = 0;
    for (std::size_t i = 0; i < 128; ++i) s += static_cast<double>(q[i]) * k[i];
    return static_cast<float>(s);
  };

  // The same score without rope: pair j = (x[j], x[j + 64]) turned by p * w_j, with
  // w_j = 10000^(-2j/128), so for d = m - n
  //   <R_m q, R_n k> = sum_j (qa ka + qb kb) cos(d w_j) + (qa kb - qb ka) sin(d w_j).
  auto closed_form = [&](long d) {
    double s = 0;
    for (std::size_t j = 0; j < 64; ++j) {
      const double w = std::pow(1e4, -2.0 * static_cast<double>(j) / 128.0),
                   a = static_cast<double>(d) * w;
      const double qa = q0[j], qb = q0[j + 64], ka = k0[j], kb = k0[j + 64];
      s += (qa * ka + qb * kb) * std::cos(a) + (qa * kb - qb * ka) * std::sin(a);
    }
    return s;
  };
  double qq = 0, kk = 0;
  for (std::size_t i = 0; i < 128; ++i) {
    qq += static_cast<double>(q0[i]) * q0[i];
    kk += static_cast<double>(k0[i]) * k0[i];
  }
  // The README's accuracy contract for a score: within 8 * 2^-24 * |q| |k|.
  const double tol = 8 * std::ldexp(1.0, -24) * std::sqrt(qq * kk);

  std::printf("query at m, key at n: the score depends only on m - n\n");
  std::printf("%8s %8s %8s %12s %12s\n", "m", "n", "m - n", "score", "closed form");
  bool ok = true;
  for (long dist : {0L, 1L, 10L, 1000L}) {
    const double want = closed_form(dist);
    for (long n : {0L, 7L, 4096L, 90000L}) {
      const float s = score(n + dist, n);
      std::printf("%8ld %8ld %8ld %12.6f %12.6f\n", n + dist, n, dist, static_cast<double>(s),
                  want);
      ok = ok && std::fabs(static_cast<double>(s) - want) <= tol;
    }
  }
  // And rotation happened: the score at distance 1000 is not the unrotated <q, k>.
  ok = ok && std::fabs(closed_form(1000) - closed_form(0)) > 100 * tol;
  // The raw error for a bad call: nothing is written, a status says why.
  float x[128] = {};
  const rope::status st = rope::apply<float, 128>(*table, 100000, x);
  std::printf("position 100000 in a 100000-position table: %s\n", rope::message(st));
  ok = ok && st == rope::status::position_out_of_range;
  std::printf(ok ? "OK: equal distances give equal scores, each the closed form's within 8 * 2^-24 "
                   "|q| |k|\n"
                 : "FAILED\n");
  return ok ? 0 : 1;
}
