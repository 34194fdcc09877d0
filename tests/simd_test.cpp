// Every vector path (AVX2, AVX-512, NEON) against the scalar path (rope/arch/scalar.hpp, the
// specification). The bitwise equivalence over every head dim, offset, layout and type is
// simd_equivalence.hpp, one file per path (simd_equivalence_<isa>.cpp, linked in here); this
// file has each path's out-of-place direction, its 16-bit conversions and stores over every bit
// pattern and NaN, then the dispatcher: a forced path really runs (per-path call counters,
// ROPE_TEST_COUNT_DISPATCH, defined for every file of this test by tests/CMakeLists.txt),
// ROPE_FORCE_ISA is honoured, a path the CPU lacks is refused. Test names carry the ISA; paths
// this machine or build cannot run are skipped with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <rope/rope.hpp>

#include "simd_equivalence.hpp"
#include "test_scale.hpp"

namespace {
// A storage type with its own traits and no storage format: rope runs it on the scalar path.
struct boxed_float {
  float v;
};
}  // namespace

template <>
struct rope::storage_traits<boxed_float> {
  using compute_type = float;
  static float load(boxed_float x) noexcept { return x.v; }
  static boxed_float store(float x) noexcept { return {x}; }
};

namespace {

using rope_test::fill_twins;
using rope_test::guarded;

#if ROPE_X86
// The direction of an out-of-place job in the x86 kernels (aliasing_back): backwards exactly
// when the output starts 1..2047 bytes above the input modulo 4096 and both have one element
// size; the equivalence tests (simd_equivalence.hpp) run both directions only because of it.
template <class Same, class Mixed>
void check_direction(Same same, Mixed mixed) {
  alignas(4096) static unsigned char buf[3 * 4096];
  const auto* in = reinterpret_cast<const float*>(buf + 4096);
  for (std::size_t at = 0; at <= 2 * 4096; at += 4) {
    const std::size_t above = at % 4096;  // (out - in) mod 4096, the input at 4096
    const auto* out = reinterpret_cast<const float*>(buf + at);
    EXPECT_EQ(above != 0 && above < 2048, same(in, out)) << "output at " << at << ", input at 4096";
    EXPECT_FALSE(mixed(in, reinterpret_cast<const rope::float16*>(buf + at))) << at;
  }
}
#endif

#if ROPE_X86
TEST(SimdAvx2, OutOfPlaceRunsBackwardsJustAboveTheInputModulo4096) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_direction([](const float* i, const float* o) { return rope::arch::avx2::detail::aliasing_back(i, o); },
                  [](const float* i, const rope::float16* o) { return rope::arch::avx2::detail::aliasing_back(i, o); });
}
TEST(SimdAvx512, OutOfPlaceRunsBackwardsJustAboveTheInputModulo4096) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_direction([](const float* i, const float* o) { return rope::arch::avx512::detail::aliasing_back(i, o); },
                  [](const float* i, const rope::float16* o) { return rope::arch::avx512::detail::aliasing_back(i, o); });
}
#endif

// --- 16-bit conversions of each path against the exact scalar ones --------------------------

