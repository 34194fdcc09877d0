// tests/fwd_test.cpp: rope/fwd.hpp's declarations name the library's own entities. fwd_user.cpp
// sees only rope/fwd.hpp and passes rope::table<float>, rope::heads_view<float>, rope::layout
// and rope::status between this file and itself; this file checks the rotation it asked for
// against a float64 2x2 rotation. (That each declaration matches its definition, an enum's
// underlying type or a template's parameters, every build checks: every rope header includes
// fwd.hpp. A class/struct mismatch would only be a clang warning, -Wmismatched-tags.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <rope/fwd.hpp>
#include <rope/rope.hpp>
#include <vector>

#include "fwd_user.hpp"

namespace rope_test {

rope::status fwd_apply(const rope::table<float>& tab, const rope::heads_view<float>& rows,
                       const int* positions) {
  return rope::apply<float>(tab, rows, positions);
}

rope::layout fwd_layout_of(const rope::table<float>& tab) {
  return tab.layout();
}

}  // namespace rope_test

namespace {

// One storage_traits specialization written against the declaration with its default argument.
struct engine_bits {
  unsigned short v;
};

}  // namespace

template <>
struct rope::storage_traits<engine_bits> : rope::bf16_storage<engine_bits> {};

namespace {

TEST(Fwd, DeclarationsNameTheLibrarysTypes) {
  const int head_dim = 8, n_heads = 2, pos = 5;
  const double base = 1e4;
  for (const auto l : {rope::layout::interleaved, rope::layout::half_split}) {
    const auto tab = rope::get_table<float>(rope::make_spec(head_dim, head_dim, base, l), 16);
    std::vector<float> x(static_cast<std::size_t>(head_dim * n_heads));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 1.0f;
    const std::vector<float> x0 = x;
    const int positions[1] = {pos};
    rope::status st = rope::status::bad_option;
    ASSERT_EQ(rope_test::fwd_user_rotate(*tab, rope::packed_heads(x.data(), 1, n_heads, head_dim),
                                         positions, l, &st),
              0);
    ASSERT_EQ(st, rope::status::ok);
    // Pair j of each head, as the layout pairs it, turned by pos * base^(-2j/d) in float64.
    for (int h = 0; h < n_heads; ++h) {
      for (int j = 0; j < head_dim / 2; ++j) {
        const int a = l == rope::layout::interleaved ? 2 * j : j;
        const int b = l == rope::layout::interleaved ? 2 * j + 1 : j + head_dim / 2;
        const double w = std::pow(base, -2.0 * j / head_dim), c = std::cos(pos * w),
                     s = std::sin(pos * w);
        const auto i = static_cast<std::size_t>(h * head_dim + a),
                   k = static_cast<std::size_t>(h * head_dim + b);
        // The float contract: 3 * 2^-24 * r, r the pair's norm (the float64 reference's own
        // error is far below it).
        const double tol = 3 * 0x1p-24 * std::hypot(static_cast<double>(x0[i]), x0[k]);
        EXPECT_NEAR(x[i], c * x0[i] - s * x0[k], tol) << "head " << h << " pair " << j;
        EXPECT_NEAR(x[k], s * x0[i] + c * x0[k], tol) << "head " << h << " pair " << j;
      }
    }
  }
}

TEST(Fwd, TraitsSpecializedThroughTheDeclaredDefault) {
  EXPECT_EQ(rope::storage_traits<engine_bits>::format, rope::storage_format::bf16);
  EXPECT_EQ(rope::storage_traits<engine_bits>::store(1.0f).v, 0x3f80);
}

}  // namespace
