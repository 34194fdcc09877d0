// tests/test_scale.hpp: ROPE_TEST_SCALE=quick, read by the tests whose grids the slow
// configurations (TSan, qemu, the dev preset) shrink.
#pragma once

#include <cstdlib>
#include <string>

namespace rope_test {

inline bool quick_scale() {
  const char* v = std::getenv("ROPE_TEST_SCALE");
  return v != nullptr && std::string(v) == "quick";
}

}  // namespace rope_test
