// Must not compile: a compile-time rotary dim that is odd (it names no whole pairs).
#include <rope/rope.hpp>

int main() {
  const auto tab = rope::get_table<float>(rope::make_spec(8, 8, 1e4, rope::layout::half_split), 16);
  float x[8] = {};
  return rope::apply<float, 7>(*tab, 3, x) == rope::status::ok ? 0 : 1;
}
