// Must not compile: positions of an unsigned type (a negative position would wrap to a huge one
// and pass as "in range" modulo the type).
#include <rope/rope.hpp>

#include <cstdint>

int main() {
  const auto tab = rope::get_table<float>(rope::make_spec(8, 8, 1e4, rope::layout::half_split), 16);
  float x[8] = {};
  const std::uint32_t pos[1] = {3};
  return rope::apply<float>(*tab, rope::packed_heads(x, 1, 1, 8), pos) == rope::status::ok ? 0 : 1;
}
