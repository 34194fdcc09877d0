#!/usr/bin/env bash
# The main job: Release build, the quickstart example, then the per-head-dimension benchmark
# (both layouts, decode and prefill, with the stream baseline) and its summary table.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh cmake make g++ libeigen3-dev libgtest-dev libbenchmark-dev
# The options are set explicitly: build/release may have been configured by `cmake --preset
# release` (the README's accuracy-table command), whose cache turns the benchmarks off.
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DROPE_BUILD_TESTS=OFF \
  -DROPE_BUILD_BENCHMARKS=ON -DROPE_BUILD_EXAMPLES=ON
cmake --build build/release -j"$(nproc)" --target quickstart apply_bench
./build/release/examples/quickstart
# 500 benchmarks on an AVX-512 machine, the 20 decode-dispatch rows included (490 before the
# out-of-place stream baseline, 370 before the forced-ISA 16-bit rows; an earlier count of 432
# included the printed tables): 3 repetitions of 0.2 s each keep the run to about ten minutes;
# medians are reported.
# Random interleaving runs the repetitions in a shuffled order, so a slow spell on this shared
# machine lands on several benchmarks' single repetitions rather than on one benchmark whole.
./build/release/benchmarks/apply_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true \
  --benchmark_min_time=0.2 "$@"
