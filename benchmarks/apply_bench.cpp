// rope::apply per head dimension, layout, batch shape, storage type and ISA path, with the
// memory baselines in the same binary, so each ratio to what memory allows is read off one run:
//  - BM_Stream<bytes of float|16-bit rows, D>: in-place stream x = a*x + b over the same bytes
//    as the rows being rotated (the bound for in-place rotation);
//  - BM_Copy<float, D>: memcpy of the rows to another buffer (the bound for out of place);
//  - BM_CopyStream<float, D>: the out-of-place stream y = a*x + b, a load/store loop over the
//    same bytes (what a kernel that loads and stores vectors can reach; see BM_CopyStream);
//  - BM_ConvertStream<fp16|bf16, D>: the in-place stream over 16-bit rows through the AVX-512
//    kernels' conversions (what the conversions alone allow).
// After the Google Benchmark output, prints tables per (D, T): GB/s and ratio to the baseline
// (medians when run with repetitions): float in place per layout (compile-time path), each ISA
// path forced at run time, fp16/bf16 in place (compile-time path, then each ISA path forced),
// float out of place, the 16-bit ones again with rope::rounding::fast, float with
// Dim = rope::dynamic against Dim = D, and the cost of runtime dispatch at decode: rope::apply
// compiled here (-march=native, compile-time dispatch) against rope::apply compiled for baseline
// x86-64 with runtime dispatch (baseline_dispatch.cpp, linked into this binary). The 16-bit rows
// forced to the AVX2 path use vcvtneps2bf16 where this binary's flags have AVX512_BF16 (bf16
// vectors outside the even/odd pairs); a -march=haswell build shows what an AVX2-only CPU runs.
//
//   apply_bench [--benchmark_repetitions=3 --benchmark_report_aggregates_only=true]
//               [--benchmark_out=bench.json --benchmark_out_format=json]
//   python3 scripts/plot_bench.py bench.json docs/bench.png
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <rope/rope.hpp>

#include "baseline_dispatch.hpp"

namespace {

constexpr int kHeads = 32;
constexpr int kDims[] = {64, 80, 96, 128, 256};
constexpr int kTokens[] = {1, 512};
constexpr double kMinTime = 0.2;

// What a benchmark measures (the "group" counter); the baselines are groups too.
enum group : int {
  g_stream = 0,           // in-place stream over the float rows' bytes
  g_stream16 = 1,         // in-place stream over 16-bit rows' bytes
  g_copy = 2,             // memcpy of the float rows
  g_float = 3,            // rope::apply, float, in place, compile-time dispatch
  g_fp16 = 4,             // fp16 in place
  g_bf16 = 5,             // bf16 in place
  g_out = 6,              // float out of place
  g_out_fp16 = 7,         // float in, fp16 out (a KV-cache write)
  g_convert_fp16 = 8,     // in-place stream over fp16 rows through rope's AVX-512 conversions
  g_convert_bf16 = 9,     // the same over bf16 rows
  g_isa = 10,             // + rope::isa value: float in place, runtime dispatch forced to that path
  g_decode_static = 20,   // decode (T = 1): rope::apply, compile-time dispatch (this file)
  g_decode_runtime = 21,  // decode: rope::apply built for baseline x86-64, runtime dispatch
  g_fp16_fast = 30,       // fp16 in place, rope::rounding::fast (no low-part correction)
  g_bf16_fast = 31,       // bf16 in place, rounding::fast
  g_out_fp16_fast = 32,   // float in, fp16 out, rounding::fast
  g_dynamic = 34,         // float in place, Dim = rope::dynamic (rotary dim read from the table)
  g_out_dynamic = 35,     // float out of place, Dim = rope::dynamic
  g_out_bf16 = 36,        // float in, bf16 out (a KV-cache write)
  g_out_bf16_fast = 37,   // float in, bf16 out, rounding::fast
  g_isa_fp16 = 40,        // + rope::isa value: fp16 in place, runtime dispatch forced to that path
  g_isa_bf16 = 45,        // + rope::isa value: bf16 in place, forced
  g_copy_stream = 50,     // out-of-place stream y = a*x + b over the float rows
};

// Positions: decode at 4000, prefill 0..T-1.
std::vector<std::int32_t> positions_for(int tokens) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(tokens));
  for (int t = 0; t < tokens; ++t) p[static_cast<std::size_t>(t)] = tokens == 1 ? 4000 : t;
  return p;
}