// Each path's vector load and store of a 16-bit format, called directly (in the path's target
// region), over whole vectors.
#if ROPE_X86
template <class T16>
ROPE_AVX512_FN void avx512_widen(const T16* p, float* out, std::size_t n) {
  namespace k = rope::arch::avx512::detail;
  for (std::size_t i = 0; i < n; i += 16)
    k::io<float, rope::storage_format::f32>::store(out + i, k::io<float, rope::format_of_v<T16>>::load(p + i));
}
template <class T16>
ROPE_AVX512_FN void avx512_narrow(const float* p, T16* out, std::size_t n) {
  namespace k = rope::arch::avx512::detail;
  for (std::size_t i = 0; i < n; i += 16)
    k::io<float, rope::format_of_v<T16>>::store(out + i, k::io<float, rope::storage_format::f32>::load(p + i));
}
// bf16 through a path's even/odd pairs (bf16_pairs: 2N elements per load and store), the floats
// in element order: a block's N evens and N odds interleaved, and dealt back.
void interleave_pairs(const float* even, const float* odd, float* out, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    out[2 * k] = even[k];
    out[2 * k + 1] = odd[k];
  }
}
void deal_pairs(const float* p, float* even, float* odd, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    even[k] = p[2 * k];
    odd[k] = p[2 * k + 1];
  }
}
ROPE_AVX512_FN void avx512_pair_widen(const rope::bfloat16* p, float* out, std::size_t n) {
  using B = rope::arch::avx512::detail::bf16_pairs<float>;
  alignas(64) float even[16], odd[16];
  for (std::size_t i = 0; i < n; i += 32) {
    __m512 e, o;
    B::load(p + i, e, o);
    _mm512_store_ps(even, e);
    _mm512_store_ps(odd, o);
    interleave_pairs(even, odd, out + i, 16);
  }
}
ROPE_AVX512_FN void avx512_pair_narrow(const float* p, rope::bfloat16* out, std::size_t n) {
  using B = rope::arch::avx512::detail::bf16_pairs<float>;
  alignas(64) float even[16], odd[16];
  for (std::size_t i = 0; i < n; i += 32) {
    deal_pairs(p + i, even, odd, 16);
    B::store(out + i, _mm512_load_ps(even), _mm512_load_ps(odd));
  }
}
ROPE_AVX2_FN void avx2_pair_widen(const rope::bfloat16* p, float* out, std::size_t n) {
  using B = rope::arch::avx2::detail::bf16_pairs<float>;
  alignas(32) float even[8], odd[8];
  for (std::size_t i = 0; i < n; i += 16) {
    __m256 e, o;
    B::load(p + i, e, o);
    _mm256_store_ps(even, e);
    _mm256_store_ps(odd, o);
    interleave_pairs(even, odd, out + i, 8);
  }
}
ROPE_AVX2_FN void avx2_pair_narrow(const float* p, rope::bfloat16* out, std::size_t n) {
  using B = rope::arch::avx2::detail::bf16_pairs<float>;
  alignas(32) float even[8], odd[8];
  for (std::size_t i = 0; i < n; i += 16) {
    deal_pairs(p + i, even, odd, 8);
    B::store(out + i, _mm256_load_ps(even), _mm256_load_ps(odd));
  }
}
// bf16 stored two vectors at a time (io::store_two: 32 elements per store on AVX-512, 16 on AVX2,
// as out-of-place rows with a bf16 output store them).
ROPE_AVX512_FN void avx512_two_narrow(const float* p, rope::bfloat16* out, std::size_t n) {
  namespace k = rope::arch::avx512::detail;
  using F32 = k::io<float, rope::storage_format::f32>;
  for (std::size_t i = 0; i < n; i += 32)
    k::io<float, rope::storage_format::bf16>::store_two(out + i, F32::load(p + i),
                                                        F32::load(p + i + 16));
}
ROPE_AVX2_FN void avx2_two_narrow(const float* p, rope::bfloat16* out, std::size_t n) {
  namespace k = rope::arch::avx2::detail;
  using F32 = k::io<float, rope::storage_format::f32>;
  for (std::size_t i = 0; i < n; i += 16)
    k::io<float, rope::storage_format::bf16>::store_two(out + i, F32::load(p + i),
                                                        F32::load(p + i + 8));
}
template <class T16>
ROPE_AVX2_FN void avx2_widen(const T16* p, float* out, std::size_t n) {
  namespace k = rope::arch::avx2::detail;
  for (std::size_t i = 0; i < n; i += 8)
    k::io<float, rope::storage_format::f32>::store(out + i, k::io<float, rope::format_of_v<T16>>::load(p + i));
}
template <class T16>
ROPE_AVX2_FN void avx2_narrow(const float* p, T16* out, std::size_t n) {
  namespace k = rope::arch::avx2::detail;
  for (std::size_t i = 0; i < n; i += 8)
    k::io<float, rope::format_of_v<T16>>::store(out + i, k::io<float, rope::storage_format::f32>::load(p + i));
}
#endif
#if ROPE_NEON
template <class T16>
void neon_widen(const T16* p, float* out, std::size_t n) {
  namespace k = rope::arch::neon::detail;
  for (std::size_t i = 0; i < n; i += 4)
    k::io<float, rope::storage_format::f32>::store(out + i, k::io<float, rope::format_of_v<T16>>::load(p + i));
}
template <class T16>
void neon_narrow(const float* p, T16* out, std::size_t n) {
  namespace k = rope::arch::neon::detail;
  for (std::size_t i = 0; i < n; i += 4)
    k::io<float, rope::format_of_v<T16>>::store(out + i, k::io<float, rope::storage_format::f32>::load(p + i));
}
#endif

