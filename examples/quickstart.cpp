// Quick start: build a spec and a table, rotate a query and a key for a token, and see that
// their score depends only on the distance m - n between their positions.
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

  std::printf("query at m, key at n: the score depends only on m - n\n");
  std::printf("%8s %8s %8s %12s\n", "m", "n", "m - n", "score");
  bool ok = true;
  for (long dist : {0L, 1L, 10L, 1000L}) {
    const float first = score(dist, 0);
    for (long n : {0L, 7L, 4096L, 90000L}) {
      const float s = score(n + dist, n);
      std::printf("%8ld %8ld %8ld %12.6f\n", n + dist, n, dist, static_cast<double>(s));
      ok = ok && std::fabs(s - first) <= 1e-4f * (1 + std::fabs(first));
    }
  }
  // The raw error for a bad call: nothing is written, a status says why.
  float x[128] = {};
  const rope::status st = rope::apply<float, 128>(*table, 100000, x);
  std::printf("position 100000 in a 100000-position table: %s\n", rope::message(st));
  ok = ok && st == rope::status::position_out_of_range;
  std::printf(ok ? "OK: equal distances give equal scores\n" : "FAILED\n");
  return ok ? 0 : 1;
}
