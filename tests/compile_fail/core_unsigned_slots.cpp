// Must not compile: KV-cache slots of an unsigned type (-1, "skip this token", has no value).
#include <rope/slots.hpp>

#include <cstdint>

int main() {
  const auto tab = rope::get_table<float>(rope::make_spec(8, 8, 1e4, rope::layout::half_split), 16);
  float k[8] = {}, cache[32] = {};
  const std::int32_t pos[1] = {3};
  const std::uint32_t slots[1] = {2};
  return rope::apply_to_slots<float>(*tab, rope::packed_heads<const float>(k, 1, 1, 8),
                                     rope::packed_heads(cache, 4, 1, 8), pos, slots) ==
                 rope::status::ok
             ? 0
             : 1;
}