template <class T>
std::uint32_t raw(const T& x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, sizeof x);
  return u;
}

// All 65536 patterns through the vector load; every pattern's value, one float ulp either side
// of the midpoint to the next pattern, and 2^20 random floats (NaNs of both signs, signalling
// and quiet, included) through the vector store: bitwise the scalar conversions.
template <class T16>
void check_conversions(void (*widen)(const T16*, float*, std::size_t),
                       void (*narrow)(const float*, T16*, std::size_t)) {
  std::vector<T16> all(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    std::memcpy(&all[b], &h, sizeof h);
  }
  std::vector<float> wide(all.size());
  widen(all.data(), wide.data(), all.size());
  for (std::uint32_t b = 0; b < 65536; ++b)
    ASSERT_EQ(raw(wide[b]), raw(rope::storage_traits<T16>::load(all[b]))) << "load of pattern " << std::hex << b;

  std::vector<float> floats;
  const std::uint32_t half_step = rope::format_of_v<T16> == rope::storage_format::fp16 ? 0x1000u : 0x8000u;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint32_t vb = raw(rope::storage_traits<T16>::load(all[b]));
    for (std::uint32_t x : {vb, vb + half_step - 1, vb + half_step, vb + half_step + 1}) {
      float f;
      std::memcpy(&f, &x, 4);
      floats.push_back(f);
    }
  }
  std::mt19937 gen(99);
  for (int i = 0; i < (1 << 20); ++i) {
    const auto x = static_cast<std::uint32_t>(gen());
    float f;
    std::memcpy(&f, &x, 4);
    floats.push_back(f);
  }
  std::vector<T16> narrowed(floats.size());
  narrow(floats.data(), narrowed.data(), floats.size());
  for (std::size_t i = 0; i < floats.size(); ++i)
    ASSERT_EQ(raw(narrowed[i]), raw(rope::storage_traits<T16>::store(floats[i])))
        << "store of float bits " << std::hex << raw(floats[i]);
}

#if ROPE_X86
// Whether to sweep all 2^32 float patterns (about 4 s per path in Release): not under
// sanitizers or ROPE_TEST_SCALE=quick.
bool sweep_every_float() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return false;
#endif
#endif
  return !rope_test::quick_scale();
}

