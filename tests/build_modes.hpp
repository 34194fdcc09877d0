// tests/build_modes.hpp: what build_modes_rt.cpp (runtime dispatch) exports to
// build_modes_test.cpp (compile-time dispatch), in plain types: the two files' rope types are
// different types (rope/config.hpp, ROPE_ABI_NAMESPACE), so none crosses between them.
#pragma once

#include <cstdint>

namespace rope_test {

/// The address of rope::active_isa as the runtime-dispatch file sees it.
std::uintptr_t rt_active_isa_address();
/// rope::force_isa and rope::active_isa in that file, with rope::isa as its integer value.
bool rt_force_isa(int isa);
int rt_active_isa();
/// rope::apply<bf16, 64> in place in that file: n_heads bf16 rows (bits) of 64 at position pos,
/// layout 0 interleaved, 1 half-split.
int rt_apply_bf16_64(std::uint16_t* bits, int n_heads, int pos, int layout);

}  // namespace rope_test
