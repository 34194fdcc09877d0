// rope/storage.hpp: the storage-type customization point.
//
// rope rotates vectors stored as float or double, computing in that type. A storage type
// tells rope, through rope::storage_traits, which type it computes in and how one element is
// loaded and stored. Specialise storage_traits for another type with the same bits as one rope
// already knows, e.g.
//
//   template <> struct rope::storage_traits<my_half> : rope::storage_traits<rope::float16> {};
//
// (16-bit storage arrives with the SIMD work; until then float and double are provided.)
#pragma once

#include <type_traits>

namespace rope {

/// compute_type: the arithmetic type (float or double); load/store convert one element. store
/// rounds once, to nearest even.
template <class T, class Enable = void>
struct storage_traits;  // undefined: a type rope does not know is a compile error

template <>
struct storage_traits<float> {
  using compute_type = float;
  static constexpr float load(float x) noexcept { return x; }
  static constexpr float store(float x) noexcept { return x; }
};

template <>
struct storage_traits<double> {
  using compute_type = double;
  static constexpr double load(double x) noexcept { return x; }
  static constexpr double store(double x) noexcept { return x; }
};

/// The arithmetic type of storage type T (const ignored); also the table type: rope::apply on
/// T data takes a rope::table<compute_type_t<T>>.
template <class T>
using compute_type_t = typename storage_traits<std::remove_const_t<T>>::compute_type;

}  // namespace rope