// Every float bit pattern through a path's bf16 store, bitwise rope::float_to_bf16 (where the
// build has AVX512_BF16, this checks vcvtneps2bf16, or vcvtne2ps2bf16 for the pair store, the
// class test on results holding a zero word and the fall-back to the integer form on vectors
// holding a subnormal). Then blocks of zeros among normal values (no subnormal): the sweep's
// blocks holding a zero all hold subnormals too, so a zero word that needs no fall-back is
// checked here; and blocks with one subnormal. Reduced (sweep_every_float): every pattern whose
// exponent is 0 or 255 (zeros, subnormals, Inf, NaN) and the patterns of one upper half in 257
// otherwise.
void check_bf16_store_every_float(void (*narrow)(const float*, rope::bfloat16*, std::size_t)) {
  const bool every = sweep_every_float();
  std::vector<float> f(65536);
  std::vector<rope::bfloat16> out(f.size());
  for (std::uint32_t hi = 0; hi < 65536; ++hi) {
    const std::uint32_t exponent = (hi >> 7) & 0xffu;
    if (!every && exponent != 0 && exponent != 0xffu && hi % 257 != 0) continue;
    for (std::uint32_t lo = 0; lo < 65536; ++lo) {
      const std::uint32_t bits = hi << 16 | lo;
      std::memcpy(&f[lo], &bits, 4);
    }
    narrow(f.data(), out.data(), f.size());
    for (std::uint32_t lo = 0; lo < 65536; ++lo)  // ASSERT_EQ per element would cost more
      if (raw(out[lo]) != raw(rope::storage_traits<rope::bfloat16>::store(f[lo]))) {
        ADD_FAILURE() << "store of float bits " << std::hex << (hi << 16 | lo) << ": " << raw(out[lo])
                      << ", scalar " << raw(rope::storage_traits<rope::bfloat16>::store(f[lo]));
        return;
      }
  }
  std::vector<float> mixed(64);
  for (std::size_t i = 0; i < mixed.size(); ++i)
    mixed[i] = i % 3 == 0 ? (i % 2 ? -0.0f : 0.0f) : 1.0f + static_cast<float>(i) / 128.0f;
  for (bool all_zeros : {true, false}) {  // zeros of both signs, then zeros among normals
    std::vector<float> f2(mixed);
    if (all_zeros) {
      f2.assign(64, 0.0f);
      f2[5] = -0.0f;
    }
    std::vector<rope::bfloat16> o2(f2.size());
    narrow(f2.data(), o2.data(), f2.size());
    for (std::size_t i = 0; i < f2.size(); ++i)
      ASSERT_EQ(raw(o2[i]), raw(rope::storage_traits<rope::bfloat16>::store(f2[i])))
          << "zeros block, element " << i;
  }
  // One subnormal among normal values, at each position of a 64-element block: the sweep's
  // blocks share their upper half, so every vector of a two-vector store (store_two) holds a
  // subnormal or none does; here one vector does and the other not, either one.
  for (std::size_t at = 0; at < mixed.size(); ++at)
    for (float sub : {1e-40f, -3e-39f}) {
      std::vector<float> f3(mixed.size());
      for (std::size_t i = 0; i < f3.size(); ++i) f3[i] = 1.0f + static_cast<float>(i) / 128.0f;
      f3[at] = sub;
      std::vector<rope::bfloat16> o3(f3.size());
      narrow(f3.data(), o3.data(), f3.size());
      for (std::size_t i = 0; i < f3.size(); ++i)
        ASSERT_EQ(raw(o3[i]), raw(rope::storage_traits<rope::bfloat16>::store(f3[i])))
            << "one subnormal at " << at << ", element " << i;
    }
}

TEST(SimdAvx2, Bf16StoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_bf16_store_every_float(avx2_narrow<rope::bfloat16>);
}
TEST(SimdAvx512, Bf16StoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_bf16_store_every_float(avx512_narrow<rope::bfloat16>);
}
TEST(SimdAvx512, Bf16PairStoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_bf16_store_every_float(avx512_pair_narrow);
}
TEST(SimdAvx2, Bf16PairStoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_bf16_store_every_float(avx2_pair_narrow);
}
TEST(SimdAvx2, Bf16TwoVectorStoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_bf16_store_every_float(avx2_two_narrow);
}
TEST(SimdAvx512, Bf16TwoVectorStoreEqualsScalarOnEveryFloat) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_bf16_store_every_float(avx512_two_narrow);
}
TEST(SimdAvx512, Bf16PairConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_conversions<rope::bfloat16>(avx512_pair_widen, avx512_pair_narrow);
}
TEST(SimdAvx2, Bf16PairConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_conversions<rope::bfloat16>(avx2_pair_widen, avx2_pair_narrow);
}
TEST(SimdAvx2, Fp16ConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_conversions<rope::float16>(avx2_widen<rope::float16>, avx2_narrow<rope::float16>);
}
TEST(SimdAvx2, Bf16ConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_conversions<rope::bfloat16>(avx2_widen<rope::bfloat16>, avx2_narrow<rope::bfloat16>);
}
TEST(SimdAvx512, Fp16ConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_conversions<rope::float16>(avx512_widen<rope::float16>, avx512_narrow<rope::float16>);
}
TEST(SimdAvx512, Bf16ConversionsEqualScalarOnAllPatterns) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_conversions<rope::bfloat16>(avx512_widen<rope::bfloat16>, avx512_narrow<rope::bfloat16>);
}
#endif
#if ROPE_NEON
TEST(SimdNeon, Fp16ConversionsEqualScalarOnAllPatterns) {
  check_conversions<rope::float16>(neon_widen<rope::float16>, neon_narrow<rope::float16>);
}
TEST(SimdNeon, Bf16ConversionsEqualScalarOnAllPatterns) {
  check_conversions<rope::bfloat16>(neon_widen<rope::bfloat16>, neon_narrow<rope::bfloat16>);
}
#endif

