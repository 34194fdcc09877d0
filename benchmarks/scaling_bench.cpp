// rope/scaling.hpp: table build time per scaling method and length, and decode apply speed with
// the long-context (compact) table vs the dense one, side by side in one run. After the Google
// Benchmark output, prints two tables (medians when run with repetitions):
//  - build time (ms) per method for 4K, 128K and 1M positions at rotary_dim 128, half_split,
//    float: dense for 4K and 128K (64 MiB), compact for 128K and 1M (a dense 1M table would
//    take 512 MiB);
//  - decode: 1 token x 32 heads x 128 dims, float, in place, positions advancing by one per
//    iteration from 100000, ns per call for a dense and a compact table over 131072 positions,
//    and the ratio compact / dense. Times are CPU times (robust to a shared machine).
//
//  - the same decode comparison measured in pairs (alternating batches; median of the ratios),
//    which stays meaningful on a loaded machine.
//
//   scaling_bench [--benchmark_repetitions=5 --benchmark_report_aggregates_only=true]
//   [--paired=false]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <rope/rope.hpp>
#include <rope/scaling.hpp>
#include <string>
#include <tuple>
#include <vector>

namespace {

constexpr int kDim = 128;
constexpr int kHeads = 32;

struct method {
  const char* name;
  rope::scaling sc;
};

std::vector<method> methods() {
  std::vector<double> sh(kDim / 2), lg(kDim / 2);
  for (std::size_t j = 0; j < sh.size(); ++j) {
    sh[j] = 1.0 + 0.01 * static_cast<double>(j);
    lg[j] = 1.0 + 0.5 * static_cast<double>(j);
  }
  return {{"default", rope::scaling{}},
          {"linear", rope::scaling::linear_interpolation(4)},
          {"ntk", rope::scaling::ntk_static(4)},
          {"dynamic", rope::scaling::dynamic_ntk(4, 4096)},
          {"yarn", rope::scaling::yarn_scaling(32, 4096)},
          {"llama3", rope::scaling::llama3_scaling(8, 1, 4, 8192)},
          {"longrope", rope::scaling::longrope_scaling(sh, lg, 32, 4096)}};
}

const rope::spec& spec() {
  static const rope::spec s = rope::make_spec(kDim, kDim, 5e5, rope::layout::half_split);
  return s;
}

// Frequencies and table, not cached: what one cold start costs.
void BM_Build(benchmark::State& state, const rope::scaling& sc, std::int64_t positions,
              rope::table_mode mode) {
  std::size_t bytes = 0;
  for (auto _ : state) {
    const auto f = rope::compute_frequencies(spec(), sc, /*seq_len=*/positions).frequencies;
    auto tab = rope::table<float>::build(f, spec().layout, positions, mode);
    bytes = tab->bytes();
    benchmark::DoNotOptimize(tab);
  }
  state.counters["MiB"] = static_cast<double>(bytes) / (1 << 20);
}

// advance: the position grows by one per call (a decode loop: a new table row every call);
// otherwise the same position every call (the dense row stays in L1: dense's best case).
void BM_Decode(benchmark::State& state, rope::table_mode mode, bool advance) {
  const std::int64_t n = 131072;
  auto tab = rope::table<float>::build(rope::default_frequencies(spec()), spec().layout, n, mode);
  std::vector<float> x(kHeads * kDim);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.01f - 0.5f;
  const auto view = rope::packed_heads(x.data(), 1, kHeads, kDim);
  std::int64_t p = 100000;
  for (auto _ : state) {
    const rope::status st = rope::apply<float, kDim>(*tab, view, &p);
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
    if (advance && ++p == n) p = 100000;
  }
  state.counters["MiB"] = static_cast<double>(tab->bytes()) / (1 << 20);
}

// Keeps the time per iteration (ns) per benchmark name: the median aggregate when there are
// repetitions, else the first run.
class summary_reporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns;
  std::map<std::string, double> mib;

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const bool aggregate = r.run_type == Run::RT_Aggregate;
      if (aggregate && r.aggregate_name != "median") continue;
      const std::string name = r.run_name.function_name;
      if (!aggregate && ns.count(name)) continue;
      ns[name] =
          r.GetAdjustedCPUTime() * to_ns(r.time_unit);  // CPU time: the machine may be shared
      if (r.counters.count("MiB")) mib[name] = r.counters.at("MiB").value;
    }
  }

 private:
  static double to_ns(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond:
        return 1;
      case benchmark::kMicrosecond:
        return 1e3;
      case benchmark::kMillisecond:
        return 1e6;
      case benchmark::kSecond:
        return 1e9;
    }
    return 1;
  }
};

struct build_case {
  const char* label;
  std::int64_t positions;
  rope::table_mode mode;
};
constexpr build_case kBuilds[] = {{"4K dense", 4096, rope::table_mode::dense},
                                  {"128K dense", 131072, rope::table_mode::dense},
                                  {"128K compact", 131072, rope::table_mode::compact},
                                  {"1M compact", 1 << 20, rope::table_mode::compact}};

std::string build_name(const char* method, const build_case& b) {
  return std::string("BM_Build<") + method + ", " + b.label + ">";
}