// Every buffer (rows, baselines' buffers) starts on a page, as large tensors do. With malloc's
// 16-byte alignment the start varied from run to run and with it the cache lines each vector
// store splits: the decode-size stream baseline moved by 2x between runs of the same binary.
// With 64-byte lines the distance between an out-of-place call's input and output modulo
// 4096 bytes was left to the heap, and it sets how often loads wait on stores they alias
// (rotate_row_apart in the x86 kernels): before those ran backwards, D = 64 interleaved decode
// out of place measured 560 ns at one distance and 80 at another. On pages, the distance is 0
// in every run.
template <class T>
struct page_allocator {
  using value_type = T;
  page_allocator() = default;
  template <class U>
  page_allocator(const page_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{4096}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{4096}); }
  template <class U>
  bool operator==(const page_allocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const page_allocator<U>&) const noexcept { return false; }
};
template <class T>
using buffer = std::vector<T, page_allocator<T>>;

template <class T>
buffer<T> input(std::size_t n) {
  buffer<T> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = rope::storage_traits<T>::store(static_cast<float>(i % 97) * 0.01f - 0.5f);
  return x;
}

void set_counters(benchmark::State& state, int D, int T, int kind, int grp, double bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * static_cast<std::int64_t>(state.iterations()));
  state.counters["D"] = D;
  state.counters["T"] = T;
  state.counters["kind"] = kind;  // 0 baseline, 1 interleaved, 2 half_split
  state.counters["group"] = grp;
}

std::size_t elems(int D, int T) { return static_cast<std::size_t>(T) * kHeads * static_cast<std::size_t>(D); }

const char* layout_name(rope::layout L) { return L == rope::layout::interleaved ? "interleaved" : "half_split"; }

template <int D, rope::layout L>
std::shared_ptr<const rope::table<float>> bench_table() {
  return rope::get_table<float>(rope::make_spec(D, D, 1e4, L), 4096 + 1);
}

// Dim of a rope::apply call: D, or rope::dynamic (read from the table at run time).
template <int D, bool Dynamic>
constexpr std::size_t dim_arg = Dynamic ? rope::dynamic : static_cast<std::size_t>(D);

// In place, compile-time dispatch (what rope::apply does in this -march=native binary).
template <class T, int D, rope::layout L, bool Dynamic = false>
void BM_Apply(benchmark::State& state, int tokens, int grp,
              rope::rounding rnd = rope::rounding::accurate) {
  auto tab = bench_table<D, L>();
  buffer<T> x = input<T>(elems(D, tokens));
  const std::vector<std::int32_t> pos = positions_for(tokens);
  const auto view = rope::packed_heads(x.data(), tokens, kHeads, D);
  for (auto _ : state) {
    const rope::status st = rope::apply<T, dim_arg<D, Dynamic>>(*tab, view, pos.data(), rope::direction::forward, rnd);
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, D, tokens, static_cast<int>(L), grp, 2.0 * static_cast<double>(x.size() * sizeof(T)));
}