// NaN results of the vector stores: NaN, quiet, sign kept (payload bits may differ by path only
// through which NaN operand the FMA propagates, so they are not compared).
template <class K, class T16>
void check_nan_stores() {
  const int D = 16;
  const rope::spec sp = rope::make_spec(D, D, 1e4, rope::layout::half_split);
  const auto tab = rope::table<float>::build(rope::default_frequencies(sp), sp.layout, 8);
  std::vector<float> x(D, 1.0f);
  const std::uint32_t nans[] = {0x7f800001u, 0x7fc00000u, 0xffc00001u, 0x7fbfffffu};
  for (std::size_t j = 0; j < 4; ++j) std::memcpy(&x[j], &nans[j], 4);
  std::vector<T16> y(D);
  const std::int32_t pos[1] = {3};
  auto jb = rope::detail::job<float, T16, std::int32_t>{x.data(), y.data(), 1, 1, D, D, D, D, D, pos, true};
  rope::detail::run_with<K, rope::dynamic>(*tab, jb, rope::direction::forward,
                                           rope::rounding::accurate);
  for (std::size_t j = 0; j < 4; ++j)
    for (std::size_t k : {j, j + D / 2}) {
      const float v = rope::storage_traits<T16>::load(y[k]);
      EXPECT_TRUE(std::isnan(v)) << k;
    }
  for (std::size_t j = 4; j < D / 2; ++j) EXPECT_FALSE(std::isnan(rope::storage_traits<T16>::load(y[j]))) << j;
}

#if ROPE_X86
TEST(SimdAvx2, NanInputsGiveNanOnlyInTheirPair) {
  ROPE_SKIP_UNLESS(rope::isa::avx2);
  check_nan_stores<rope::detail::avx2_kernels, rope::float16>();
  check_nan_stores<rope::detail::avx2_kernels, rope::bfloat16>();
}
TEST(SimdAvx512, NanInputsGiveNanOnlyInTheirPair) {
  ROPE_SKIP_UNLESS(rope::isa::avx512);
  check_nan_stores<rope::detail::avx512_kernels, rope::float16>();
  check_nan_stores<rope::detail::avx512_kernels, rope::bfloat16>();
}
#endif
#if ROPE_NEON
TEST(SimdNeon, NanInputsGiveNanOnlyInTheirPair) {
  check_nan_stores<rope::detail::neon_kernels, rope::float16>();
  check_nan_stores<rope::detail::neon_kernels, rope::bfloat16>();
}
#endif

// --- dispatch -------------------------------------------------------------------------------

unsigned long calls(rope::isa i) { return rope::detail::isa_calls[static_cast<int>(i)].load(); }

