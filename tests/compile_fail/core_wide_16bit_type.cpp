// Must not compile: a 4-byte type adopted as fp16 storage (its bits are not a binary16).
#include <rope/rope.hpp>

#include <cstdint>

struct wide_half {
  std::uint32_t raw;
};
template <>
struct rope::storage_traits<wide_half> : rope::fp16_storage<wide_half> {};

int main() {
  const auto tab = rope::get_table<float>(rope::make_spec(8, 8, 1e4, rope::layout::half_split), 16);
  wide_half x[8] = {};
  return rope::apply<wide_half>(*tab, 3, x) == rope::status::ok ? 0 : 1;
}
