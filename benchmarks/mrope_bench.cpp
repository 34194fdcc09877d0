// rope/mrope.hpp: M-RoPE's cost against rope::apply over the same rows, side by side in one
// run: [tokens, 32 heads, 128] float, half_split, in place, Qwen2-VL's sections (16, 24, 24).
//  - BM_Apply: rope::apply at the temporal positions (the baseline);
//  - BM_MropeText: apply_mrope with three equal positions per token (text): rope::apply's
//    kernels, plus the check of the three streams;
//  - BM_MropeImage: apply_mrope on an image's tokens (frame, row, column differ): each token's
//    row gathered from three table rows (three ranges copied), then rope::apply's kernels;
//  - BM_MropeImageInterleaved: the same with Qwen3-VL's interleaved sections (24, 20, 20): the
//    row gathered entry by entry.
//
//   mrope_bench [--benchmark_repetitions=5 --benchmark_report_aggregates_only=true]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <rope/mrope.hpp>
#include <rope/rope.hpp>
#include <vector>

namespace {

constexpr int kDim = 128;
constexpr int kHeads = 32;
const rope::mrope_sections kSections{16, 24, 24, false};
const rope::mrope_sections kInterleavedSections{24, 20, 20, true};

struct rows {
  std::vector<float> x;
  std::vector<std::int64_t> pos;  // [3][tokens]: temporal, height, width
  std::shared_ptr<const rope::table<float>> tab;
  explicit rows(std::int64_t n, bool image)
      : x(static_cast<std::size_t>(n * kHeads * kDim), 0.5f),
        pos(static_cast<std::size_t>(3 * n)),
        tab(rope::get_table<float>(rope::make_spec(kDim, kDim, 1e6, rope::layout::half_split),
                                   8192)) {
    for (std::int64_t t = 0; t < n; ++t) {
      const auto i = static_cast<std::size_t>(t);
      const auto un = static_cast<std::size_t>(n);
      pos[i] = 100 + t;
      pos[un + i] = image ? 100 + t / 16 : 100 + t;      // a 16-column grid: row
      pos[2 * un + i] = image ? 100 + t % 16 : 100 + t;  // column
    }
  }
  rope::heads_view<float> view(std::int64_t n) {
    return rope::packed_heads(x.data(), n, kHeads, kDim);
  }
};

void BM_Apply(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  rows r(n, true);
  for (auto _ : state) {
    rope::status st = rope::apply<float, kDim>(*r.tab, r.view(n), r.pos.data());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * kHeads * kDim * 2 *
                          static_cast<std::int64_t>(sizeof(float)));
}

void mrope(benchmark::State& state, bool image, const rope::mrope_sections& sec = kSections) {
  const std::int64_t n = state.range(0);
  rows r(n, image);
  const std::int64_t* p = r.pos.data();
  for (auto _ : state) {
    rope::status st = rope::apply_mrope<float, kDim>(*r.tab, sec, r.view(n), p, p + n, p + 2 * n);
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * kHeads * kDim * 2 *
                          static_cast<std::int64_t>(sizeof(float)));
}
void BM_MropeText(benchmark::State& state) {
  mrope(state, false);
}
void BM_MropeImage(benchmark::State& state) {
  mrope(state, true);
}
void BM_MropeImageInterleaved(benchmark::State& state) {
  mrope(state, true, kInterleavedSections);
}

BENCHMARK(BM_Apply)->ArgName("tokens")->Arg(1)->Arg(512);
BENCHMARK(BM_MropeText)->ArgName("tokens")->Arg(1)->Arg(512);
BENCHMARK(BM_MropeImage)->ArgName("tokens")->Arg(1)->Arg(512);
BENCHMARK(BM_MropeImageInterleaved)->ArgName("tokens")->Arg(512);

}  // namespace

BENCHMARK_MAIN();
