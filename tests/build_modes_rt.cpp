// tests/build_modes_rt.cpp: rope included with runtime dispatch, linked into one program with
// build_modes_test.cpp, which includes it with compile-time dispatch (see that file).
#if !defined(ROPE_RUNTIME_DISPATCH)
#define ROPE_RUNTIME_DISPATCH 1
#endif
#include "build_modes.hpp"

#include <cstddef>
#include <cstring>
#include <vector>

#include <rope/rope.hpp>

namespace rope_test {

std::uintptr_t rt_active_isa_address() { return reinterpret_cast<std::uintptr_t>(&rope::active_isa); }

bool rt_force_isa(int isa) { return rope::force_isa(static_cast<rope::isa>(isa)); }

int rt_active_isa() { return static_cast<int>(rope::active_isa()); }

int rt_apply_bf16_64(std::uint16_t* bits, int n_heads, int pos, int layout) {
  const auto l = layout == 0 ? rope::layout::interleaved : rope::layout::half_split;
  const auto tab = rope::get_table<float>(rope::make_spec(64, 64, 1e4, l), 4096);
  const auto n = static_cast<std::size_t>(n_heads) * 64;
  std::vector<rope::bfloat16> x(n);
  std::memcpy(x.data(), bits, n * sizeof(std::uint16_t));
  const int positions[1] = {pos};
  const auto st = rope::apply<rope::bfloat16, 64>(*tab, rope::packed_heads(x.data(), 1, n_heads, 64),
                                                  positions);
  std::memcpy(bits, x.data(), n * sizeof(std::uint16_t));
  return static_cast<int>(st);
}

}  // namespace rope_test
