// The reference side of fastmath_test: compiled without -ffast-math (tests/CMakeLists.txt), so
// its long double cos/sin and rotations are IEEE's. Its interface has builtin types only: rope's
// types in fastmath_test.cpp live in another build-mode namespace (rope/config.hpp).
#include "fastmath_oracle.hpp"

#include <rope/rope.hpp>

#include "oracle.hpp"

#define ROPE_FASTMATH_STR_I(x) #x
#define ROPE_FASTMATH_STR(x) ROPE_FASTMATH_STR_I(x)

namespace fastmath_oracle {

const char* rope_namespace() { return ROPE_FASTMATH_STR(ROPE_ABI_NAMESPACE); }

void cos_sin(std::int64_t p, double w, long double& c, long double& s) {
  const oracle::cos_sin cs = oracle::cos_sin_of_product(p, w);
  c = cs.c;
  s = cs.s;
}

std::vector<long double> rotate(const float* x, int head_dim, double base, bool interleaved,
                                std::int64_t p) {
  return oracle::rotate(x, head_dim, head_dim, oracle::inv_freq(base, head_dim),
                        interleaved ? rope::layout::interleaved : rope::layout::half_split,
                        static_cast<long double>(p));
}

}  // namespace fastmath_oracle