// Calls rope::apply once and returns which path counted the call.
rope::isa path_of_one_apply(std::vector<float>& x) {
  auto tab = rope::get_table<float>(rope::make_spec(128, 128, 1e4, rope::layout::half_split), 64);
  unsigned long before[5];
  for (int i = 1; i < 5; ++i) before[i] = rope::detail::isa_calls[i].load();
  const std::int32_t pos[2] = {5, 63};
  EXPECT_EQ(rope::apply<float>(*tab, rope::packed_heads(x.data(), 2, 4, 128), pos), rope::status::ok);
  rope::isa ran = rope::isa::scalar;
  int n = 0;
  for (int i = 1; i < 5; ++i)
    if (rope::detail::isa_calls[i].load() != before[i]) {
      ran = static_cast<rope::isa>(i);
      ++n;
    }
  EXPECT_EQ(n, 1) << "exactly one path runs per call";
  return ran;
}

// The first question asked of the dispatcher in this process: the environment's choice.
TEST(Dispatch, EnvironmentVariableIsHonoured) {
  const char* env = std::getenv("ROPE_FORCE_ISA");
#if defined(ROPE_RUNTIME_DISPATCH)
  rope::isa wanted;
  if (env == nullptr || !rope::detail::parse_isa(env, wanted)) {
    EXPECT_EQ(rope::active_isa(), rope::detail::best_isa());
    GTEST_SKIP() << "ROPE_FORCE_ISA not set: the best path " << rope::to_string(rope::active_isa())
                 << " is active";
  }
  if (!rope::detail::cpu_supports(wanted)) {
    EXPECT_EQ(rope::active_isa(), rope::detail::best_isa()) << "an unsupported choice is refused";
    return;
  }
  EXPECT_EQ(rope::active_isa(), wanted);
  std::vector<float> x(2 * 4 * 128, 0.5f);
  EXPECT_EQ(path_of_one_apply(x), wanted) << "the forced path is the one that ran";
  std::printf("ROPE_FORCE_ISA=%s: rope::apply ran on %s\n", env, rope::to_string(rope::active_isa()));
#else
  // A compile-time build runs its one path whatever the variable says; rope says so on stderr when
  // its first table is built (the ctest case dispatch.force_isa_in_compile_time_build checks that
  // line, which path_of_one_apply's get_table prints).
  EXPECT_EQ(rope::active_isa(), rope::compiled_isa());
  std::vector<float> x(2 * 4 * 128, 0.5f);
  EXPECT_EQ(path_of_one_apply(x), rope::compiled_isa()) << "the compiled path is the one that ran";
  GTEST_SKIP() << "compile-time dispatch (" << rope::to_string(rope::compiled_isa())
               << "): ROPE_FORCE_ISA=" << (env ? env : "(unset)")
               << " applies to ROPE_RUNTIME_DISPATCH builds";
#endif
}

// The request a compile-time build reads from ROPE_FORCE_ISA, for every kind of value.
TEST(Dispatch, FixedPathClassifiesForceIsaRequests) {
  using rope::detail::classify_fixed_path_request;
  using rope::detail::fixed_path_request;
  const rope::isa paths[] = {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512,
                             rope::isa::neon};
  for (rope::isa compiled : paths) {
    EXPECT_EQ(classify_fixed_path_request(nullptr, compiled), fixed_path_request::none);
    EXPECT_EQ(classify_fixed_path_request("", compiled), fixed_path_request::none);
    for (const char* bad : {"AVX2", "avx", "avx5120", " scalar", "neon ", "sse4"})
      EXPECT_EQ(classify_fixed_path_request(bad, compiled), fixed_path_request::not_a_path) << bad;
    for (rope::isa asked : paths) {
      const fixed_path_request want =
          asked == compiled ? fixed_path_request::compiled_path : fixed_path_request::other_path;
      EXPECT_EQ(classify_fixed_path_request(rope::to_string(asked), compiled), want)
          << rope::to_string(asked) << " asked of " << rope::to_string(compiled);
    }
  }
}

