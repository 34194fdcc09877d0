#!/usr/bin/env bash
# The whole test suite: GCC, warnings as errors, every test under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh cmake make g++ libeigen3-dev libgtest-dev libbenchmark-dev pkg-config doxygen
cmake -S . -B build/test -DCMAKE_BUILD_TYPE=Release -DROPE_WERROR=ON -DCMAKE_CXX_COMPILER=g++
cmake --build build/test -j"$(nproc)"
# The paths this CPU has by /proc/cpuinfo: a per-ISA test that would skip one of them fails.
# (A plain assignment, so that a failing expected_isa.sh stops the script under set -e.)
if [[ -z ${ROPE_EXPECT_ISA+x} ]]; then ROPE_EXPECT_ISA=$(scripts/expected_isa.sh); fi
[[ -n $ROPE_EXPECT_ISA ]] || { echo "ROPE_EXPECT_ISA is empty (it lists paths)" >&2; exit 1; }
export ROPE_EXPECT_ISA
echo "ROPE_EXPECT_ISA=$ROPE_EXPECT_ISA"
ctest --test-dir build/test -j"$(nproc)" --output-on-failure
# The golden lines: the shipped cases (../shared/golden or tests/data/golden), then the synthetic.
grep -h '^golden:' build/test/Testing/Temporary/LastTest.log | grep -v golden_synthetic
grep -h '^golden:' build/test/Testing/Temporary/LastTest.log | grep golden_synthetic
