// tests/fwd_user.hpp: a header that names rope's types through rope/fwd.hpp only, as an engine's
// header would (see fwd_test.cpp).
#pragma once

#include <rope/fwd.hpp>

namespace rope_test {

/// Defined in fwd_user.cpp, which includes rope/fwd.hpp and nothing else of rope.
int fwd_user_rotate(const rope::table<float>& tab, const rope::heads_view<float>& rows,
                    const int* positions, rope::layout expected_layout, rope::status* result);

/// Defined in fwd_test.cpp (the whole library): what fwd_user.cpp calls back.
rope::status fwd_apply(const rope::table<float>& tab, const rope::heads_view<float>& rows,
                       const int* positions);
rope::layout fwd_layout_of(const rope::table<float>& tab);

}  // namespace rope_test