TEST(Dispatch, ForcedPathRunsAndGivesTheSameBits) {
  // The reference: the scalar specification run directly on path_of_one_apply's call, so that a
  // build with one path (compile-time dispatch) compares it with something other than itself.
  std::vector<float> x0(2 * 4 * 128);
  for (std::size_t k = 0; k < x0.size(); ++k) x0[k] = std::sin(static_cast<float>(k));
  std::vector<float> reference = x0;
  {
    auto tab = rope::get_table<float>(rope::make_spec(128, 128, 1e4, rope::layout::half_split), 64);
    const std::int32_t pos[2] = {5, 63};
    rope::detail::run_with<rope::detail::scalar_kernels, rope::dynamic>(
        *tab,
        rope::detail::job<float, float, std::int32_t>{reference.data(), reference.data(), 2, 4,
                                                      4 * 128, 128, 4 * 128, 128, 128, pos, false},
        rope::direction::forward, rope::rounding::accurate);
    ASSERT_NE(0, std::memcmp(x0.data(), reference.data(), x0.size() * sizeof(float)));
  }
  int paths = 0;
  for (rope::isa i : {rope::isa::scalar, rope::isa::avx2, rope::isa::avx512, rope::isa::neon}) {
    const bool ok = rope::force_isa(i);
#if defined(ROPE_RUNTIME_DISPATCH)
    EXPECT_EQ(ok, rope::detail::cpu_supports(i)) << rope::to_string(i);
#else
    EXPECT_EQ(ok, i == rope::compiled_isa()) << rope::to_string(i);
#endif
    if (!ok) continue;
    EXPECT_EQ(rope::active_isa(), i);
    std::vector<float> x = x0;
    EXPECT_EQ(path_of_one_apply(x), i) << "forced " << rope::to_string(i);
    EXPECT_EQ(0, std::memcmp(x.data(), reference.data(), x.size() * sizeof(float))) << rope::to_string(i);
    ++paths;
  }
  std::printf("paths forced and run: %d (active now %s)\n", paths, rope::to_string(rope::active_isa()));
  EXPECT_GE(paths, 1);
}

TEST(Dispatch, PathTheCpuLacksIsRefused) {
  const rope::isa before = rope::active_isa();
#if ROPE_X86
  EXPECT_FALSE(rope::force_isa(rope::isa::neon));
#else
  EXPECT_FALSE(rope::force_isa(rope::isa::avx2));
#endif
  EXPECT_EQ(rope::active_isa(), before);
  // The refused request changed nothing: the next call still runs on the path before it.
  std::vector<float> x(2 * 4 * 128, 0.5f);
  EXPECT_EQ(path_of_one_apply(x), before);
}

