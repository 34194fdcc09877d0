#!/usr/bin/env bash
# Prints the rope kernel paths this machine can run, from the kernel's CPU flags in
# /proc/cpuinfo rather than from rope's own detection: scalar always; avx2 with avx, fma, f16c
# and avx2; avx512 with those and avx512f, avx512dq, avx512bw, avx512vl; neon on AArch64
# (asimd). scripts/test.sh and .ci/run export it as ROPE_EXPECT_ISA, where a test that would
# skip a listed path fails instead (tests/isa_expectation.hpp).
set -euo pipefail
line=$(grep -m1 -E '^(flags|Features)[[:space:]]*:' /proc/cpuinfo 2>/dev/null || true)
flags=" ${line#*:} "
has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
paths=scalar
if has avx fma f16c avx2; then
  paths+=" avx2"
  if has avx512f avx512dq avx512bw avx512vl; then paths+=" avx512"; fi
fi
if has asimd; then paths+=" neon"; fi
echo "$paths"
