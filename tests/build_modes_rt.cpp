// tests/build_modes_rt.cpp: rope included with runtime dispatch, linked into one program with
// build_modes_test.cpp, which includes it with compile-time dispatch (see that file).
#if !defined(ROPE_RUNTIME_DISPATCH)
#define ROPE_RUNTIME_DISPATCH 1
#endif
#include "build_modes_impl.hpp"

rope_test::build_mode rope_test::runtime_mode() {
  return this_build_mode();
}
