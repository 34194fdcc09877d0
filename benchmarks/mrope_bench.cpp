// rope/mrope.hpp: M-RoPE's cost against rope::apply over the same rows, side by side in one
// run: [tokens, 32 heads, 128] float, half_split, in place, Qwen2-VL's sections (16, 24, 24).
//  - BM_Apply: rope::apply at the temporal positions (the baseline);
//  - BM_MropeText: apply_mrope with three equal positions per token (text): rope::apply's
//    kernels, plus the check of the three streams;
//  - BM_MropeImage: apply_mrope on an image's tokens (frame, row, column differ): each token's
//    row gathered from three table rows (three ranges copied), then rope::apply's kernels;
//  - BM_MropeImageInterleaved: the same with Qwen3-VL's interleaved sections (24, 20, 20): the
//    row gathered entry by entry;
//  - BM_XdropeImage: apply_xdrope (HunyuanOCR's sections 16, 16, 16, 16) on the same image
//    tokens with their image index as the fourth position: four table rows per token.
// And a vision encoder's 2-D RoPE (README "Vision encoders": Qwen2-VL's ViT, heads of 80,
// sections {0, 20, 20}) over a 32 x 32 grid of patches, [1024, 16, 80] float, half_split, in
// place: BM_VisionApply, rope::apply at the rows' positions (the baseline), and BM_VisionRope,
// apply_mrope with rows and columns.
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
  std::vector<std::int64_t> pos;  // [4][tokens]: temporal, height, width, image index
  std::shared_ptr<const rope::table<float>> tab;
  explicit rows(std::int64_t n, bool image)
      : x(static_cast<std::size_t>(n * kHeads * kDim), 0.5f),
        pos(static_cast<std::size_t>(4 * n)),
        tab(rope::get_table<float>(rope::make_spec(kDim, kDim, 1e6, rope::layout::half_split),
                                   8192)) {
    for (std::int64_t t = 0; t < n; ++t) {
      const auto i = static_cast<std::size_t>(t);
      const auto un = static_cast<std::size_t>(n);
      pos[i] = 100 + t;
      pos[un + i] = image ? 100 + t / 16 : 100 + t;      // a 16-column grid: row
      pos[2 * un + i] = image ? 100 + t % 16 : 100 + t;  // column
      pos[3 * un + i] = image ? 101 : 100 + t;           // image index (XD-RoPE)
    }
  }
  rope::heads_view<float> view(std::int64_t n) {
    return rope::packed_heads(x.data(), n, kHeads, kDim);
  }
};

// Times call() (a rope::status) and counts `elements` floats read and written per call.
template <class Call>
void measure(benchmark::State& state, std::int64_t elements, const Call& call) {
  for (auto _ : state) {
    rope::status st = call();
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * elements * 2 *
                          static_cast<std::int64_t>(sizeof(float)));
}

void BM_Apply(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  rows r(n, true);
  measure(state, n * kHeads * kDim,
          [&] { return rope::apply<float, kDim>(*r.tab, r.view(n), r.pos.data()); });
}

void mrope(benchmark::State& state, bool image, const rope::mrope_sections& sec = kSections) {
  const std::int64_t n = state.range(0);
  rows r(n, image);
  const std::int64_t* p = r.pos.data();
  measure(state, n * kHeads * kDim, [&] {
    return rope::apply_mrope<float, kDim>(*r.tab, sec, r.view(n), p, p + n, p + 2 * n);
  });
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
void BM_XdropeImage(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  rows r(n, true);
  const std::int64_t* p = r.pos.data();
  const rope::xdrope_sections sec{16, 16, 16, 16};
  measure(state, n * kHeads * kDim, [&] {  // sequence position, column, row, image index
    return rope::apply_xdrope<float, kDim>(*r.tab, sec, r.view(n), p, p + 2 * n, p + n, p + 3 * n);
  });
}

constexpr int kVisionDim = 80;
constexpr int kVisionHeads = 16;
constexpr std::int64_t kPatches = 1024;  // a 32 x 32 grid

struct patches {
  std::vector<float> x;
  std::vector<std::int64_t> row, col;
  std::shared_ptr<const rope::table<float>> tab;
  patches()
      : x(static_cast<std::size_t>(kPatches * kVisionHeads * kVisionDim), 0.5f),
        row(static_cast<std::size_t>(kPatches)),
        col(static_cast<std::size_t>(kPatches)),
        tab(rope::get_table<float>(
            rope::make_spec(kVisionDim, kVisionDim, 1e4, rope::layout::half_split), 64)) {
    for (std::int64_t t = 0; t < kPatches; ++t) {
      row[static_cast<std::size_t>(t)] = t / 32;
      col[static_cast<std::size_t>(t)] = t % 32;
    }
  }
  rope::heads_view<float> view() {
    return rope::packed_heads(x.data(), kPatches, kVisionHeads, kVisionDim);
  }
};

void vision(benchmark::State& state, bool two_d) {
  patches p;
  const rope::mrope_sections sec{0, kVisionDim / 4, kVisionDim / 4, false};
  measure(state, kPatches * kVisionHeads * kVisionDim, [&] {
    return two_d ? rope::apply_mrope<float, kVisionDim>(*p.tab, sec, p.view(), p.row.data(),
                                                        p.row.data(), p.col.data())
                 : rope::apply<float, kVisionDim>(*p.tab, p.view(), p.row.data());
  });
}
void BM_VisionApply(benchmark::State& state) {
  vision(state, false);
}
void BM_VisionRope(benchmark::State& state) {
  vision(state, true);
}

BENCHMARK(BM_Apply)->ArgName("tokens")->Arg(1)->Arg(512);
BENCHMARK(BM_MropeText)->ArgName("tokens")->Arg(1)->Arg(512);
BENCHMARK(BM_MropeImage)->ArgName("tokens")->Arg(1)->Arg(512);
BENCHMARK(BM_MropeImageInterleaved)->ArgName("tokens")->Arg(512);
BENCHMARK(BM_XdropeImage)->ArgName("tokens")->Arg(1)->Arg(512);
BENCHMARK(BM_VisionApply);
BENCHMARK(BM_VisionRope);

}  // namespace

BENCHMARK_MAIN();
