#!/usr/bin/env bash
# The whole test suite: GCC, warnings as errors, every test under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh cmake make g++ libeigen3-dev libgtest-dev libbenchmark-dev pkg-config doxygen
cmake -S . -B build/test -DCMAKE_BUILD_TYPE=Release -DROPE_WERROR=ON -DCMAKE_CXX_COMPILER=g++
cmake --build build/test -j"$(nproc)"
ctest --test-dir build/test -j"$(nproc)" --output-on-failure
grep -h '^golden:' build/test/Testing/Temporary/LastTest.log | tail -n 1
