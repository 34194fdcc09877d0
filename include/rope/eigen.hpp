/// \file rope/eigen.hpp
/// \brief rope::apply for Eigen matrices, maps and blocks.
///
/// Opt-in: the only rope header that includes Eigen (`<Eigen/Core>`); `rope/rope.hpp` does not
/// include it. Link Eigen yourself (CMake: `Eigen3::Eigen`).
///
/// \code
///   using Q = Eigen::Matrix<float, Eigen::Dynamic, 128, Eigen::RowMajor>;    // tokens x head_dim
///   rope::status st = rope::eigen::apply(*tab, q, positions);                 // in place
///   st = rope::eigen::apply(*tab, qkv.middleCols(0, 32 * 128), 32, positions); // 32 heads per row
/// \endcode
///
/// Shapes. A row is a token. A matrix of tokens x head_dim holds one head per token; a matrix
/// of tokens x (n_heads * head_dim) holds n_heads heads side by side (the packed [T, H, D]
/// layout), and the head count is given. Blocks, Maps (with an outer stride: a row of a larger
/// buffer, e.g. q inside a fused qkv projection) and Refs work as long as each row is
/// contiguous: the storage must be row-major (checked at compile time), the inner stride must
/// be 1 (checked at compile time when Eigen knows it, else at run time: status::bad_stride) and
/// the outer stride is the token stride.
///
/// Dim. Without an explicit Dim, a matrix whose column count is fixed at compile time (e.g.
/// `Matrix<float, Dynamic, 128, RowMajor>`) runs the kernel specialised for that head dimension
/// whenever the table rotates all of it; otherwise (dynamic columns, or a partial rotary_dim)
/// the rotary dimension is taken from the table at run time (rope::dynamic). An explicit Dim is
/// passed to rope::apply unchanged (a Dim that differs from the table's rotary_dim gives
/// status::bad_dimension).
///
/// Contract. Exactly rope::apply's (`rope/apply.hpp`): noexcept, no allocation, no lock, every
/// argument validated before the first write, in place and out of place bitwise identical,
/// dims [rotary_dim, head_dim) untouched in place and copied bit for bit out of place.
/// `positions` holds one position per row (int32_t or int64_t).
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rope/apply.hpp"
#include "rope/spec.hpp"
#include "rope/storage.hpp"
#include "rope/table.hpp"

ROPE_BEGIN_NAMESPACE

