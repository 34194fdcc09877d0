// rope::apply per head dimension, layout and batch shape, with an in-place stream baseline
// (x = a*x + b over the same bytes) in the same binary, so the ratio to what memory allows is
// read off one run. After the Google Benchmark output, prints a table per (D, T): GB/s of each
// layout and its ratio to the stream baseline (medians when run with repetitions).
//
//   apply_bench [--benchmark_repetitions=5 --benchmark_report_aggregates_only=true]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <rope/rope.hpp>

namespace {

constexpr int kHeads = 32;
constexpr int kDims[] = {64, 80, 96, 128, 256};
constexpr int kTokens[] = {1, 512};

// Positions: decode at 4000, prefill 0..T-1.
std::vector<std::int32_t> positions_for(int tokens) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(tokens));
  for (int t = 0; t < tokens; ++t) p[static_cast<std::size_t>(t)] = tokens == 1 ? 4000 : t;
  return p;
}

std::vector<float> input(std::size_t n) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 97) * 0.01f - 0.5f;
  return x;
}

void set_counters(benchmark::State& state, int D, int T, int kind) {
  const double bytes = 2.0 * T * kHeads * D * sizeof(float);  // read + write
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * static_cast<std::int64_t>(state.iterations()));
  state.SetItemsProcessed(static_cast<std::int64_t>(T) * kHeads * D / 2 * static_cast<std::int64_t>(state.iterations()));
  state.counters["D"] = D;
  state.counters["T"] = T;
  state.counters["kind"] = kind;  // 0 stream, 1 interleaved, 2 half_split
}

template <int D, rope::layout L>
void BM_Apply(benchmark::State& state, int T) {
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, L), 4096 + 1);
  std::vector<float> x = input(static_cast<std::size_t>(T) * kHeads * D);
  const std::vector<std::int32_t> pos = positions_for(T);
  const auto view = rope::packed_heads(x.data(), T, kHeads, D);
  for (auto _ : state) {
    const rope::status st = rope::apply<float, D>(*tab, view, pos.data());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, D, T, static_cast<int>(L));
}

void BM_Stream(benchmark::State& state, int D, int T) {
  std::vector<float> x = input(static_cast<std::size_t>(T) * kHeads * static_cast<std::size_t>(D));
  const float a = 0.999f, b = 0.0005f;
  for (auto _ : state) {
    float* p = x.data();
    const std::size_t n = x.size();
    for (std::size_t i = 0; i < n; ++i) p[i] = a * p[i] + b;
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
  }
  set_counters(state, D, T, 0);
}

template <int D>
void register_dim() {
  for (int T : kTokens) {
    const std::string suffix = "/tokens:" + std::to_string(T);
    benchmark::RegisterBenchmark(("BM_Stream<float, " + std::to_string(D) + ">" + suffix).c_str(),
                                 [T](benchmark::State& s) { BM_Stream(s, D, T); });
    benchmark::RegisterBenchmark(("BM_Apply<float, " + std::to_string(D) + ", interleaved>" + suffix).c_str(),
                                 [T](benchmark::State& s) { BM_Apply<D, rope::layout::interleaved>(s, T); });
    benchmark::RegisterBenchmark(("BM_Apply<float, " + std::to_string(D) + ", half_split>" + suffix).c_str(),
                                 [T](benchmark::State& s) { BM_Apply<D, rope::layout::half_split>(s, T); });
  }
}

// Keeps GB/s per (D, T, kind): the median aggregate when there are repetitions, else the run.
class table_reporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::tuple<int, int, int>, double> gbps;

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const bool aggregate = r.run_type == Run::RT_Aggregate;
      if (aggregate && r.aggregate_name != "median") continue;
      auto get = [&](const char* k) { return r.counters.at(k).value; };
      if (!r.counters.count("D")) continue;
      const auto key = std::make_tuple(static_cast<int>(get("D")), static_cast<int>(get("T")),
                                       static_cast<int>(get("kind")));
      if (!aggregate && gbps.count(key)) continue;  // first repetition only when no aggregates
      gbps[key] = get("bytes_per_second") / 1e9;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  register_dim<64>();
  register_dim<80>();
  register_dim<96>();
  register_dim<128>();
  register_dim<256>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  table_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\nrope::apply, float, in place, %d heads, cached table: GB/s and ratio to the in-place "
              "stream x = a*x + b over the same bytes\n",
              kHeads);
  std::printf("%5s %6s %12s %18s %8s %18s %8s\n", "D", "tokens", "stream GB/s", "interleaved GB/s",
              "ratio", "half_split GB/s", "ratio");
  for (int D : kDims)
    for (int T : kTokens) {
      const auto s = reporter.gbps.find({D, T, 0}), i = reporter.gbps.find({D, T, 1}),
                 h = reporter.gbps.find({D, T, 2});
      if (s == reporter.gbps.end() || i == reporter.gbps.end() || h == reporter.gbps.end()) continue;
      std::printf("%5d %6d %12.1f %18.1f %8.2f %18.1f %8.2f\n", D, T, s->second, i->second,
                  i->second / s->second, h->second, h->second / s->second);
    }
  return 0;
}