// The same validation as rope::apply, then the runtime dispatcher (forced to one path).
template <class T, int D, class TOut>
rope::status apply_dispatched(const rope::table<float>& tab, const rope::heads_view<const T>& in,
                              const rope::heads_view<TOut>& out, const std::int32_t* pos) noexcept {
  if (rope::status st = rope::detail::check_table<D>(tab); st != rope::status::ok) return st;
  if (rope::status st = rope::detail::check_pair(in, out, tab.rotary_dim()); st != rope::status::ok) return st;
  if (rope::detail::empty(in)) return rope::status::ok;
  if (rope::status st = rope::detail::check_positions(pos, in.n_tokens, tab.length()); st != rope::status::ok)
    return st;
  rope::detail::run_dispatched<D>(tab, rope::detail::make_job(in, out, pos), rope::direction::forward,
                                  rope::rounding::accurate);
  return rope::status::ok;
}

// In place (float, fp16 or bf16; rounding::accurate) through the runtime dispatcher forced to
// one path.
template <class T, int D, rope::layout L>
void BM_ApplyIsa(benchmark::State& state, int tokens, rope::isa path, int grp) {
  if (!rope::detail::force_dispatched_isa(path)) {
    state.SkipWithError("this CPU lacks the path");
    return;
  }
  auto tab = bench_table<D, L>();
  buffer<T> x = input<T>(elems(D, tokens));
  const std::vector<std::int32_t> pos = positions_for(tokens);
  const auto view = rope::packed_heads(x.data(), tokens, kHeads, D);
  const rope::heads_view<const T> in = view;
  for (auto _ : state) {
    const rope::status st = apply_dispatched<T, D>(*tab, in, view, pos.data());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  rope::detail::force_dispatched_isa(rope::detail::best_isa());
  set_counters(state, D, tokens, static_cast<int>(L), grp + static_cast<int>(path),
               2.0 * static_cast<double>(x.size() * sizeof(T)));
}

// Out of place: float in, TOut out (float, or fp16 straight into a cache).
template <class TOut, int D, rope::layout L, bool Dynamic = false>
void BM_ApplyOut(benchmark::State& state, int tokens, int grp,
                 rope::rounding rnd = rope::rounding::accurate) {
  auto tab = bench_table<D, L>();
  const buffer<float> x = input<float>(elems(D, tokens));
  buffer<TOut> y(x.size());
  const std::vector<std::int32_t> pos = positions_for(tokens);
  const auto in = rope::packed_heads<const float>(x.data(), tokens, kHeads, D);
  const auto out = rope::packed_heads(y.data(), tokens, kHeads, D);
  for (auto _ : state) {
    const rope::status st =
        rope::apply<float, dim_arg<D, Dynamic>>(*tab, in, out, pos.data(), rope::direction::forward, rnd);
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  set_counters(state, D, tokens, static_cast<int>(L), grp,
               static_cast<double>(x.size() * (sizeof(float) + sizeof(TOut))));
}

// bench::baseline_decode as this binary compiles it (-march=native, compile-time dispatch):
// the same out-of-line call building the same view, so the two differ only in the dispatch.
// (The view was once built outside the timing loop here and inside the call there, and the
// runtime path read as 1-8% faster: by-value views then cost a copy per call.)
template <int D>
__attribute__((noinline)) int static_decode(const void* table, float* x, std::ptrdiff_t heads,
                                            const std::int32_t* pos) noexcept {
  const auto& tab = *static_cast<const rope::table<float>*>(table);
  return static_cast<int>(rope::apply<float, D>(tab, rope::packed_heads(x, 1, heads, D), pos));
}

// Decode (T = 1): rope::apply as compiled here (compile-time dispatch, inlined) or as a
// baseline x86-64 build compiles it (runtime dispatch), each in one call across a function
// boundary.
template <int D, rope::layout L, bool Runtime>
void BM_Decode(benchmark::State& state) {
  const bool half = L == rope::layout::half_split;
  const std::shared_ptr<const void> tab = Runtime ? bench::baseline_table(D, half) : bench_table<D, L>();
  buffer<float> x = input<float>(elems(D, 1));
  const std::vector<std::int32_t> pos = positions_for(1);
  for (auto _ : state) {
    if constexpr (Runtime) {
      const int st = bench::baseline_decode<D>(tab.get(), x.data(), kHeads, pos.data());
      benchmark::DoNotOptimize(st);
    } else {
      const int st = static_decode<D>(tab.get(), x.data(), kHeads, pos.data());
      benchmark::DoNotOptimize(st);
    }
    benchmark::ClobberMemory();
  }
  set_counters(state, D, 1, static_cast<int>(L), Runtime ? g_decode_runtime : g_decode_static,
               2.0 * static_cast<double>(x.size() * sizeof(float)));
}

void BM_Stream(benchmark::State& state, int D, int T, std::size_t bytes, int grp) {
  buffer<float> x = input<float>(bytes / sizeof(float));
  const float a = 0.999f, b = 0.0005f;
  for (auto _ : state) {
    float* p = x.data();
    const std::size_t n = x.size();
    for (std::size_t i = 0; i < n; ++i) p[i] = a * p[i] + b;
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
  }
  set_counters(state, D, T, 0, grp, 2.0 * static_cast<double>(bytes));
}

#if ROPE_X86 && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__FMA__) && defined(__F16C__)
#define ROPE_BENCH_CONVERT_STREAM 1
// What the 16-bit conversions alone cost: the in-place stream x = a*x + b over 16-bit rows,
// each vector widened by the AVX-512 kernels' load, one fma in float, rounded back by their
// store. rope on fp16/bf16 does this plus the rotation, so this is the most a kernel built on
// these conversions can reach. bf16 goes 32 values at a time through the even/odd pairs the
// kernels use for bf16 in and out (bf16_pairs).
template <class T16>
void BM_ConvertStream(benchmark::State& state, int D, int T, int grp) {
  using io = rope::arch::avx512::detail::io<float, rope::format_of_v<T16>>;
  using pairs = rope::arch::avx512::detail::bf16_pairs<float>;
  buffer<T16> x = input<T16>(elems(D, T));  // a multiple of 32 elements (kHeads = 32)
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.0005f);
  for (auto _ : state) {
    T16* p = x.data();
    const std::size_t n = x.size();
    if constexpr (rope::format_of_v<T16> == rope::storage_format::bf16) {
      for (std::size_t i = 0; i < n; i += 32) {
        __m512 e, o;
        pairs::load(p + i, e, o);
        pairs::store(p + i, _mm512_fmadd_ps(e, a, b), _mm512_fmadd_ps(o, a, b));
      }
    } else {
      for (std::size_t i = 0; i < n; i += 16)
        io::store(p + i, _mm512_fmadd_ps(io::load(p + i), a, b));
    }
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
  }
  set_counters(state, D, T, 0, grp, 2.0 * static_cast<double>(x.size() * sizeof(T16)));
}
#endif

void BM_Copy(benchmark::State& state, int D, int T) {
  const buffer<float> x = input<float>(elems(D, T));
  buffer<float> y(x.size());
  for (auto _ : state) {
    std::memcpy(y.data(), x.data(), x.size() * sizeof(float));
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, D, T, 0, g_copy, 2.0 * static_cast<double>(x.size() * sizeof(float)));
}

// The out-of-place stream y = a*x + b: what a loop of vector loads and stores reaches on the bytes
// an out-of-place call moves. memcpy (BM_Copy) is not such a loop: glibc copies these sizes with
// `rep movsb`, which on this machine (AMD Zen 5) keeps 250-270 GB/s when input and output
// together exceed the 48 KB L1 data cache (D = 256 at T = 1: 32 KB each way), where loops of
// 256- or 512-bit loads and stores fall to 150-170 GB/s (probed outside this file; software
// prefetching of either buffer did not change that). The fma keeps the compiler from turning the
// loop into a memcpy call.
void BM_CopyStream(benchmark::State& state, int D, int T) {
  const buffer<float> x = input<float>(elems(D, T));
  buffer<float> y(x.size());
  const float a = 0.999f, b = 0.0005f;
  for (auto _ : state) {
    const float* __restrict in = x.data();
    float* __restrict out = y.data();
    const std::size_t n = x.size();
    for (std::size_t i = 0; i < n; ++i) out[i] = a * in[i] + b;
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  set_counters(state, D, T, 0, g_copy_stream, 2.0 * static_cast<double>(x.size() * sizeof(float)));
}

template <class F>
benchmark::internal::Benchmark* add(const std::string& name, F f) {
  return benchmark::RegisterBenchmark(name.c_str(), f)->MinTime(kMinTime);
}

// The decode-dispatch pair differs by a few ns in ~100: medians of a few 0.2 s repetitions on a
// shared machine move more than that. Each is instead run as 40 repetitions of 10 ms (random
// interleaving, when asked for, mixes them with the rest) and compared by its fastest
// repetition: time another tenant adds only ever lengthens a repetition.
double fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
void as_decode_pair(benchmark::internal::Benchmark* b) {
  b->MinTime(0.01)->Repetitions(40)->ComputeStatistics("min", fastest)->ReportAggregatesOnly(true);
}

template <int D, rope::layout L>
void register_layout(int T) {
  const std::string d = std::to_string(D), l = layout_name(L), suffix = "/tokens:" + std::to_string(T);
  add("BM_Apply<float, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_Apply<float, D, L>(s, T, g_float); });
  for (rope::isa path : {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512, rope::isa::neon}) {
    if (!rope::detail::cpu_supports(path)) continue;
    const std::string p = std::string(", ") + rope::to_string(path) + ">" + suffix;
    add("BM_ApplyIsa<float, " + d + ", " + l + p,
        [T, path](benchmark::State& s) { BM_ApplyIsa<float, D, L>(s, T, path, g_isa); });
    add("BM_ApplyIsa<fp16, " + d + ", " + l + p, [T, path](benchmark::State& s) {
      BM_ApplyIsa<rope::float16, D, L>(s, T, path, g_isa_fp16);
    });
    add("BM_ApplyIsa<bf16, " + d + ", " + l + p, [T, path](benchmark::State& s) {
      BM_ApplyIsa<rope::bfloat16, D, L>(s, T, path, g_isa_bf16);
    });
  }
  add("BM_Apply<fp16, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_Apply<rope::float16, D, L>(s, T, g_fp16); });
  add("BM_Apply<bf16, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_Apply<rope::bfloat16, D, L>(s, T, g_bf16); });
  add("BM_ApplyOut<float->float, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_ApplyOut<float, D, L>(s, T, g_out); });
  add("BM_ApplyOut<float->fp16, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_ApplyOut<rope::float16, D, L>(s, T, g_out_fp16); });
  add("BM_ApplyOut<float->bf16, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_ApplyOut<rope::bfloat16, D, L>(s, T, g_out_bf16); });
  constexpr rope::rounding fast = rope::rounding::fast;
  add("BM_Apply<fp16 fast, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_Apply<rope::float16, D, L>(s, T, g_fp16_fast, fast); });
  add("BM_Apply<bf16 fast, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_Apply<rope::bfloat16, D, L>(s, T, g_bf16_fast, fast); });
  add("BM_ApplyOut<float->fp16 fast, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_ApplyOut<rope::float16, D, L>(s, T, g_out_fp16_fast, fast); });
  add("BM_ApplyOut<float->bf16 fast, " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_ApplyOut<rope::bfloat16, D, L>(s, T, g_out_bf16_fast, fast); });
  add("BM_Apply<float, dynamic " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_Apply<float, D, L, true>(s, T, g_dynamic); });
  add("BM_ApplyOut<float->float, dynamic " + d + ", " + l + ">" + suffix,
      [T](benchmark::State& s) { BM_ApplyOut<float, D, L, true>(s, T, g_out_dynamic); });
  if (T == 1) {
    as_decode_pair(add("BM_Decode<float, " + d + ", " + l + ", compile_time>" + suffix,
                       [](benchmark::State& s) { BM_Decode<D, L, false>(s); }));
    as_decode_pair(add("BM_Decode<float, " + d + ", " + l + ", runtime>" + suffix,
                       [](benchmark::State& s) { BM_Decode<D, L, true>(s); }));
  }
}

template <int D>
void register_dim() {
  for (int T : kTokens) {
    const std::string d = std::to_string(D), suffix = "/tokens:" + std::to_string(T);
    const std::size_t bytes32 = elems(D, T) * sizeof(float);
    add("BM_Stream<float rows, " + d + ">" + suffix,
        [T, bytes32](benchmark::State& s) { BM_Stream(s, D, T, bytes32, g_stream); });
    add("BM_Stream<16-bit rows, " + d + ">" + suffix,
        [T, bytes32](benchmark::State& s) { BM_Stream(s, D, T, bytes32 / 2, g_stream16); });
    add("BM_Copy<float, " + d + ">" + suffix, [T](benchmark::State& s) { BM_Copy(s, D, T); });
    add("BM_CopyStream<float, " + d + ">" + suffix,
        [T](benchmark::State& s) { BM_CopyStream(s, D, T); });
#ifdef ROPE_BENCH_CONVERT_STREAM
    add("BM_ConvertStream<fp16, " + d + ">" + suffix,
        [T](benchmark::State& s) { BM_ConvertStream<rope::float16>(s, D, T, g_convert_fp16); });
    add("BM_ConvertStream<bf16, " + d + ">" + suffix,
        [T](benchmark::State& s) { BM_ConvertStream<rope::bfloat16>(s, D, T, g_convert_bf16); });
#endif
    register_layout<D, rope::layout::interleaved>(T);
    register_layout<D, rope::layout::half_split>(T);
  }
}

// Keeps GB/s and ns per iteration per (group, D, T, kind): the median aggregate when there are
// repetitions (the fastest one for the decode-dispatch pair), else the first run.
class table_reporter : public benchmark::ConsoleReporter {
 public:
  using key = std::tuple<int, int, int, int>;
  std::map<key, double> gbps, ns;

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const bool aggregate = r.run_type == Run::RT_Aggregate;
      if (!r.counters.count("D")) continue;
      auto get = [&](const char* k) { return static_cast<int>(r.counters.at(k).value); };
      const key k{get("group"), get("D"), get("T"), get("kind")};
      const bool decode_pair = get("group") == g_decode_static || get("group") == g_decode_runtime;
      if (aggregate && r.aggregate_name != (decode_pair ? "min" : "median")) continue;
      if (!aggregate && gbps.count(k)) continue;
      gbps[k] = r.counters.at("bytes_per_second").value / 1e9;
      ns[k] = r.GetAdjustedCPUTime();  // ns (the default unit), CPU time like the GB/s
    }
  }
  bool has(int g, int D, int T, int kind) const { return gbps.count({g, D, T, kind}) != 0; }
  double at(int g, int D, int T, int kind) const { return gbps.at({g, D, T, kind}); }
};

void print_ratio_table(const table_reporter& rep, const char* title, int grp, int base_grp,
                       const char* base_name) {
  std::printf("\n%s\n", title);
  std::printf("%5s %6s %14s %18s %8s %18s %8s\n", "D", "tokens", base_name, "interleaved GB/s",
              "ratio", "half_split GB/s", "ratio");
  for (int D : kDims)
    for (int T : kTokens) {
      if (!rep.has(base_grp, D, T, 0) || !rep.has(grp, D, T, 1) || !rep.has(grp, D, T, 2)) continue;
      const double b = rep.at(base_grp, D, T, 0), i = rep.at(grp, D, T, 1), h = rep.at(grp, D, T, 2);
      std::printf("%5d %6d %14.1f %18.1f %8.2f %18.1f %8.2f\n", D, T, b, i, i / b, h, h / b);
    }
}

}  // namespace

int main(int argc, char** argv) {
  register_dim<64>();
  register_dim<80>();
  register_dim<96>();
  register_dim<128>();
  register_dim<256>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  table_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();

  std::printf("\nrope %s path (compile time), %d heads, cached table. Ratios: GB/s over GB/s of the "
              "baseline on the same bytes in this binary.\n",
              rope::to_string(rope::compiled_isa()), kHeads);
  print_ratio_table(rep, "rope::apply, float, in place (baseline: in-place stream x = a*x + b)", g_float,
                    g_stream, "stream GB/s");
  for (rope::isa path : {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512, rope::isa::neon}) {
    if (!rope::detail::cpu_supports(path)) continue;
    const std::string t = std::string("float, in place, runtime dispatch forced to ") + rope::to_string(path) +
                          " (baseline: stream)";
    print_ratio_table(rep, t.c_str(), g_isa + static_cast<int>(path), g_stream, "stream GB/s");
  }
  print_ratio_table(rep, "fp16 storage, in place (baseline: stream over the same bytes)", g_fp16, g_stream16,
                    "stream GB/s");
  print_ratio_table(rep, "bf16 storage, in place (baseline: stream over the same bytes)", g_bf16, g_stream16,
                    "stream GB/s");
  for (rope::isa path : {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512, rope::isa::neon}) {
    if (!rope::detail::cpu_supports(path)) continue;
    for (auto [name, grp] :
         {std::pair<const char*, int>{"fp16", g_isa_fp16}, {"bf16", g_isa_bf16}}) {
      const std::string t = std::string(name) + " storage, in place, runtime dispatch forced to " +
                            rope::to_string(path) + " (baseline: stream over the same bytes)";
      print_ratio_table(rep, t.c_str(), grp + static_cast<int>(path), g_stream16, "stream GB/s");
    }
  }
  print_ratio_table(rep, "float, out of place (baseline: memcpy of the rows)", g_out, g_copy, "copy GB/s");
  std::printf(
      "\nout-of-place stream y = a*x + b (a loop of vector loads and stores over the same bytes) "
      "against memcpy\n");
  std::printf("%5s %6s %14s %16s %8s\n", "D", "tokens", "copy GB/s", "loop GB/s", "ratio");
  for (int D : kDims)
    for (int T : kTokens) {
      if (!rep.has(g_copy, D, T, 0) || !rep.has(g_copy_stream, D, T, 0)) continue;
      const double b = rep.at(g_copy, D, T, 0), l = rep.at(g_copy_stream, D, T, 0);
      std::printf("%5d %6d %14.1f %16.1f %8.2f\n", D, T, b, l, l / b);
    }
  print_ratio_table(rep, "float, out of place (baseline: the out-of-place stream y = a*x + b)",
                    g_out, g_copy_stream, "loop GB/s");
  print_ratio_table(rep, "float in, fp16 out (GB/s over bytes read + written; baseline: float memcpy)",
                    g_out_fp16, g_copy, "copy GB/s");
  print_ratio_table(rep,
                    "float in, bf16 out (GB/s over bytes read + written; baseline: float memcpy)",
                    g_out_bf16, g_copy, "copy GB/s");
  print_ratio_table(rep, "fp16 storage, in place, rounding::fast (float result rounded once; baseline: stream)",
                    g_fp16_fast, g_stream16, "stream GB/s");
  print_ratio_table(rep, "bf16 storage, in place, rounding::fast (baseline: stream)", g_bf16_fast, g_stream16,
                    "stream GB/s");
  print_ratio_table(rep, "float in, fp16 out, rounding::fast (baseline: float memcpy)", g_out_fp16_fast, g_copy,
                    "copy GB/s");
  print_ratio_table(rep, "float in, bf16 out, rounding::fast (baseline: float memcpy)",
                    g_out_bf16_fast, g_copy, "copy GB/s");

  std::printf("\n16-bit streams through the AVX-512 conversions (load, one fma, store; the same bytes as "
              "the 16-bit rows) against the float stream over those bytes\n");
  std::printf("%5s %6s %14s %17s %8s %17s %8s\n", "D", "tokens", "stream GB/s", "fp16 conv GB/s", "ratio",
              "bf16 conv GB/s", "ratio");
  for (int D : kDims)
    for (int T : kTokens) {
      if (!rep.has(g_stream16, D, T, 0) || !rep.has(g_convert_fp16, D, T, 0) || !rep.has(g_convert_bf16, D, T, 0))
        continue;
      const double b = rep.at(g_stream16, D, T, 0), h = rep.at(g_convert_fp16, D, T, 0),
                   f = rep.at(g_convert_bf16, D, T, 0);
      std::printf("%5d %6d %14.1f %17.1f %8.2f %17.1f %8.2f\n", D, T, b, h, h / b, f, f / b);
    }
  print_ratio_table(rep, "fp16 storage, in place (baseline: the fp16 conversion stream)", g_fp16, g_convert_fp16,
                    "conv GB/s");
  print_ratio_table(rep, "bf16 storage, in place (baseline: the bf16 conversion stream)", g_bf16, g_convert_bf16,
                    "conv GB/s");
  print_ratio_table(rep, "fp16 storage, in place, rounding::fast (baseline: the fp16 conversion stream)",
                    g_fp16_fast, g_convert_fp16, "conv GB/s");
  print_ratio_table(rep, "bf16 storage, in place, rounding::fast (baseline: the bf16 conversion stream)",
                    g_bf16_fast, g_convert_bf16, "conv GB/s");

  std::printf("\nDim = rope::dynamic (the rotary dim read from the table; compiled kernels for "
              "ROPE_DYNAMIC_DIMS), float: time over the time with Dim = D\n");
  std::printf("%5s %6s %18s %18s %18s %18s\n", "D", "tokens", "in place inter", "in place half",
              "out of place inter", "out of place half");
  for (int D : kDims)
    for (int T : kTokens) {
      double r[4];
      bool all = true;
      int c = 0;
      for (auto [dyn, fixed] : {std::pair<int, int>{g_dynamic, g_float}, {g_out_dynamic, g_out}})
        for (int kind : {1, 2}) {
          all = all && rep.has(dyn, D, T, kind) && rep.has(fixed, D, T, kind);
          r[c++] = all ? rep.at(fixed, D, T, kind) / rep.at(dyn, D, T, kind) : 0.0;
        }
      if (all) std::printf("%5d %6d %18.2f %18.2f %18.2f %18.2f\n", D, T, r[0], r[1], r[2], r[3]);
    }

  std::printf("\ndecode (T = 1, %d heads): ns per call, compile-time dispatch (%s, this binary's flags) vs "
              "runtime dispatch built for baseline x86-64 (chose %s), fastest of 40 repetitions each\n",
              kHeads, rope::to_string(rope::compiled_isa()), bench::baseline_isa_name());
  std::printf("%5s %12s %14s %12s %9s\n", "D", "layout", "compile ns", "runtime ns", "cost");
  for (int D : kDims)
    for (int kind : {1, 2}) {
      const table_reporter::key s{g_decode_static, D, 1, kind}, r{g_decode_runtime, D, 1, kind};
      if (!rep.ns.count(s) || !rep.ns.count(r)) continue;
      std::printf("%5d %12s %14.1f %12.1f %+8.1f%%\n", D, kind == 1 ? "interleaved" : "half_split",
                  rep.ns.at(s), rep.ns.at(r), 100.0 * (rep.ns.at(r) / rep.ns.at(s) - 1.0));
    }
  return 0;
}
