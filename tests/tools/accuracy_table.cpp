// Prints the README's accuracy table: per storage type, layout, kernel path and table mode,
// the largest output error against a long double 2x2 rotation (|out - ref| / r, r the pair's
// norm, and as a fraction of the documented bound: 3 * 2^-24 * r for float, (3 + |theta|) *
// 2^-53 * r for double) over positions 0..4095 and 2^10..2^24, and the largest phase error
// recovered with atan2 at 2^10..2^24, over head dims 64, 80, 128, 256 and bases 1e4, 5e5,
// 1e6, 1e7 (--quick: head dim 64, base 1e4, positions 0..255 and fewer random ones; what ctest
// runs).
//
//   cmake --preset release && cmake --build --preset release --target accuracy_table
//   build/release/tests/accuracy_table
//
// Kernel path: this tool is built with ROPE_RUNTIME_DISPATCH and prints one block of rows per
// path the CPU runs (rope::force_isa): scalar (the specification), avx2, avx512, neon. The
// paths are bitwise identical by construction (simd_test: tests/simd_equivalence.hpp), so
// equal rows are the expected result here, measured rather than assumed. Exits 1 when a row is
// past its bound (ctest's tools.accuracy_table then fails).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <rope/rope.hpp>
#include <vector>

#include "../accuracy.hpp"

namespace {

struct row {
  long double relative = 0, of_bound = 0, phase = 0;
};

bool g_quick = false;
// Rows past a bound (of_bound > 1, or a phase error above 4 * 2^-24 rad, the testing.md figure
// accuracy_test asserts): main returns 1, so the ctest case fails with the table.
int g_failures = 0;

template <class T>
row measure(rope::layout l, rope::table_mode mode, const std::vector<std::int64_t>& small,
            const std::vector<std::int64_t>& large) {
  using R = rope::compute_type_t<T>;
  row r;
  const std::vector<int> head_dims =
      g_quick ? std::vector<int>{64} : std::vector<int>{64, 80, 128, 256};
  const std::vector<double> bases =
      g_quick ? std::vector<double>{1e4} : std::vector<double>{1e4, 5e5, 1e6, 1e7};
  for (int head_dim : head_dims)
    for (double base : bases) {
      const rope::spec s = rope::make_spec(head_dim, head_dim, base, l);
      const rope::frequencies f = rope::default_frequencies(s);
      const bool dense = mode == rope::table_mode::dense;
      const std::int64_t length = dense ? (std::int64_t{1} << 14) + 2 : (std::int64_t{1} << 24) + 2;
      auto tab = rope::table<R>::build(f, l, length, mode);
      std::vector<std::int64_t> big;
      for (std::int64_t p : large)
        if (p < length) big.push_back(p);
      std::vector<std::int64_t> all = small;
      all.insert(all.end(), big.begin(), big.end());
      const accuracy::output_error e = accuracy::max_output_error<T>(*tab, base, all);
      r.relative = std::max(r.relative, e.relative);
      r.of_bound = std::max(r.of_bound, e.of_bound);
      r.phase = std::max(r.phase, accuracy::max_phase_error<T>(*tab, base, big));
    }
  return r;
}

template <class T>
void print_rows(const char* type_name, rope::isa path) {
  std::vector<std::int64_t> small;
  for (std::int64_t p = 0; p < (g_quick ? 256 : 4096); ++p) small.push_back(p);
  const std::vector<std::int64_t> large = accuracy::large_positions(g_quick ? 8 : 64);
  for (rope::layout l : {rope::layout::half_split, rope::layout::interleaved})
    for (rope::table_mode mode : {rope::table_mode::dense, rope::table_mode::compact}) {
      const row r = measure<T>(l, mode, small, large);
      const bool bad = !(r.of_bound <= 1) || !(r.phase <= 4 * 0x1p-24L);
      g_failures += bad ? 1 : 0;
      std::printf("| %s | %s | %s | %s (%s) | %.2Le | %.2Lf | %.3Lg |\n", type_name,
                  rope::to_string(l), rope::to_string(path), mode == rope::table_mode::dense ? "dense" : "compact",
                  mode == rope::table_mode::dense ? "p < 2^14" : "p <= 2^24", r.relative,
                  r.of_bound, r.phase / 0x1p-24L);
      if (bad) std::printf("  ^ past the bound\n");
      std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv) {
  g_quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::printf(
      "| storage | layout | kernel | table | max \\|out - ref\\| / r | of the bound | max phase "
      "error (2^-24 rad) |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (rope::isa path : {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512, rope::isa::neon}) {
    if (!rope::force_isa(path)) continue;  // this CPU (or build) lacks the path
    print_rows<float>("float", path);
    print_rows<double>("double", path);
  }
  if (g_failures > 0) std::printf("%d rows past the bound\n", g_failures);
  return g_failures > 0 ? 1 : 0;
}