/// Eigen overloads of rope::apply and rope::apply_qk (see the file comment of rope/eigen.hpp).
namespace eigen {

/// Dim sentinel: take the head dimension from Eigen's compile-time column count when it is
/// fixed and the table rotates all of it, else run with rope::dynamic.
inline constexpr std::size_t from_columns = ~std::size_t{0};

namespace detail {

template <class X>
using plain_t = std::remove_cv_t<std::remove_reference_t<X>>;

template <class X>
inline constexpr bool is_dense_v = std::is_base_of<Eigen::DenseBase<plain_t<X>>, plain_t<X>>::value;

/// The element type a dense expression stores (const for Map<const ...> and const objects).
template <class X>
using element_t = std::remove_pointer_t<decltype(std::declval<X&>().data())>;

/// Compile-time requirements shared by every overload; each message says what to change.
template <class X, bool Writable>
constexpr void check_expression() noexcept {
  using D = plain_t<X>;
  static_assert((D::Flags & Eigen::DirectAccessBit) != 0,
                "rope::eigen needs an expression with storage (Matrix, Map, Block, Ref); "
                "evaluate a product or sum into a matrix first");
  static_assert(D::IsRowMajor || D::RowsAtCompileTime == 1,
                "rope::eigen needs row-major storage (one token per row, contiguous): use "
                "Eigen::Matrix<T, Eigen::Dynamic, N, Eigen::RowMajor> or a Map of it");
  static_assert(D::InnerStrideAtCompileTime == 1 || D::InnerStrideAtCompileTime == Eigen::Dynamic,
                "rope::eigen needs inner stride 1: the elements of a head must be contiguous");
  static_assert(!Writable || ((D::Flags & Eigen::LvalueBit) != 0 &&
                              !std::is_const<std::remove_reference_t<X>>::value),
                "rope::eigen: the output must be writable (not const, not a Map<const ...>)");
}

/// The heads_view of x split into n_heads heads per row, or the reason it cannot be one.
template <class X>
status view_of(X& x, std::ptrdiff_t n_heads, heads_view<element_t<X>>& v) noexcept {
  const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(x.rows());
  const std::ptrdiff_t cols = static_cast<std::ptrdiff_t>(x.cols());
  if (n_heads < 1 || cols % n_heads != 0 || (rows > 0 && cols == 0)) return status::bad_dimension;
  if (rows > 0 && cols > 0 && x.innerStride() != 1) return status::bad_stride;
  const std::ptrdiff_t head_dim = cols / n_heads;
  // A row vector's outer stride is meaningless (one token): use its length.
  const std::ptrdiff_t token_stride =
      rows > 1 ? static_cast<std::ptrdiff_t>(x.outerStride()) : cols;
  v = heads_view<element_t<X>>{x.data(), rows, n_heads, head_dim, token_stride, head_dim};
  return status::ok;
}

/// Dim to run with: an explicit Dim as given; from_columns resolved against the table.
template <std::size_t Dim, class X>
constexpr bool use_fixed_columns(int rotary_dim, std::ptrdiff_t n_heads) noexcept {
  constexpr int cols = plain_t<X>::ColsAtCompileTime;
  if constexpr (Dim == from_columns && cols != Eigen::Dynamic && cols > 0 && cols % 2 == 0 &&
                cols <= max_rotary_dim)
    return n_heads == 1 && rotary_dim == cols;
  else
    return false;
}

template <std::size_t Dim>
inline constexpr std::size_t explicit_dim = Dim == from_columns ? dynamic : Dim;

template <class X>
inline constexpr std::size_t fixed_columns =
    plain_t<X>::ColsAtCompileTime > 0 && plain_t<X>::ColsAtCompileTime % 2 == 0 &&
            plain_t<X>::ColsAtCompileTime <= max_rotary_dim
        ? static_cast<std::size_t>(plain_t<X>::ColsAtCompileTime)
        : dynamic;

}  // namespace detail

/// Rotates in -> out (two Eigen expressions of the same shape, rows = tokens, n_heads heads
/// of cols/n_heads elements per row), row t at positions[t]. out may be in itself (in place)
/// and must not otherwise overlap it. out's scalar may differ from in's (e.g. float in,
/// 16-bit out into a KV cache) when rope::apply supports that pair; rnd as for rope::apply.
/// Returns status::bad_dimension when n_heads < 1 (the head size cols / n_heads is undefined,
/// unlike a heads_view with zero heads), cols is not a multiple of n_heads or the shapes differ,
/// status::bad_stride when an inner stride is not 1.
template <std::size_t Dim = from_columns, class In, class Out, class Pos,
          class = std::enable_if_t<detail::is_dense_v<In> && detail::is_dense_v<Out>>>
[[nodiscard]] status apply(const table<compute_type_t<typename detail::plain_t<In>::Scalar>>& tab,
                           const In& in, Out&& out, std::ptrdiff_t n_heads, const Pos* positions,
                           direction dir = direction::forward,
                           rounding rnd = rounding::accurate) noexcept {
  detail::check_expression<In, false>();
  detail::check_expression<Out, true>();
  using T = std::remove_const_t<detail::element_t<const In>>;
  heads_view<const T> vin;
  heads_view<detail::element_t<Out>> vout;
  if (status st = detail::view_of(in, n_heads, vin); st != status::ok) return st;
  if (status st = detail::view_of(out.derived(), n_heads, vout); st != status::ok) return st;
  if (detail::use_fixed_columns<Dim, In>(tab.rotary_dim(), n_heads))
    return rope::apply<T, detail::fixed_columns<In>>(tab, vin, vout, positions, dir, rnd);
  return rope::apply<T, detail::explicit_dim<Dim>>(tab, vin, vout, positions, dir, rnd);
}

/// Out of place, one head per row (tokens x head_dim).
template <std::size_t Dim = from_columns, class In, class Out, class Pos,
          class = std::enable_if_t<detail::is_dense_v<In> && detail::is_dense_v<Out>>>
[[nodiscard]] status apply(const table<compute_type_t<typename detail::plain_t<In>::Scalar>>& tab,
                           const In& in, Out&& out, const Pos* positions,
                           direction dir = direction::forward,
                           rounding rnd = rounding::accurate) noexcept {
  return eigen::apply<Dim>(tab, in, std::forward<Out>(out), std::ptrdiff_t{1}, positions, dir, rnd);
}

/// In place: rotates the n_heads heads of each row of x (tokens x (n_heads * head_dim)), row t
/// at positions[t]. x may be a temporary block or map, e.g. qkv.leftCols(n_heads * head_dim).
template <std::size_t Dim = from_columns, class X, class Pos,
          class = std::enable_if_t<detail::is_dense_v<X>>>
[[nodiscard]] status apply(const table<compute_type_t<typename detail::plain_t<X>::Scalar>>& tab,
                           X&& x, std::ptrdiff_t n_heads, const Pos* positions,
                           direction dir = direction::forward,
                           rounding rnd = rounding::accurate) noexcept {
  detail::check_expression<X, true>();
  using T = detail::element_t<X>;
  heads_view<T> v;
  if (status st = detail::view_of(x.derived(), n_heads, v); st != status::ok) return st;
  if (detail::use_fixed_columns<Dim, X>(tab.rotary_dim(), n_heads))
    return rope::apply<T, detail::fixed_columns<X>>(tab, v, positions, dir, rnd);
  return rope::apply<T, detail::explicit_dim<Dim>>(tab, v, positions, dir, rnd);
}

/// In place, one head per row (tokens x head_dim).
template <std::size_t Dim = from_columns, class X, class Pos,
          class = std::enable_if_t<detail::is_dense_v<X>>>
[[nodiscard]] status apply(const table<compute_type_t<typename detail::plain_t<X>::Scalar>>& tab,
                           X&& x, const Pos* positions,
                           direction dir = direction::forward,
                           rounding rnd = rounding::accurate) noexcept {
  return eigen::apply<Dim>(tab, std::forward<X>(x), std::ptrdiff_t{1}, positions, dir, rnd);
}

/// Queries and keys of one batch in place (grouped-query attention: q has n_q_heads heads per
/// row, k has n_kv_heads), row t of both at positions[t]. Both are validated before either is
/// written; q and k must not overlap. Dim is the rotary dimension, or rope::dynamic.
template <std::size_t Dim = dynamic, class Q, class K, class Pos,
          class = std::enable_if_t<detail::is_dense_v<Q> && detail::is_dense_v<K>>>
[[nodiscard]] status apply_qk(const table<compute_type_t<typename detail::plain_t<Q>::Scalar>>& tab,
                              Q&& q, std::ptrdiff_t n_q_heads, K&& k, std::ptrdiff_t n_kv_heads,
                              const Pos* positions, direction dir = direction::forward,
                              rounding rnd = rounding::accurate) noexcept {
  detail::check_expression<Q, true>();
  detail::check_expression<K, true>();
  static_assert(std::is_same<detail::element_t<Q>, detail::element_t<K>>::value,
                "rope::eigen::apply_qk: q and k must have the same scalar type");
  using T = detail::element_t<Q>;
  heads_view<T> vq, vk;
  if (status st = detail::view_of(q.derived(), n_q_heads, vq); st != status::ok) return st;
  if (status st = detail::view_of(k.derived(), n_kv_heads, vk); st != status::ok) return st;
  return rope::apply_qk<T, Dim>(tab, vq, vk, positions, dir, rnd);
}

}  // namespace eigen
ROPE_END_NAMESPACE  // rope
