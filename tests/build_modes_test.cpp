// tests/build_modes_test.cpp: rope included in three ways in one program, as an engine may link
// a portable runtime-dispatch module with files built -march=native: here with compile-time
// dispatch (and this build's -m flags), in build_modes_rt.cpp with runtime dispatch, and in
// build_modes_isa.cpp with compile-time dispatch and other -m flags (tests/CMakeLists.txt).
// Each file must keep its own rope: with one shared set of weak symbols the linker kept one
// copy of rope::apply, the kernels and rope::active_isa for all, so a runtime-dispatch caller
// could run the -march=native copy (instructions its CPU may lack) and force_isa in one file
// changed, or did not change, the other's path. rope/config.hpp's ROPE_ABI_NAMESPACE keeps
// them apart; here the copies must differ in name, address and state, and agree in bits.
#undef ROPE_RUNTIME_DISPATCH
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "build_modes_impl.hpp"
#include "isa_expectation.hpp"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace {

std::string after_mode(const char* name) {
  return std::string(name).substr(3);
}

// Whether this CPU can run build_modes_isa.cpp's code (even the function that returns its
// pointers is compiled with its -m flags), decided here, with this file's flags, before
// anything of that file is called.
bool other_file_can_run() {
#if defined(ROPE_TEST_OTHER_NEEDS) && ROPE_TEST_OTHER_NEEDS == 1
  return rope::detail::cpu_supports(rope::isa::avx2);
#elif defined(ROPE_TEST_OTHER_NEEDS) && ROPE_TEST_OTHER_NEEDS == 2 && defined(__aarch64__) && \
    defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_SVE) != 0;
#elif defined(ROPE_TEST_OTHER_NEEDS) && ROPE_TEST_OTHER_NEEDS == 2
  return false;
#else
  return true;
#endif
}

// Whether ROPE_EXPECT_ISA says this machine runs build_modes_isa.cpp's flags (AVX2's), so
// that a skip there is a failure.
bool other_file_expected() {
#if defined(ROPE_TEST_OTHER_NEEDS) && ROPE_TEST_OTHER_NEEDS == 1
  return rope_test::isa_expected(rope::isa::avx2);
#else
  return false;
#endif
}

#define ROPE_TEST_SKIP_UNLESS_OTHER_RUNS()                                                   \
  do {                                                                                       \
    if (!other_file_can_run()) {                                                             \
      if (other_file_expected())                                                             \
        FAIL() << "rope says this CPU cannot run avx2, but ROPE_EXPECT_ISA names it";        \
      GTEST_SKIP() << "this CPU cannot run build_modes_isa.cpp (built " ROPE_TEST_OTHER_TEXT \
                      "); nothing of it was called";                                         \
    }                                                                                        \
  } while (false)
#if defined(ROPE_TEST_OTHER_FLAGS)
#define ROPE_TEST_OTHER_TEXT ROPE_TEST_OTHER_FLAGS
#else
#define ROPE_TEST_OTHER_TEXT "with this file's flags"
#endif

TEST(BuildModes, EachFileKeepsItsOwnRope) {
  ROPE_TEST_SKIP_UNLESS_OTHER_RUNS();
  const auto here = this_build_mode(), rt = rope_test::runtime_mode(),
             other = rope_test::isa_mode();
  // The dispatch mode is the name's first part; the same flags give the same rest.
  EXPECT_EQ(std::string(here.namespace_name).substr(0, 3), "ct_") << here.namespace_name;
  EXPECT_EQ(std::string(rt.namespace_name).substr(0, 3), "rt_") << rt.namespace_name;
  EXPECT_EQ(std::string(other.namespace_name).substr(0, 3), "ct_") << other.namespace_name;
  EXPECT_EQ(after_mode(here.namespace_name), after_mode(rt.namespace_name));
  EXPECT_NE(here.active_isa_address(), rt.active_isa_address())
      << "rope::active_isa is one symbol for a compile-time and a runtime-dispatch file";
#if defined(ROPE_TEST_OTHER_FLAGS)
  // Same dispatch mode, other -m flags: only the ISA part of the name tells them apart.
  EXPECT_NE(after_mode(here.namespace_name), after_mode(other.namespace_name))
      << here.namespace_name
      << " (this file) and build_modes_isa.cpp, built " ROPE_TEST_OTHER_FLAGS;
  EXPECT_NE(here.active_isa_address(), other.active_isa_address())
      << "rope::active_isa is one symbol for files built with different -m flags";
#else
  GTEST_SKIP() << "no other -m flags for this target: build_modes_isa.cpp is built as this file";
#endif
}

