// tests/build_modes_test.cpp: rope included with compile-time dispatch (and this build's -m
// flags) in this file and with runtime dispatch in build_modes_rt.cpp, linked into one program,
// as an engine may link a portable runtime-dispatch module with files built -march=native.
// Each file must keep its own rope: with one shared set of weak symbols the linker kept one
// copy of rope::apply, the kernels and rope::active_isa for both, so a runtime-dispatch caller
// could run the -march=native copy (instructions its CPU may lack) and force_isa in one file
// changed, or did not change, the other's path. rope/config.hpp's ROPE_ABI_NAMESPACE keeps
// them apart; here the two copies must differ in address and in state, and agree in bits.
#undef ROPE_RUNTIME_DISPATCH
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <rope/rope.hpp>

#include "build_modes.hpp"

namespace {

TEST(BuildModes, EachFileKeepsItsOwnRope) {
  EXPECT_NE(reinterpret_cast<std::uintptr_t>(&rope::active_isa), rope_test::rt_active_isa_address())
      << "rope::active_isa is one symbol for a compile-time and a runtime-dispatch file";
}

TEST(BuildModes, ForcingTheRuntimePathLeavesTheCompiledOne) {
  ASSERT_TRUE(rope_test::rt_force_isa(static_cast<int>(rope::isa::scalar)));
  EXPECT_EQ(rope_test::rt_active_isa(), static_cast<int>(rope::isa::scalar));
  EXPECT_EQ(rope::active_isa(), rope::compiled_isa());
  // Compile-time dispatch accepts only its own path; the runtime file keeps scalar.
  if (rope::compiled_isa() != rope::isa::scalar) {
    EXPECT_FALSE(rope::force_isa(rope::isa::scalar));
  }
  EXPECT_EQ(rope_test::rt_active_isa(), static_cast<int>(rope::isa::scalar));
}

// Every path the runtime file can run gives the bits of this file's compiled path.
TEST(BuildModes, BothFilesGiveTheSameBits) {
  const int n_heads = 3, pos = 1234;
  std::vector<std::uint16_t> input(static_cast<std::size_t>(n_heads) * 64);
  std::uint32_t state = 12345u;
  for (auto& b : input) {
    state = state * 1664525u + 1013904223u;
    const float v = static_cast<float>(state >> 8) / 16777216.0f * 4.0f - 2.0f;
    b = rope::float_to_bf16(v);
  }
  for (const auto l : {rope::layout::interleaved, rope::layout::half_split}) {
    const auto tab = rope::get_table<float>(rope::make_spec(64, 64, 1e4, l), 4096);
    std::vector<rope::bfloat16> here(input.size());
    std::memcpy(here.data(), input.data(), input.size() * sizeof(std::uint16_t));
    const int positions[1] = {pos};
    const auto st =
        rope::apply<rope::bfloat16, 64>(*tab, rope::packed_heads(here.data(), 1, n_heads, 64), positions);
    ASSERT_EQ(st, rope::status::ok);
    std::vector<std::uint16_t> want(input.size());
    std::memcpy(want.data(), here.data(), want.size() * sizeof(std::uint16_t));
    // Not the input: the rotation ran.
    ASSERT_NE(want, input);
    int paths = 0;
    for (const auto i : {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512, rope::isa::neon}) {
      if (!rope_test::rt_force_isa(static_cast<int>(i))) continue;
      ++paths;
      std::vector<std::uint16_t> there = input;
      ASSERT_EQ(rope_test::rt_apply_bf16_64(there.data(), n_heads, pos,
                                            l == rope::layout::interleaved ? 0 : 1),
                static_cast<int>(rope::status::ok));
      EXPECT_EQ(there, want) << "runtime path " << rope::to_string(i) << ", layout "
                             << (l == rope::layout::interleaved ? "interleaved" : "half_split");
    }
    EXPECT_GE(paths, 1);
  }
}

}  // namespace
