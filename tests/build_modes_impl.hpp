// tests/build_modes_impl.hpp: the body of build_modes_rt.cpp and build_modes_isa.cpp, each of
// which includes it after choosing its dispatch mode. Everything here has internal linkage, so
// the two files' copies (compiled against different rope namespaces) stay apart, as rope's own
// names now do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <rope/rope.hpp>
#include <vector>

#include "build_modes.hpp"

namespace {

#define ROPE_TEST_STR2(x) #x
#define ROPE_TEST_STR(x) ROPE_TEST_STR2(x)

int apply_bf16_64_here(std::uint16_t* bits, int n_heads, int pos, int layout) {
  const auto l = layout == 0 ? rope::layout::interleaved : rope::layout::half_split;
  const auto tab = rope::get_table<float>(rope::make_spec(64, 64, 1e4, l), 4096);
  const auto n = static_cast<std::size_t>(n_heads) * 64;
  std::vector<rope::bfloat16> x(n);
  std::memcpy(x.data(), bits, n * sizeof(std::uint16_t));
  const int positions[1] = {pos};
  const auto st = rope::apply<rope::bfloat16, 64>(
      *tab, rope::packed_heads(x.data(), 1, n_heads, 64), positions);
  std::memcpy(bits, x.data(), n * sizeof(std::uint16_t));
  return static_cast<int>(st);
}

rope_test::build_mode this_build_mode() {
  return {ROPE_TEST_STR(ROPE_ABI_NAMESPACE),
          [] { return reinterpret_cast<std::uintptr_t>(&rope::active_isa); },
          [](int i) { return rope::force_isa(static_cast<rope::isa>(i)); },
          [] { return static_cast<int>(rope::active_isa()); },
          [] { return static_cast<int>(rope::compiled_isa()); },
          &apply_bf16_64_here};
}

}  // namespace
