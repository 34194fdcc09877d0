// tests/fwd_user.cpp: rope's types named through rope/fwd.hpp alone (no definition of any of
// them is visible here). If fwd.hpp declared them in another namespace than the library
// defines them in, the calls between this file and fwd_test.cpp would not link.
#include "fwd_user.hpp"

namespace rope_test {

int fwd_user_rotate(const rope::table<float>& tab, const rope::heads_view<float>& rows,
                    const int* positions, rope::layout expected_layout, rope::status* result) {
  if (fwd_layout_of(tab) != expected_layout) return 1;
  *result = fwd_apply(tab, rows, positions);
  return 0;
}

}  // namespace rope_test
