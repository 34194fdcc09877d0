// fastmath_oracle.cpp's functions (built without -ffast-math) for fastmath_test.cpp.
#pragma once

#include <cstdint>
#include <vector>

namespace fastmath_oracle {

/// The build-mode namespace rope has in a file built without -ffast-math.
const char* rope_namespace();

/// cos and sin of the exact product p * w (oracle::cos_sin_of_product).
void cos_sin(std::int64_t p, double w, long double& c, long double& s);

/// x (head_dim floats, all rotated) turned by the long double 2x2 oracle at position p, with
/// w_j = base^(-2j/head_dim).
std::vector<long double> rotate(const float* x, int head_dim, double base, bool interleaved,
                                std::int64_t p);

}  // namespace fastmath_oracle
