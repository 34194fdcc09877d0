// The vector paths this machine must run, from outside rope: ROPE_EXPECT_ISA names them
// (separated by spaces or commas; scripts/expected_isa.sh derives the list from /proc/cpuinfo,
// and scripts/test.sh and .ci/run export it). A per-ISA test that would skip a path named there
// fails instead, so a regression in rope's own CPU detection (rope::detail::cpu_supports) cannot
// turn every AVX2 / AVX-512 equivalence test into a skip that ctest counts as passed.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <rope/isa.hpp>
#include <string>

namespace rope_test {

/// Whether ROPE_EXPECT_ISA names path i. Only this binary's architecture counts: an AArch64
/// build run under qemu on an x86 host is not expected to run the host's avx2.
inline bool isa_expected(rope::isa i) {
  const char* env = std::getenv("ROPE_EXPECT_ISA");
  if (env == nullptr) return false;
#if ROPE_X86
  if (i == rope::isa::neon) return false;
#else
  if (i == rope::isa::avx2 || i == rope::isa::avx512) return false;
#endif
  const std::string list(env), name = rope::to_string(i);
  std::size_t at = 0;
  while (at < list.size()) {
    const std::size_t end = list.find_first_of(" ,", at);
    const std::size_t stop = end == std::string::npos ? list.size() : end;
    if (list.compare(at, stop - at, name) == 0 && stop - at == name.size()) return true;
    at = stop + 1;
  }
  return false;
}

}  // namespace rope_test

// Skips the test, naming the path, where this CPU or build cannot run it; fails instead where
// ROPE_EXPECT_ISA says this machine has the path.
#define ROPE_SKIP_UNLESS(isa_value)                                                           \
  do {                                                                                        \
    if (!rope::detail::cpu_supports(isa_value)) {                                             \
      if (rope_test::isa_expected(isa_value))                                                 \
        FAIL() << "rope says this CPU cannot run " << rope::to_string(isa_value)              \
               << ", but ROPE_EXPECT_ISA (from /proc/cpuinfo) names it";                      \
      GTEST_SKIP() << "this CPU (or build target) cannot run " << rope::to_string(isa_value); \
    }                                                                                         \
  } while (false)
