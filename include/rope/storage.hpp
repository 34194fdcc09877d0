// rope/storage.hpp: storage types and the storage-type customization point.
//
//   rope::float16 k_cache[...];   // 16-bit storage: rope computes in float, rounds once on store
//   rope::apply<float>(*tab, rope::packed_heads<const float>(k, T, H, D),
//                      rope::packed_heads(k_cache, T, H, D), positions);   // float in, fp16 out
//
// rope rotates vectors stored as float, double, IEEE binary16 (rope::float16) or bfloat16
// (rope::bfloat16). A storage type tells rope, through rope::storage_traits, the arithmetic type
// it computes in and how one element is loaded and stored. 16-bit types compute in float: load
// is exact, store rounds once, to nearest even. A float result bound for a 16-bit output also
// takes a correction from the table's low parts (rope/arch/scalar.hpp), so that each output is
// within 1 ulp of the exact result correctly rounded even where a pair cancels (fp16: every
// output of a pair with A r < 2^19, A the attention factor; bf16: every output above 2^-35 of
// its pair's norm r, and within 1 ulp + 6.4 * 2^-48 r below it).
//
// Adopting another type with the same bits (Eigen::half, Eigen::bfloat16, _Float16, __bf16, an
// engine's struct around a uint16_t): derive its traits from fp16_storage / bf16_storage, e.g.
//
//   template <> struct rope::storage_traits<Eigen::half> : rope::fp16_storage<Eigen::half> {};
//   template <> struct rope::storage_traits<my_bf16> : rope::bf16_storage<my_bf16> {};
//
// The type must be 2 bytes, trivially copyable and default constructible. Its traits then carry
// `format`, which lets the vector kernels (rope/arch/*.hpp) convert with F16C / AVX-512 / NEON
// instructions; the results are bitwise those of the scalar conversions below. A type with
// traits of its own (compute_type, load, store, no `format`) works too, on the scalar path, and
// its results are the float result rounded by its own store: rounding::fast's accuracy, not
// rounding::accurate's 1 ulp where a pair cancels (rope does not know its bits, so it cannot
// add the low-part correction; an audit: 2 of 14,400 uniform outputs 1 ulp from rope::float16's).
// Derive its traits from fp16_storage / bf16_storage instead where the bits are fp16 or bf16.
//
// Conversions (exact, tested on all 65536 bit patterns):
//  - fp16 -> float and bf16 -> float are exact. An fp16 NaN becomes a quiet float NaN with the
//    payload kept (what F16C and Arm FCVT do); a bf16 NaN keeps its bits (a plain widening).
//  - float -> fp16 / bf16 round to nearest, ties to even; overflow gives +-Inf, +-0 and +-Inf
//    are kept, fp16 subnormals are produced (no flush to zero). A NaN stays a NaN, made quiet,
//    with the sign and the payload's top bits kept (what F16C does; AVX512_BF16's converter is
//    not used because it flushes subnormals).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "rope/config.hpp"
#include "rope/fwd.hpp"

ROPE_BEGIN_NAMESPACE

/// IEEE 754 binary16 storage: 1 sign, 5 exponent, 10 fraction bits. No arithmetic: rope loads
/// it into float and stores float into it.
struct float16 {
  std::uint16_t bits;
};

/// bfloat16 storage: the top 16 bits of a float (1 sign, 8 exponent, 7 fraction bits).
struct bfloat16 {
  std::uint16_t bits;
};

/// What the bits of a storage type mean; the vector kernels use it to pick a conversion.
/// `other`: a user type with its own load/store (scalar path only).
enum class storage_format : unsigned char { other = 0, f32, f64, fp16, bf16 };

