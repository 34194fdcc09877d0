// tests/build_modes_isa.cpp: rope included with compile-time dispatch, like build_modes_test.cpp,
// but compiled with other -m flags (tests/CMakeLists.txt: -march=x86-64 where the tests are
// built -march=native, AVX2 where they are built for baseline x86-64, SVE on AArch64), so the
// two files differ only in the ISA part of rope's build-mode namespace.
#undef ROPE_RUNTIME_DISPATCH
#include "build_modes_impl.hpp"

rope_test::build_mode rope_test::isa_mode() {
  return this_build_mode();
}