// rope::apply with Dim = rope::dynamic: rotary dims in ROPE_DYNAMIC_DIMS (64, 80, 96, 128, 256 by
// default) run the kernels compiled for that dim, others (112, and the partial dims 40, 48, 56)
// the kernels for a run-time dim. Either way the bits are the scalar specification's, in place
// and out of place, with the output 1 KiB above the input modulo 4096 (compiled x86 kernels
// then run backwards) and 1 KiB below, and a copied tail where the rotary dim is partial.
template <class TIn, class TOut>
void check_dynamic_call(int D, int d, rope::layout l, bool in_place, std::size_t phase,
                        std::uint64_t seed) {
  using Real = rope::compute_type_t<TIn>;
  const rope::spec sp = rope::make_spec(D, d, 1e4, l);
  const auto tab = rope::table<Real>::build(rope::default_frequencies(sp), l, 64, rope::table_mode::dense);
  constexpr int T = 3, H = 5;
  const auto n = static_cast<std::size_t>(T * H * D);
  std::mt19937_64 gen(seed);
  std::vector<std::int32_t> pos(T);
  for (auto& p : pos) p = static_cast<std::int32_t>(gen() % 64);
  guarded<TIn> in_a(n, 0), in_b(n, 0);
  guarded<TOut> out_a(n, 0, phase), out_b(n, 0, phase);
  fill_twins(gen, in_a, in_b, n);
  const std::vector<unsigned char> in_initial = in_b.bytes, out_initial = out_b.bytes;
  const auto z = static_cast<std::size_t>(D);
  TOut* spec_out = in_place ? reinterpret_cast<TOut*>(in_a.data()) : out_a.data();
  rope::detail::run_with<rope::detail::scalar_kernels, rope::dynamic>(
      *tab,
      rope::detail::job<TIn, TOut, std::int32_t>{in_a.data(), spec_out, T, H, H * z, z, H * z, z, z,
                                                 pos.data(), !in_place},
      rope::direction::forward, rope::rounding::accurate);
  rope::status st = rope::status::ok;
  if constexpr (std::is_same<TIn, TOut>::value) {
    if (in_place) st = rope::apply<TIn>(*tab, rope::packed_heads(in_b.data(), T, H, D), pos.data());
  }
  if (!in_place)
    st = rope::apply<TIn>(*tab, rope::packed_heads<const TIn>(in_b.data(), T, H, D),
                          rope::packed_heads(out_b.data(), T, H, D), pos.data());
  ASSERT_EQ(st, rope::status::ok);
  const std::string what = std::string(rope::to_string(rope::active_isa())) + " D=" + std::to_string(D) +
                           " d=" + std::to_string(d) + " " + rope::to_string(l) +
                           (in_place ? " in place" : " out of place") + " out phase " +
                           std::to_string(phase) + " in " + std::to_string(sizeof(TIn)) + "B out " +
                           std::to_string(sizeof(TOut)) + "B";
  // The buffers are packed (every element a row's): canaries, and out of place the input
  // unchanged, besides the bitwise windows.
  compare_runs(in_a, in_b, out_a, out_b, in_initial, out_initial, std::vector<bool>(n, true),
               in_place, what);
}

TEST(Dispatch, DynamicDimGivesTheSpecificationsBits) {
  std::uint64_t seed = 11;
  int cases = 0;
  for (int D : {64, 80, 96, 112, 128, 256})
    for (rope::layout l : {rope::layout::interleaved, rope::layout::half_split})
      for (int d : {D, D / 2})
        for (std::size_t phase : {1024u, 3072u}) {
          for (bool in_place : {true, false}) {
            check_dynamic_call<float, float>(D, d, l, in_place, phase, ++seed);
            check_dynamic_call<rope::float16, rope::float16>(D, d, l, in_place, phase, ++seed);
            check_dynamic_call<rope::bfloat16, rope::bfloat16>(D, d, l, in_place, phase, ++seed);
            cases += 3;
          }
          check_dynamic_call<float, rope::bfloat16>(D, d, l, false, phase, ++seed);
          ++cases;
          if (::testing::Test::HasFatalFailure()) return;
        }
  std::printf("dynamic-Dim calls checked: %d\n", cases);
}

TEST(Dispatch, UserTypeWithoutFormatRunsScalar) {
  // A storage type whose traits name no format (boxed_float below) runs the scalar path on
  // every active path; double, which has one, runs the active path.
  auto tab = rope::get_table<float>(rope::make_spec(64, 64, 1e4, rope::layout::interleaved), 8);
  std::vector<boxed_float> x(64, boxed_float{0.25f});
  const unsigned long s0 = calls(rope::isa::scalar);
  const rope::isa active = rope::active_isa();
  const unsigned long a0 = calls(active);
  ASSERT_EQ(rope::apply<boxed_float>(*tab, 3, x.data()), rope::status::ok);
  EXPECT_EQ(calls(rope::isa::scalar), s0 + 1) << "active " << rope::to_string(active);
  if (active != rope::isa::scalar) {
    EXPECT_EQ(calls(active), a0);
  }
  auto dtab = rope::get_table<double>(rope::make_spec(64, 64, 1e4, rope::layout::interleaved), 8);
  std::vector<double> y(64, 0.25);
  const unsigned long d0 = calls(active);
  ASSERT_EQ(rope::apply<double>(*dtab, 3, y.data()), rope::status::ok);
  EXPECT_EQ(calls(active), d0 + 1) << "double on " << rope::to_string(active);
}

}  // namespace
