// simd_test, the NEON path: bitwise identical to the scalar path (harness: simd_equivalence.hpp).
#include "simd_equivalence.hpp"

#if ROPE_NEON
TEST(SimdNeon, BitwiseEqualsScalarEveryHeadDimOffsetTypeLayout) {
  rope_test::check_every_head_dim<rope::detail::neon_kernels>();
}
TEST(SimdNeon, BitwiseEqualsScalarCompileTimeDims) {
  rope_test::check_static_dims<rope::detail::neon_kernels>();
}
TEST(SimdNeon, BitwiseEqualsScalarPrefetchingHalfSplitJobs) {
  rope_test::check_prefetching_jobs<rope::detail::neon_kernels>();
}
TEST(SimdNeon, BitwiseEqualsScalarMropeGatheredRows) {
  rope_test::check_gathered_rows<rope::detail::neon_kernels>();
}
#else
TEST(SimdNeon, BitwiseEqualsScalarEveryHeadDimOffsetTypeLayout) {
  GTEST_SKIP() << "NEON kernels exist only in AArch64 builds (run under qemu-aarch64 in CI)";
}
#endif
