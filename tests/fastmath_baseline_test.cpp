// fastmath_test.cpp compiled with -ffast-math for baseline x86-64 (-march=x86-64: no fma
// instructions, where Clang under -ffast-math splits std::fma into a multiply and an add; see
// detail::exact_fma in rope/config.hpp). tests/CMakeLists.txt prefixes its tests "baseline.".
#include "fastmath_test.cpp"
