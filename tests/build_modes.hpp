// tests/build_modes.hpp: what the other files of build_modes_test (build_modes_rt.cpp, runtime
// dispatch; build_modes_isa.cpp, compile-time dispatch with other -m flags) export to
// build_modes_test.cpp, in plain types: each file's rope types are different types
// (rope/config.hpp, ROPE_ABI_NAMESPACE), so none crosses between them.
#pragma once

#include <cstdint>

namespace rope_test {

/// One file's rope, as plain functions.
struct build_mode {
  /// ROPE_ABI_NAMESPACE as that file spells it.
  const char* namespace_name;
  /// The address of rope::active_isa as that file sees it.
  std::uintptr_t (*active_isa_address)();
  /// rope::force_isa, rope::active_isa and rope::compiled_isa there, rope::isa as its integer.
  bool (*force_isa)(int isa);
  int (*active_isa)();
  int (*compiled_isa)();
  /// rope::apply<bf16, 64> in place there: n_heads bf16 rows (bits) of 64 at position pos,
  /// layout 0 interleaved, 1 half-split.
  int (*apply_bf16_64)(std::uint16_t* bits, int n_heads, int pos, int layout);
};

build_mode runtime_mode();  // build_modes_rt.cpp
build_mode isa_mode();      // build_modes_isa.cpp

}  // namespace rope_test
