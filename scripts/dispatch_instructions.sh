#!/usr/bin/env bash
# Instructions per decode call (T = 1, 32 heads, float, in place), compile-time dispatch against
# runtime dispatch, counted by callgrind: repeatable where the timings of the decode table move
# with code placement by more than the dispatch costs. Valgrind does not run AVX-512, so both
# sides are built for x86-64-v3 (AVX2 + FMA + F16C) and run the AVX2 path; baseline_dispatch.cpp
# still defines ROPE_RUNTIME_DISPATCH, so its side reaches the same kernel through the
# dispatcher. Prints one row per head dim and layout.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh cmake make g++ libbenchmark-dev valgrind python3
cmake -S . -B build/callgrind -DCMAKE_BUILD_TYPE=Release -DROPE_BUILD_TESTS=OFF \
  -DROPE_BUILD_EXAMPLES=OFF -DROPE_NATIVE=OFF -DCMAKE_CXX_FLAGS="-march=x86-64-v3" > /dev/null
cmake --build build/callgrind -j"$(nproc)" --target apply_bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%4s %-12s %12s %12s %8s\n' D layout compile-time runtime extra
for D in 64 80 96 128 256; do
  for L in interleaved half_split; do
    valgrind --tool=callgrind --callgrind-out-file="$out/$D$L" build/callgrind/benchmarks/apply_bench \
      --benchmark_filter="BM_Decode<float, $D, $L" --benchmark_min_time=0.01 > /dev/null 2>&1
    python3 scripts/callgrind_percall.py "$out/$D$L" "static_decode<$D>" "baseline_decode<$D>" |
      awk -v d="$D" -v l="$L" '{ v[NR] = $1 }
        END { printf "%4s %-12s %12.1f %12.1f %+7.2f%%\n", d, l, v[1], v[2], 100 * (v[2] - v[1]) / v[1] }'
  done
done
