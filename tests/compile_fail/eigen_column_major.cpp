// Must not compile: a column-major matrix does not hold a token's head contiguously.
#include <rope/eigen.hpp>

int main() {
  const auto tab = rope::get_table<float>(rope::make_spec(8, 8, 1e4, rope::layout::half_split), 16);
  Eigen::MatrixXf m(4, 8);
  const int pos[4] = {0, 1, 2, 3};
  return rope::eigen::apply(*tab, m, pos) == rope::status::ok ? 0 : 1;
}
