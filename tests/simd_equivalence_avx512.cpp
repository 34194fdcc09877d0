// simd_test, the AVX-512 path: bitwise identical to the scalar path (harness:
// simd_equivalence.hpp).
#include "simd_equivalence.hpp"

#if ROPE_X86
TEST(SimdAvx512, BitwiseEqualsScalarEveryHeadDimOffsetTypeLayout) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  rope_test::check_every_head_dim<rope::detail::avx512_kernels>();
}
TEST(SimdAvx512, BitwiseEqualsScalarCompileTimeDims) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  rope_test::check_static_dims<rope::detail::avx512_kernels>();
}
TEST(SimdAvx512, BitwiseEqualsScalarPrefetchingHalfSplitJobs) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  rope_test::check_prefetching_jobs<rope::detail::avx512_kernels>();
}
TEST(SimdAvx512, BitwiseEqualsScalarMropeGatheredRows) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  rope_test::check_gathered_rows<rope::detail::avx512_kernels>();
}
#endif
