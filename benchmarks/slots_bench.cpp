// rope/slots.hpp: keys rotated into KV-cache slots, against the calls an engine would make
// without it, side by side in one run. Keys: [tokens, 8 heads, 128] float, half_split; the
// cache: 32 sequences x 1024 slots of [8, 128], float or fp16 (the type in the name).
//  - BM_Contiguous<T>: rope::apply out of place into a packed [tokens, 8, 128] buffer (no
//    cache: the floor, the same bytes moved);
//  - BM_PerSequence<T>: one rope::apply call per token into its sequence's next slot (decode
//    without slots: one call per sequence);
//  - BM_Slots<T>: one apply_to_slots call. Decode: 32 sequences, one token each, scattered
//    slots; prefill (512 tokens): consecutive slots of one sequence (one job).
//
//   slots_bench [--benchmark_repetitions=10 --benchmark_report_aggregates_only=true]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <rope/rope.hpp>
#include <vector>

namespace {

constexpr int kDim = 128, kHeads = 8, kSeqs = 32, kSlotsPerSeq = 1024;

template <class T>
struct setup {
  std::vector<float> k;
  std::vector<T> cache;
  std::vector<std::int64_t> pos, slots;
  std::shared_ptr<const rope::table<float>> tab;
  explicit setup(std::int64_t n)
      : k(static_cast<std::size_t>(n * kHeads * kDim), 0.5f),
        cache(static_cast<std::size_t>(kSeqs) * kSlotsPerSeq * kHeads * kDim),
        pos(static_cast<std::size_t>(n)),
        slots(static_cast<std::size_t>(n)),
        tab(rope::get_table<float>(rope::make_spec(kDim, kDim, 5e5, rope::layout::half_split),
                                   8192)) {
    for (std::int64_t t = 0; t < n; ++t) {
      const auto i = static_cast<std::size_t>(t);
      if (n == 1 || n == kSeqs) {  // decode: token t is sequence t's next token
        pos[i] = 300 + 23 * t;
        slots[i] = t * kSlotsPerSeq + pos[i] % kSlotsPerSeq;
      } else {  // prefill of sequence 3
        pos[i] = t;
        slots[i] = 3 * kSlotsPerSeq + t;
      }
    }
  }
  rope::heads_view<const float> keys(std::int64_t n) const {
    return rope::packed_heads(static_cast<const float*>(k.data()), n, kHeads, kDim);
  }
  rope::heads_view<T> cache_view() {
    return rope::packed_heads(cache.data(), std::int64_t{kSeqs} * kSlotsPerSeq, kHeads, kDim);
  }
};

template <class T>
void bytes(benchmark::State& state, std::int64_t n) {
  state.SetBytesProcessed(state.iterations() * n * kHeads * kDim *
                          static_cast<std::int64_t>(sizeof(float) + sizeof(T)));
}

template <class T>
void BM_Contiguous(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  setup<T> s(n);
  std::vector<T> out(s.k.size());
  const auto ov = rope::packed_heads(out.data(), n, kHeads, kDim);
  for (auto _ : state) {
    rope::status st = rope::apply<float, kDim>(*s.tab, s.keys(n), ov, s.pos.data());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  bytes<T>(state, n);
}

template <class T>
void BM_PerSequence(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  setup<T> s(n);
  for (auto _ : state) {
    for (std::int64_t t = 0; t < n; ++t) {
      const auto i = static_cast<std::size_t>(t);
      rope::status st = rope::apply<float, kDim>(
          *s.tab, rope::packed_heads(s.k.data() + t * kHeads * kDim, 1, kHeads, kDim),
          rope::packed_heads(s.cache.data() + s.slots[i] * kHeads * kDim, 1, kHeads, kDim),
          &s.pos[i]);
      benchmark::DoNotOptimize(st);
    }
    benchmark::ClobberMemory();
  }
  bytes<T>(state, n);
}

template <class T>
void BM_Slots(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  setup<T> s(n);
  const auto cv = s.cache_view();
  for (auto _ : state) {
    rope::status st =
        rope::apply_to_slots<float, kDim>(*s.tab, s.keys(n), cv, s.pos.data(), s.slots.data());
    benchmark::DoNotOptimize(st);
    benchmark::ClobberMemory();
  }
  bytes<T>(state, n);
}

BENCHMARK_TEMPLATE(BM_Contiguous, float)->ArgName("tokens")->Arg(kSeqs)->Arg(512);
BENCHMARK_TEMPLATE(BM_PerSequence, float)->ArgName("tokens")->Arg(kSeqs);
BENCHMARK_TEMPLATE(BM_Slots, float)->ArgName("tokens")->Arg(kSeqs)->Arg(512);
BENCHMARK_TEMPLATE(BM_Contiguous, rope::float16)->ArgName("tokens")->Arg(kSeqs)->Arg(512);
BENCHMARK_TEMPLATE(BM_PerSequence, rope::float16)->ArgName("tokens")->Arg(kSeqs);
BENCHMARK_TEMPLATE(BM_Slots, rope::float16)->ArgName("tokens")->Arg(kSeqs)->Arg(512);

}  // namespace

BENCHMARK_MAIN();