/// Exact scalar conversions. These are the specification the vector paths match bit for bit.
inline float fp16_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t e = (h >> 10) & 0x1fu;
  std::uint32_t m = h & 0x3ffu;
  std::uint32_t bits;
  if (e == 0x1f) {
    bits = sign | 0x7f800000u | (m << 13) | (m != 0 ? 0x400000u : 0u);  // NaN made quiet
  } else if (e == 0) {
    if (m == 0) {
      bits = sign;
    } else {  // subnormal m * 2^-24: normalise
      e = 113;
      while ((m & 0x400u) == 0) {
        m <<= 1;
        --e;
      }
      bits = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline std::uint16_t float_to_fp16(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t a = x & 0x7fffffffu;
  std::uint32_t h;
  if (a > 0x7f800000u) {
    h = 0x7e00u | ((a >> 13) & 0x3ffu);  // quiet NaN, top payload bits kept
  } else if (a >= 0x477ff000u) {
    h = 0x7c00u;  // >= 65520 rounds to Inf (65520 is the tie between 65504 and 2^16: even wins)
  } else if (a >= 0x38800000u) {
    // Normal: rebias the exponent and round 13 bits away, to nearest even, by adding half an
    // fp16 ulp less one, plus the kept lowest bit, before the shift (a carry into the exponent
    // is the right result). A branch on the dropped bits (rest > half, or a tie with an odd
    // kept bit), taken at random on real data, made the scalar kernels on fp16 storage 3-5x
    // slower (apply_bench forced to scalar, side by side). Same bits for all 2^32 floats.
    h = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  } else if (a > 0x33000000u) {  // subnormal result: value in units of 2^-24, rounded
    const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - (a >> 23);  // 14..24
    h = m >> shift;
    const std::uint32_t rest = m & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (h & 1u) != 0)) ++h;
  } else {
    h = 0;  // <= 2^-25 rounds to zero (2^-25 is a tie with 2^-24: even wins)
  }
  return static_cast<std::uint16_t>(sign | h);
}

inline float bf16_to_float(std::uint16_t b) noexcept {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline std::uint16_t float_to_bf16(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  // Adding 0x7fff plus the lowest kept bit rounds to nearest even; a carry out of the
  // fraction moves into the exponent, which is how the largest finite values overflow to Inf.
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// compute_type: the arithmetic type (float or double); load/store convert one element. store
/// rounds once, to nearest even. `format` (optional) names the bits for the vector paths.
template <class T, class Enable>  // Enable = void (rope/fwd.hpp)
struct storage_traits;  // undefined: a type rope does not know is a compile error

template <>
struct storage_traits<float> {
  using compute_type = float;
  static constexpr storage_format format = storage_format::f32;
  static constexpr float load(float x) noexcept { return x; }
  static constexpr float store(float x) noexcept { return x; }
};

template <>
struct storage_traits<double> {
  using compute_type = double;
  static constexpr storage_format format = storage_format::f64;
  static constexpr double load(double x) noexcept { return x; }
  static constexpr double store(double x) noexcept { return x; }
};

namespace detail {

template <class T>
struct bits16_type {
  static_assert(sizeof(T) == 2 && std::is_trivially_copyable<T>::value &&
                    std::is_default_constructible<T>::value,
                "a 16-bit storage type must be 2 bytes, trivially copyable and default constructible");
  static std::uint16_t get(T x) noexcept {
    std::uint16_t b;
    std::memcpy(&b, static_cast<const void*>(&x), sizeof b);
    return b;
  }
  static T put(std::uint16_t b) noexcept {
    T x;  // through void*: GCC's -Wclass-memaccess names types with constructors (Eigen::half)
    std::memcpy(static_cast<void*>(&x), &b, sizeof b);
    return x;
  }
};

}  // namespace detail

/// Traits for any 2-byte type holding IEEE binary16 bits.
template <class T>
struct fp16_storage {
  using compute_type = float;
  static constexpr storage_format format = storage_format::fp16;
  static float load(T x) noexcept { return fp16_to_float(detail::bits16_type<T>::get(x)); }
  static T store(float x) noexcept { return detail::bits16_type<T>::put(float_to_fp16(x)); }
};

/// Traits for any 2-byte type holding bfloat16 bits.
template <class T>
struct bf16_storage {
  using compute_type = float;
  static constexpr storage_format format = storage_format::bf16;
  static float load(T x) noexcept { return bf16_to_float(detail::bits16_type<T>::get(x)); }
  static T store(float x) noexcept { return detail::bits16_type<T>::put(float_to_bf16(x)); }
};

template <>
struct storage_traits<float16> : fp16_storage<float16> {};
template <>
struct storage_traits<bfloat16> : bf16_storage<bfloat16> {};

/// The arithmetic type of storage type T (const ignored); also the table type: rope::apply on
/// T data takes a rope::table<compute_type_t<T>>.
template <class T>
using compute_type_t = typename storage_traits<std::remove_const_t<T>>::compute_type;

namespace detail {

template <class T, class = void>
struct format_of_impl : std::integral_constant<storage_format, storage_format::other> {};
template <class T>
struct format_of_impl<T, std::void_t<decltype(storage_traits<T>::format)>>
    : std::integral_constant<storage_format, storage_traits<T>::format> {};

}  // namespace detail

/// The storage format of T (const ignored): storage_format::other when its traits name none.
template <class T>
inline constexpr storage_format format_of_v = detail::format_of_impl<std::remove_const_t<T>>::value;

ROPE_END_NAMESPACE  // rope
