// Must not compile: the output of an in-place call is a Map of const data.
#include <rope/eigen.hpp>

int main() {
  const auto tab = rope::get_table<float>(rope::make_spec(8, 8, 1e4, rope::layout::half_split), 16);
  const float buf[32] = {};
  Eigen::Map<const Eigen::Matrix<float, 4, 8, Eigen::RowMajor>> m(buf);
  const int pos[4] = {0, 1, 2, 3};
  return rope::eigen::apply(*tab, m, pos) == rope::status::ok ? 0 : 1;
}