TEST(BuildModes, ForcingTheRuntimePathLeavesTheCompiledOnes) {
  ROPE_TEST_SKIP_UNLESS_OTHER_RUNS();
  const auto rt = rope_test::runtime_mode(), other = rope_test::isa_mode();
  ASSERT_TRUE(rt.force_isa(static_cast<int>(rope::isa::scalar)));
  EXPECT_EQ(rt.active_isa(), static_cast<int>(rope::isa::scalar));
  EXPECT_EQ(rope::active_isa(), rope::compiled_isa());
  EXPECT_EQ(other.active_isa(), other.compiled_isa());
  // Compile-time dispatch accepts only its own path; the runtime file keeps scalar.
  if (rope::compiled_isa() != rope::isa::scalar) {
    EXPECT_FALSE(rope::force_isa(rope::isa::scalar));
  }
  EXPECT_EQ(rt.active_isa(), static_cast<int>(rope::isa::scalar));
}

// Every path the runtime file can run, and the other file's compiled path, give the bits of
// this file's compiled path. (Each test is skipped, with a message, where the CPU cannot run
// the other file's code.)
TEST(BuildModes, EveryFileGivesTheSameBits) {
  ROPE_TEST_SKIP_UNLESS_OTHER_RUNS();
  const auto rt = rope_test::runtime_mode(), other = rope_test::isa_mode();
  const int n_heads = 3, pos = 1234;
  std::vector<std::uint16_t> input(static_cast<std::size_t>(n_heads) * 64);
  std::uint32_t state = 12345u;
  for (auto& b : input) {
    state = state * 1664525u + 1013904223u;
    const float v = static_cast<float>(state >> 8) / 16777216.0f * 4.0f - 2.0f;
    b = rope::float_to_bf16(v);
  }
  for (const int l : {0, 1}) {
    const char* layout_name = l == 0 ? "interleaved" : "half_split";
    std::vector<std::uint16_t> want = input;
    ASSERT_EQ(apply_bf16_64_here(want.data(), n_heads, pos, l), static_cast<int>(rope::status::ok));
    // Not the input: the rotation ran.
    ASSERT_NE(want, input);
    int paths = 0;
    for (const auto i : {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512, rope::isa::neon}) {
      if (!rt.force_isa(static_cast<int>(i))) {
        EXPECT_FALSE(rope_test::isa_expected(i))
            << "the runtime-dispatch file refused " << rope::to_string(i)
            << ", which ROPE_EXPECT_ISA names";
        continue;
      }
      ++paths;
      std::vector<std::uint16_t> there = input;
      ASSERT_EQ(rt.apply_bf16_64(there.data(), n_heads, pos, l),
                static_cast<int>(rope::status::ok));
      EXPECT_EQ(there, want) << "runtime path " << rope::to_string(i) << ", " << layout_name;
    }
    EXPECT_GE(paths, 1);
    std::vector<std::uint16_t> there = input;
    ASSERT_EQ(other.apply_bf16_64(there.data(), n_heads, pos, l),
              static_cast<int>(rope::status::ok));
    EXPECT_EQ(there, want) << "build_modes_isa.cpp (" << other.namespace_name << "), "
                           << layout_name;
  }
}

}  // namespace
