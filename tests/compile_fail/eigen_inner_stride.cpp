// Must not compile: an inner stride of 2 known at compile time splits every head.
#include <rope/eigen.hpp>

int main() {
  const auto tab = rope::get_table<float>(rope::make_spec(8, 8, 1e4, rope::layout::half_split), 16);
  float buf[64] = {};
  using M = Eigen::Matrix<float, 4, 8, Eigen::RowMajor>;
  Eigen::Map<M, Eigen::Unaligned, Eigen::Stride<16, 2>> m(buf);
  const int pos[4] = {0, 1, 2, 3};
  return rope::eigen::apply(*tab, m, pos) == rope::status::ok ? 0 : 1;
}
