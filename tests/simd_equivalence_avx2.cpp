// simd_test, the AVX2 path: bitwise identical to the scalar path (harness: simd_equivalence.hpp).
#include "simd_equivalence.hpp"

#if ROPE_X86
TEST(SimdAvx2, BitwiseEqualsScalarEveryHeadDimOffsetTypeLayout) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  rope_test::check_every_head_dim<rope::detail::avx2_kernels>();
}
TEST(SimdAvx2, BitwiseEqualsScalarCompileTimeDims) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  rope_test::check_static_dims<rope::detail::avx2_kernels>();
}
TEST(SimdAvx2, BitwiseEqualsScalarPrefetchingHalfSplitJobs) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  rope_test::check_prefetching_jobs<rope::detail::avx2_kernels>();
}
TEST(SimdAvx2, BitwiseEqualsScalarMropeGatheredRows) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  rope_test::check_gathered_rows<rope::detail::avx2_kernels>();
}
#endif
