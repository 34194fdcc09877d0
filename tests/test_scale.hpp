// tests/test_scale.hpp: the test grids' shared parts: shared/testing.md's head dims, and
// ROPE_TEST_SCALE=quick, read by the tests whose grids the slow configurations (TSan, qemu, the
// dev preset) shrink.
#pragma once

#include <cstdlib>
#include <string>

namespace rope_test {

// testing.md's head dims: every remainder modulo 4, 8 and 16 lanes.
inline constexpr int kHeadDims[] = {2,  4,  6,  8,   14,  16,  30,  32,  62,  64,
                                    66, 80, 96, 120, 128, 160, 192, 256, 320, 512};

inline bool quick_scale() {
  const char* v = std::getenv("ROPE_TEST_SCALE");
  return v != nullptr && std::string(v) == "quick";
}

}  // namespace rope_test