// Paired decode measurement, robust to a loaded machine: batches of calls with the dense and
// the compact table alternate, each timed on the steady clock; the result is the median over
// pairs of (compact batch time / dense batch time), plus each mode's median ns per call.
struct paired_result {
  double dense_ns, compact_ns, ratio;
};

paired_result paired_decode(bool advance) {
  const std::int64_t n = 131072;
  const auto f = rope::default_frequencies(spec());
  auto dense = rope::table<float>::build(f, spec().layout, n, rope::table_mode::dense);
  auto compact = rope::table<float>::build(f, spec().layout, n, rope::table_mode::compact);
  std::vector<float> x(kHeads * kDim);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.01f - 0.5f;
  const auto view = rope::packed_heads(x.data(), 1, kHeads, kDim);
  constexpr int kCalls = 256, kPairs = 401;
  std::int64_t pd = 100000, pc = 100000;
  auto batch = [&](const rope::table<float>& tab, std::int64_t& p) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      const rope::status st = rope::apply<float, kDim>(tab, view, &p);
      benchmark::DoNotOptimize(st);
      benchmark::ClobberMemory();
      if (advance && ++p == n) p = 100000;
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
           kCalls;
  };
  std::vector<double> td, tc, ratio;
  for (int k = 0; k < kPairs; ++k) {
    const bool dense_first = k % 2 == 0;
    const double a = batch(dense_first ? *dense : *compact, dense_first ? pd : pc);
    const double b = batch(dense_first ? *compact : *dense, dense_first ? pc : pd);
    const double d = dense_first ? a : b, c = dense_first ? b : a;
    td.push_back(d);
    tc.push_back(c);
    ratio.push_back(c / d);
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {median(td), median(tc), median(ratio)};
}

std::string decode_name(rope::table_mode mode, bool advance) {
  return std::string("BM_Decode<float, 128, half_split, ") +
         (mode == rope::table_mode::dense ? "dense" : "compact") +
         ">/heads:32/positions:" + (advance ? "advancing" : "fixed");
}

}  // namespace

int main(int argc, char** argv) {
  for (const method& m : methods())
    for (const build_case& b : kBuilds) {
      const rope::scaling sc = m.sc;
      const build_case bc = b;
      benchmark::RegisterBenchmark(build_name(m.name, b).c_str(), [sc, bc](benchmark::State& s) {
        BM_Build(s, sc, bc.positions, bc.mode);
      })->Unit(benchmark::kMillisecond);
    }
  for (bool advance : {true, false})
    for (rope::table_mode mode : {rope::table_mode::dense, rope::table_mode::compact})
      benchmark::RegisterBenchmark(
          decode_name(mode, advance).c_str(),
          [mode, advance](benchmark::State& s) { BM_Decode(s, mode, advance); });
  // --paired=false skips the paired decode measurement printed at the end.
  bool run_paired = true;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--paired=false") {
      run_paired = false;
      for (int k = i; k + 1 < argc; ++k) argv[k] = argv[k + 1];
      --argc;
      break;
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  summary_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf(
      "\nTable build (frequencies + table, not cached), rotary_dim %d, half_split, float: ms\n",
      kDim);
  std::printf("%10s", "method");
  for (const build_case& b : kBuilds) std::printf(" %13s", b.label);
  std::printf("\n");
  for (const method& m : methods()) {
    std::printf("%10s", m.name);
    for (const build_case& b : kBuilds) {
      auto it = reporter.ns.find(build_name(m.name, b));
      if (it == reporter.ns.end())
        std::printf(" %13s", "-");
      else
        std::printf(" %13.3f", it->second / 1e6);
    }
    std::printf("\n");
  }
  std::printf("%10s", "MiB");
  for (const build_case& b : kBuilds) {
    auto it = reporter.mib.find(build_name("default", b));
    if (it == reporter.mib.end())
      std::printf(" %13s", "-");
    else
      std::printf(" %13.2f", it->second);
  }
  std::printf("\n");
  std::printf(
      "\nDecode, 1 token x %d heads x %d, float, in place, 131072-position tables (Google\n"
      "Benchmark medians, CPU time): ns per call\n",
      kHeads, kDim);
  std::printf("%28s %10s %10s %16s\n", "positions", "dense", "compact", "compact / dense");
  for (bool advance : {true, false}) {
    const auto d = reporter.ns.find(decode_name(rope::table_mode::dense, advance));
    const auto c = reporter.ns.find(decode_name(rope::table_mode::compact, advance));
    if (d == reporter.ns.end() || c == reporter.ns.end()) continue;
    std::printf("%28s %10.1f %10.1f %16.3f\n",
                advance ? "advancing (p, p+1, ...)" : "fixed (row hot in cache)", d->second,
                c->second, c->second / d->second);
  }
  if (run_paired) {
    std::printf(
        "\nSame, paired: 401 alternating batches of 256 calls each, medians (ns per call, wall)\n");
    std::printf("%28s %10s %10s %16s\n", "positions", "dense", "compact", "compact / dense");
    for (bool advance : {true, false}) {
      const paired_result r = paired_decode(advance);
      std::printf("%28s %10.1f %10.1f %16.3f\n",
                  advance ? "advancing (p, p+1, ...)" : "fixed (row hot in cache)", r.dense_ns,
                  r.compact_ns, r.ratio);
    }
  }
  return 0;
}
