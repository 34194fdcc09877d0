// rope/apply.hpp: rope::apply, the hot path. What most users read first.
//
//   auto tab = rope::get_table<float>(spec, max_positions);           // once (cold path)
//   rope::status st = rope::apply<float, 128>(*tab, q_rows, positions); // every token, layer
//
// Data. A rope::heads_view<T> describes n_tokens x n_heads rows of head_dim elements with
// element strides between tokens and between heads (the inner stride is 1). [T, H, D] packed
// is token_stride = H*D, head_stride = D; [H, T, D] is head_stride = T*D, token_stride = D.
// Each token has one position (int32 or int64, any values: KV-cache decode, packed
// sequences). The first rotary_dim elements of each row are rotated (layout and frequencies
// come from the table); elements [rotary_dim, head_dim) are left untouched in place and
// copied bit for bit out of place.
//
// Contract. Every function here is noexcept, allocates nothing and takes no lock. Every
// argument is validated before the first write: on an error the status says what is wrong
// and no output element has changed. Zero tokens or zero heads is a successful no-op.
// Aliasing: out may be exactly in (same pointer, same shape and strides: in place); any other
// shared element between an output and any input or other output is refused. Tensors whose
// rows interleave without sharing elements (q, k and v in one fused [T, Hq+2Hk, D] buffer) are
// fine. In place and out of
// place give bitwise identical results. Alignment: none required.
//
// Accuracy (float): |out - exact| <= 3 * 2^-24 * r per element, r the pair's norm times the
// table's attention factor (pairs of normal floats; README "Accuracy contract"), at every
// position the table covers, because table entries are correctly formed in double (see
// rope/table.hpp) and the kernel rounds at most twice (rope/arch/scalar.hpp). 16-bit outputs
// (fp16, bf16, from any input type): within 1 ulp of the exact result correctly rounded, by a
// correction from the table's low parts (rope/arch/scalar.hpp; fp16 for A r < 2^19, bf16 down
// to 2^-35 r, within 1 ulp + 6.4 * 2^-48 r below it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rope/arch/avx2.hpp"
#include "rope/arch/avx512.hpp"
#include "rope/arch/neon.hpp"
#include "rope/arch/scalar.hpp"
#include "rope/fwd.hpp"
#include "rope/isa.hpp"
#include "rope/spec.hpp"
#include "rope/storage.hpp"
#include "rope/table.hpp"

ROPE_BEGIN_NAMESPACE

/// Dim = dynamic: the rotary dimension is taken from the table at run time.
inline constexpr std::size_t dynamic = 0;

/// n_tokens x n_heads rows of head_dim elements of type T (const T for inputs).
template <class T>
struct heads_view {
  T* data = nullptr;
  std::ptrdiff_t n_tokens = 0;
  std::ptrdiff_t n_heads = 0;
  std::ptrdiff_t head_dim = 0;
  std::ptrdiff_t token_stride = 0;  ///< elements from token t to token t+1
  std::ptrdiff_t head_stride = 0;   ///< elements from head h to head h+1

  /// A mutable view converts to a read-only one.
  template <class U = T, class = std::enable_if_t<!std::is_const<U>::value>>
  constexpr operator heads_view<const U>() const noexcept {
    return {data, n_tokens, n_heads, head_dim, token_stride, head_stride};
  }
};

/// The packed [n_tokens, n_heads, head_dim] view of data.
template <class T>
constexpr heads_view<T> packed_heads(T* data, std::ptrdiff_t n_tokens, std::ptrdiff_t n_heads,
                                     std::ptrdiff_t head_dim) noexcept {
  return {data, n_tokens, n_heads, head_dim, n_heads * head_dim, head_dim};
}

namespace detail {

template <class T>
ROPE_ALWAYS_INLINE bool empty(const heads_view<T>& v) noexcept {
  return v.n_tokens == 0 || v.n_heads == 0;
}

// a * b <= limit for non-negative a, b, without overflow. On the hot path of every call: the
// overflow builtin is a multiply and a flag test, where the portable form divides (a 64-bit
// division costs tens of cycles; a 32-head decode call is a few hundred).
constexpr bool product_fits(std::ptrdiff_t a, std::ptrdiff_t b, std::ptrdiff_t limit) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  std::ptrdiff_t p = 0;
  return !__builtin_mul_overflow(a, b, &p) && p <= limit;
#else
  return a == 0 || b <= limit / a;
#endif
}

/// Elements from a row's first element to one past the last row's end (0 when empty).
template <class T>
std::ptrdiff_t extent(const heads_view<T>& v) noexcept {
  if (empty(v)) return 0;
  const std::ptrdiff_t tok = v.n_tokens > 1 ? (v.n_tokens - 1) * v.token_stride : 0;
  return tok + (v.n_heads - 1) * v.head_stride + v.head_dim;
}

/// Checks one view against the table's rotary dim; does not look at other views.
template <class T>
ROPE_ALWAYS_INLINE status check_view(const heads_view<T>& v, std::ptrdiff_t rotary_dim) noexcept {
  if (v.n_tokens < 0 || v.n_heads < 0 || v.head_dim < 0) return status::bad_dimension;
  if (empty(v)) return status::ok;
  if (v.data == nullptr) return status::null_pointer;
  if (v.head_dim < rotary_dim) return status::bad_dimension;
  if (v.head_stride < v.head_dim || v.token_stride < 0) return status::bad_stride;
  const std::ptrdiff_t limit = PTRDIFF_MAX / static_cast<std::ptrdiff_t>(sizeof(T)) / 4;
  // The whole view must be addressable: bounds every product below.
  if (!product_fits(v.n_heads - 1, v.head_stride, limit) || v.head_dim > limit)
    return status::bad_stride;
  const std::ptrdiff_t head_block = (v.n_heads - 1) * v.head_stride + v.head_dim;
  if (v.n_tokens > 1) {
    const std::ptrdiff_t ts = v.token_stride;
    if (ts < v.head_dim || !product_fits(v.n_tokens - 1, ts, limit) || head_block > limit)
      return status::bad_stride;
    // Rows must not overlap: either whole tokens are apart (token-major, [T, H, D]) or whole
    // heads are (head-major, [H, T, D]).
    const bool token_major = ts >= head_block;
    const bool head_major = v.head_stride >= (v.n_tokens - 1) * ts + v.head_dim;
    if (!token_major && !head_major) return status::bad_stride;
  }
  return status::ok;
}

template <class A, class B>
bool overlap(const heads_view<A>& a, const heads_view<B>& b) noexcept {
  if (empty(a) || empty(b)) return false;
  const auto a0 = reinterpret_cast<std::uintptr_t>(a.data);
  const auto b0 = reinterpret_cast<std::uintptr_t>(b.data);
  const auto a1 = a0 + static_cast<std::uintptr_t>(extent(a)) * sizeof(A);
  const auto b1 = b0 + static_cast<std::uintptr_t>(extent(b)) * sizeof(B);
  return a0 < b1 && b0 < a1;
}

/// True when the n positions share a byte with v's address range (its extent: conservative,
/// the gaps between strided rows count). The kernels read positions[t] when they reach token t,
/// after writing earlier tokens' rows: positions inside an output could change after the check.
template <class T, class Pos>
bool positions_overlap(const heads_view<T>& v, const Pos* positions, std::ptrdiff_t n) noexcept {
  if (empty(v) || n <= 0) return false;
  const auto v0 = reinterpret_cast<std::uintptr_t>(v.data);
  const auto v1 = v0 + static_cast<std::uintptr_t>(extent(v)) * sizeof(T);
  const auto p0 = reinterpret_cast<std::uintptr_t>(positions);
  const auto p1 = p0 + static_cast<std::uintptr_t>(n) * sizeof(Pos);
  return p0 < v1 && v0 < p1;
}

/// True when every row of v (token t, head h) starts at v.data + m * step bytes for some
/// integer m: the head stride (with more than one head) and the token stride (with more than
/// one token) are multiples of step.
template <class T>
bool rows_on_lattice(const heads_view<T>& v, std::intptr_t step) noexcept {
  const auto size = static_cast<std::intptr_t>(sizeof(T));
  return (v.n_heads <= 1 || (static_cast<std::intptr_t>(v.head_stride) * size) % step == 0) &&
         (v.n_tokens <= 1 || (static_cast<std::intptr_t>(v.token_stride) * size) % step == 0);
}

/// The byte step of v's rows worth trying as a common lattice: its head stride, else (one head)
/// its token stride, else 0 (one row).
template <class T>
std::intptr_t row_step(const heads_view<T>& v) noexcept {
  const auto size = static_cast<std::intptr_t>(sizeof(T));
  if (v.n_heads > 1) return static_cast<std::intptr_t>(v.head_stride) * size;
  if (v.n_tokens > 1) return static_cast<std::intptr_t>(v.token_stride) * size;
  return 0;
}

/// True when no element of a's rows is an element of b's rows. Beyond disjoint address
/// ranges this accepts the fused layouts engines use for q, k and v (conservatively: both
/// tests below are sufficient, not necessary):
///  - token period: the same number of tokens and the same token stride (in bytes), each
///    token's block of heads inside one token period, and b's block sitting in the gap after
///    a's (or a's after b's) within every period ([T, 3, H, D], q|k|v per token);
///  - row lattice: every row of both views starts on one arithmetic progression of byte step
///    P (a head stride, or a token stride with one head), and b's rows sit in the gap after
///    a's rows within every step ([T, H, 3, D], GPT-NeoX's fused qkv: P = 3 * D elements).
template <class A, class B>
bool rows_disjoint(const heads_view<A>& a, const heads_view<B>& b) noexcept {
  if (!overlap(a, b)) return true;
  const std::intptr_t delta = reinterpret_cast<std::intptr_t>(b.data) - reinterpret_cast<std::intptr_t>(a.data);
  if (a.n_tokens == b.n_tokens && a.n_tokens >= 2) {
    const auto ts =
        static_cast<std::intptr_t>(a.token_stride) * static_cast<std::intptr_t>(sizeof(A));
    const auto block_a = static_cast<std::intptr_t>(((a.n_heads - 1) * a.head_stride + a.head_dim) *
                                                    static_cast<std::ptrdiff_t>(sizeof(A)));
    const auto block_b = static_cast<std::intptr_t>(((b.n_heads - 1) * b.head_stride + b.head_dim) *
                                                    static_cast<std::ptrdiff_t>(sizeof(B)));
    if (ts == static_cast<std::intptr_t>(b.token_stride) * static_cast<std::intptr_t>(sizeof(B)) &&
        block_a <= ts && block_b <= ts) {
      const std::intptr_t r = ((delta % ts) + ts) % ts;  // b's block offset within a's period
      if (r >= block_a && r + block_b <= ts) return true;
    }
  }
  const auto row_a = static_cast<std::intptr_t>(a.head_dim) * static_cast<std::intptr_t>(sizeof(A));
  const auto row_b = static_cast<std::intptr_t>(b.head_dim) * static_cast<std::intptr_t>(sizeof(B));
  for (const std::intptr_t step : {row_step(a), row_step(b)}) {
    if (step <= 0 || !rows_on_lattice(a, step) || !rows_on_lattice(b, step)) continue;
    const std::intptr_t r = ((delta % step) + step) % step;  // b's rows' offset within a step
    if (r >= row_a && r + row_b <= step) return true;
  }
  return false;
}

template <class A, class B>
ROPE_ALWAYS_INLINE bool same_rows(const heads_view<A>& a, const heads_view<B>& b) noexcept {
  return std::is_same<std::remove_const_t<A>, std::remove_const_t<B>>::value &&
         static_cast<const void*>(a.data) == static_cast<const void*>(b.data) &&
         a.n_tokens == b.n_tokens && a.n_heads == b.n_heads && a.head_dim == b.head_dim &&
         (a.n_tokens <= 1 || a.token_stride == b.token_stride) &&
         (a.n_heads <= 1 || a.head_stride == b.head_stride);
}

/// in -> out: both views valid, same shape, and either the same rows (in place) or disjoint.
/// (TIn may be const or not: the in-place overloads pass their one view as both.)
template <class TIn, class TOut>
ROPE_ALWAYS_INLINE status check_pair(const heads_view<TIn>& in, const heads_view<TOut>& out,
                                     std::ptrdiff_t rotary_dim) noexcept {
  if (status st = check_view(in, rotary_dim); st != status::ok) return st;
  if (std::is_same<std::remove_const_t<TIn>, std::remove_const_t<TOut>>::value &&
      static_cast<const void*>(in.data) == static_cast<const void*>(out.data) &&
      in.n_tokens == out.n_tokens && in.n_heads == out.n_heads && in.head_dim == out.head_dim &&
      in.token_stride == out.token_stride && in.head_stride == out.head_stride)
    return status::ok;  // in place through one view: out is the view just checked
  if (status st = check_view(out, rotary_dim); st != status::ok) return st;
  if (in.n_tokens != out.n_tokens || in.n_heads != out.n_heads || in.head_dim != out.head_dim)
    return status::bad_dimension;
  if (!same_rows(in, out) && !rows_disjoint(in, out)) return status::overlapping_buffers;
  return status::ok;
}

template <class Pos>
ROPE_ALWAYS_INLINE status check_positions(const Pos* positions, std::ptrdiff_t n, std::int64_t length) noexcept {
  static_assert(std::is_integral<Pos>::value && std::is_signed<Pos>::value,
                "positions are signed integers (int32_t or int64_t)");
  if (n == 0) return status::ok;
  if (positions == nullptr) return status::null_pointer;
  for (std::ptrdiff_t t = 0; t < n; ++t) {
    const std::int64_t p = static_cast<std::int64_t>(positions[t]);
    if (p < 0 || p >= length) return status::position_out_of_range;
  }
  return status::ok;
}

template <std::size_t Dim, class Real>
status check_table(const table<Real>& tab) noexcept {
  static_assert(Dim % 2 == 0 && Dim <= static_cast<std::size_t>(max_rotary_dim),
                "Dim (the rotary dim) must be even and <= rope::max_rotary_dim");
  if (Dim != 0 && static_cast<std::size_t>(tab.rotary_dim()) != Dim) return status::bad_dimension;
  return status::ok;
}

// v, read into a register on its own. The views arrive in memory the caller has just written
// field by field; GCC's SLP vectorizer would otherwise copy two adjacent fields with one
// 16-byte load, which cannot be forwarded from two 8-byte stores still in flight and waits
// for them to retire (on Zen 4, 5.7% of a 32-head D = 80 decode call went there).
ROPE_ALWAYS_INLINE std::size_t scalar_field(std::ptrdiff_t v) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __asm__("" : "+r"(v));
#endif
  return static_cast<std::size_t>(v);
}

template <class TIn, class TOut, class Pos>
ROPE_ALWAYS_INLINE job<std::remove_const_t<TIn>, TOut, Pos> make_job(
    const heads_view<TIn>& in, const heads_view<TOut>& out, const Pos* positions) noexcept {
  return {in.data,
          out.data,
          scalar_field(in.n_tokens),
          scalar_field(in.n_heads),
          scalar_field(in.token_stride),
          scalar_field(in.head_stride),
          scalar_field(out.token_stride),
          scalar_field(out.head_stride),
          scalar_field(in.head_dim),
          positions,
          !same_rows(in, out)};
}

// The kernels of one path, as a type (no lambdas: GCC would not give them the target).
struct scalar_kernels {
  static constexpr isa id = isa::scalar;
  template <std::size_t Dim, layout L, bool Inv, bool Correct, class Real, class TIn, class TOut,
            class Pos>
  static void run(const table<Real>& tab, const job<TIn, TOut, Pos>& jb) noexcept {
    arch::scalar::run<Dim, L, Inv, Correct>(tab, jb);
  }
};
#if ROPE_X86
struct avx2_kernels {
  static constexpr isa id = isa::avx2;
  template <std::size_t Dim, layout L, bool Inv, bool Correct, class Real, class TIn, class TOut,
            class Pos>
  static void run(const table<Real>& tab, const job<TIn, TOut, Pos>& jb) noexcept {
    arch::avx2::run<Dim, L, Inv, Correct>(tab, jb);
  }
};
struct avx512_kernels {
  static constexpr isa id = isa::avx512;
  template <std::size_t Dim, layout L, bool Inv, bool Correct, class Real, class TIn, class TOut,
            class Pos>
  static void run(const table<Real>& tab, const job<TIn, TOut, Pos>& jb) noexcept {
    arch::avx512::run<Dim, L, Inv, Correct>(tab, jb);
  }
};
#endif
#if ROPE_NEON
struct neon_kernels {
  static constexpr isa id = isa::neon;
  template <std::size_t Dim, layout L, bool Inv, bool Correct, class Real, class TIn, class TOut,
            class Pos>
  static void run(const table<Real>& tab, const job<TIn, TOut, Pos>& jb) noexcept {
    arch::neon::run<Dim, L, Inv, Correct>(tab, jb);
  }
};
#endif

#if defined(ROPE_TEST_COUNT_DISPATCH)
/// Test hook: calls per path (index: the isa value). Only with ROPE_TEST_COUNT_DISPATCH.
inline std::atomic<unsigned long> isa_calls[5];
#endif

/// Whether the vector kernels handle these types: float compute with float/fp16/bf16 storage
/// on both sides, or double with double. Anything else (a user type without a format) runs
/// the scalar path.
template <class Real, class TIn, class TOut>
constexpr bool vector_types() noexcept {
  constexpr storage_format fi = format_of_v<TIn>, fo = format_of_v<TOut>;
  if constexpr (std::is_same<Real, float>::value)
    return (fi == storage_format::f32 || fi == storage_format::fp16 ||
            fi == storage_format::bf16) &&
           (fo == storage_format::f32 || fo == storage_format::fp16 || fo == storage_format::bf16);
  else
    return std::is_same<Real, double>::value && fi == storage_format::f64 &&
           fo == storage_format::f64;
}

/// Runs a validated job on kernels K with the layout and direction turned into template
/// arguments (Correct: the 16-bit correction, rounding::accurate).
template <class K, std::size_t Dim, bool Correct, class Real, class TIn, class TOut, class Pos>
void run_layout(const table<Real>& tab, const job<TIn, TOut, Pos>& jb, direction dir) noexcept {
  const bool inv = dir == direction::inverse;
  if (tab.layout() == layout::interleaved) {
    if (inv) K::template run<Dim, layout::interleaved, true, Correct>(tab, jb);
    else K::template run<Dim, layout::interleaved, false, Correct>(tab, jb);
  } else {
    if (inv) K::template run<Dim, layout::half_split, true, Correct>(tab, jb);
    else K::template run<Dim, layout::half_split, false, Correct>(tab, jb);
  }
}

/// run_layout with the rounding turned into a template argument where it matters (a float
/// result stored as fp16 or bf16); other outputs have one kernel.
template <class K, std::size_t Dim, class Real, class TIn, class TOut, class Pos>
void run_with(const table<Real>& tab, const job<TIn, TOut, Pos>& jb, direction dir,
              rounding rnd) noexcept {
#if defined(ROPE_TEST_COUNT_DISPATCH)
  isa_calls[static_cast<int>(K::id)].fetch_add(1, std::memory_order_relaxed);
#endif
  if constexpr (precise_store<Real, TOut>()) {
    if (rnd == rounding::fast) {
      run_layout<K, Dim, false>(tab, jb, dir);
      return;
    }
  } else {
    static_cast<void>(rnd);
  }
  run_layout<K, Dim, true>(tab, jb, dir);
}

/// Compile-time dispatch: the best path the compiler's flags allow, inlined.
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos>
void run_static(const table<Real>& tab, const job<TIn, TOut, Pos>& jb, direction dir,
                rounding rnd) noexcept {
  if constexpr (!vector_types<Real, TIn, TOut>() || compiled_isa() == isa::scalar) {
    run_with<scalar_kernels, Dim>(tab, jb, dir, rnd);
  } else {
#if ROPE_X86
    if constexpr (compiled_isa() == isa::avx512) run_with<avx512_kernels, Dim>(tab, jb, dir, rnd);
    else run_with<avx2_kernels, Dim>(tab, jb, dir, rnd);
#elif ROPE_NEON
    run_with<neon_kernels, Dim>(tab, jb, dir, rnd);
#endif
  }
}

/// Runtime dispatch: the path probed once (or forced) and cached (rope/isa.hpp), then one
/// indirect call into that path's kernels, which are instantiated whole (not inlined into a
/// switch next to the other paths', where their registers would be allocated together).
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos>
void run_dispatched(const table<Real>& tab, const job<TIn, TOut, Pos>& jb, direction dir,
                    rounding rnd) noexcept {
  if constexpr (!vector_types<Real, TIn, TOut>()) {
    run_with<scalar_kernels, Dim>(tab, jb, dir, rnd);
  } else {
    using kernel_fn =
        void (*)(const table<Real>&, const job<TIn, TOut, Pos>&, direction, rounding) noexcept;
    kernel_fn f = &run_with<scalar_kernels, Dim, Real, TIn, TOut, Pos>;
    switch (dispatched_isa()) {
#if ROPE_X86
      case isa::avx512: f = &run_with<avx512_kernels, Dim, Real, TIn, TOut, Pos>; break;
      case isa::avx2: f = &run_with<avx2_kernels, Dim, Real, TIn, TOut, Pos>; break;
#endif
#if ROPE_NEON
      case isa::neon: f = &run_with<neon_kernels, Dim, Real, TIn, TOut, Pos>; break;
#endif
      default: break;
    }
    f(tab, jb, dir, rnd);
  }
}

/// Runs a validated job with a compile-time Dim (0: the rotary dim read from the table) on the
/// active path (compile-time or runtime dispatch, rope/isa.hpp).
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos>
void run_fixed(const table<Real>& tab, const job<TIn, TOut, Pos>& jb, direction dir,
               rounding rnd) noexcept {
#if defined(ROPE_RUNTIME_DISPATCH)
  run_dispatched<Dim>(tab, jb, dir, rnd);
#else
  run_static<Dim>(tab, jb, dir, rnd);
#endif
}

template <std::size_t... Dims>
struct dim_list {};

/// The rotary dims that a Dim = rope::dynamic call runs on the kernels compiled for that dim
/// (ROPE_DYNAMIC_DIMS, a comma-separated list; default 64, 80, 96, 128, 256, the head dims
/// benchmarked); other dims take the kernels for a run-time dim. Only the compiled ones run
/// each row as straight-line code; both hold the table row in registers and run out-of-place
/// jobs backwards where that avoids 4K aliasing (rope/arch/detail/kernel_body.inc). For
/// these five dims the run-time kernels take 1.0-1.3x the time of Dim = D (up to 1.6x, D = 80
/// half-split in place; apply_bench's "Dim = rope::dynamic" table built with the list empty),
/// the listed ones 0.94-1.24x (noise and one more call). The bits are the same either way. Each dim
/// listed adds its kernels to every program that calls rope::apply with rope::dynamic (a few
/// seconds of compile time per translation unit); define ROPE_DYNAMIC_DIMS empty to keep only
/// the run-time ones.
#ifndef ROPE_DYNAMIC_DIMS
#define ROPE_DYNAMIC_DIMS 64, 80, 96, 128, 256
#endif
using dynamic_dims = dim_list<ROPE_DYNAMIC_DIMS>;

// Out of line: inlined into the caller next to the caller's rows, the kernels of every listed
// dim were seen writing past a short row (e.g. a one-vector call on an 80-element array) in
// branches that never run for it, and GCC's -Warray-bounds reported them. One call more per
// dynamic call.
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos>
ROPE_NOINLINE void run_listed(const table<Real>& tab, const job<TIn, TOut, Pos>& jb, direction dir,
                              rounding rnd) noexcept {
  run_fixed<Dim>(tab, jb, dir, rnd);
}

template <class Real, class TIn, class TOut, class Pos, std::size_t... Dims>
void run_dynamic(dim_list<Dims...>, const table<Real>& tab, const job<TIn, TOut, Pos>& jb,
                 direction dir, rounding rnd) noexcept {
  static_assert(((Dims % 2 == 0 && Dims > 0 && Dims <= static_cast<std::size_t>(max_rotary_dim)) && ...),
                "ROPE_DYNAMIC_DIMS: even rotary dims in [2, rope::max_rotary_dim]");
  const auto d = static_cast<std::size_t>(tab.rotary_dim());
  const bool done = ((d == Dims ? (run_listed<Dims>(tab, jb, dir, rnd), true) : false) || ...);
  if (!done) run_fixed<0>(tab, jb, dir, rnd);
}

/// Runs a validated job: with Dim = 0 (rope::dynamic) and types the vector paths take, through
/// the listed dims' kernels when the table's rotary dim is one of them (run_dynamic).
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos>
void run(const table<Real>& tab, const job<TIn, TOut, Pos>& jb, direction dir,
         rounding rnd) noexcept {
  if constexpr (Dim == 0 && vector_types<Real, TIn, TOut>())
    run_dynamic(dynamic_dims{}, tab, jb, dir, rnd);
  else
    run_fixed<Dim>(tab, jb, dir, rnd);
}

// A direction or rounding made from an integer outside the enumeration (a cast, a field read
// from a config) is refused: before this check, any direction but inverse ran forward and any
// rounding but fast ran accurate, silently. Checked first; where dir and rnd are constants at
// the call, as they usually are, the compiler drops the check.
constexpr status check_options(direction dir, rounding rnd) noexcept {
  return (dir == direction::forward || dir == direction::inverse) &&
                 (rnd == rounding::accurate || rnd == rounding::fast)
             ? status::ok
             : status::bad_option;
}

// The bodies of the public overloads. Views go by const reference all the way down, from the
// caller's own view to the fields' loads here; the overloads call these, never one another.
// A view passed by value is copied as a block (GCC: 32-byte vector moves) into the argument
// slot at every call, and this code's 8-byte loads of its fields then wait on those stores:
// with views kept in memory across calls (built once per batch, used per layer), by value cost
// 6-9 ns a call (D = 64 decode out of place, standalone: 41 vs 33 ns at 8 heads, 97 vs 89 at
// 32). Where a view's fields were just stored one by one, a by-value forward's block load could
// not be store-forwarded at all (measured: 10 ns of a 27 ns one-head call). TIn may be const
// or not (in place passes one view as in and out).
template <std::size_t Dim, class Real, class TIn, class TOut, class Pos>
status apply_views(const table<Real>& tab, const heads_view<TIn>& in, const heads_view<TOut>& out,
                   const Pos* positions, direction dir, rounding rnd) noexcept {
  if (status st = check_options(dir, rnd); st != status::ok) return st;
  if (status st = check_table<Dim>(tab); st != status::ok) return st;
  if (status st = check_pair(in, out, tab.rotary_dim()); st != status::ok) return st;
  if (empty(in)) return status::ok;
  if (status st = check_positions(positions, in.n_tokens, tab.length()); st != status::ok)
    return st;
  if (positions_overlap(out, positions, in.n_tokens)) return status::overlapping_buffers;
  run<Dim>(tab, make_job(in, out, positions), dir, rnd);
  return status::ok;
}

template <std::size_t Dim, class Real, class TIn, class TQOut, class TKOut, class Pos>
status apply_qk_views(const table<Real>& tab, const heads_view<TIn>& q_in,
                      const heads_view<TQOut>& q_out, const heads_view<TIn>& k_in,
                      const heads_view<TKOut>& k_out, const Pos* positions, direction dir,
                      rounding rnd) noexcept {
  if (status st = check_options(dir, rnd); st != status::ok) return st;
  if (status st = check_table<Dim>(tab); st != status::ok) return st;
  const std::ptrdiff_t d = tab.rotary_dim();
  if (status st = check_pair(q_in, q_out, d); st != status::ok) return st;
  if (status st = check_pair(k_in, k_out, d); st != status::ok) return st;
  if (!empty(q_in) && !empty(k_in) && q_in.n_tokens != k_in.n_tokens)
    return status::bad_dimension;
  if (!rows_disjoint(q_out, k_out) || !rows_disjoint(q_out, k_in) || !rows_disjoint(k_out, q_in))
    return status::overlapping_buffers;
  const std::ptrdiff_t n = empty(q_in) ? (empty(k_in) ? 0 : k_in.n_tokens) : q_in.n_tokens;
  if (n == 0) return status::ok;
  if (status st = check_positions(positions, n, tab.length()); st != status::ok) return st;
  if (positions_overlap(q_out, positions, n) || positions_overlap(k_out, positions, n))
    return status::overlapping_buffers;
  if (!empty(q_in)) run<Dim>(tab, make_job(q_in, q_out, positions), dir, rnd);
  if (!empty(k_in)) run<Dim>(tab, make_job(k_in, k_out, positions), dir, rnd);
  return status::ok;
}

// The storage type of two input views whose own types the call deduces, where at least one of
// them is mutable (q rotated in place is a heads_view<float>, k read from an activation buffer
// often a heads_view<const float>): their common type without const, else no such overload.
// Two const inputs are deduced by the overloads taking heads_view<const T>.
template <class QIn, class KIn>
using deduced_input_t =
    std::enable_if_t<std::is_same<std::remove_const_t<QIn>, std::remove_const_t<KIn>>::value &&
                         !(std::is_const<QIn>::value && std::is_const<KIn>::value),
                     std::remove_const_t<QIn>>;

}  // namespace detail

/// Rotates in -> out (out-of-place; or in place when out is the same rows as in), token t at
/// positions[t]. T is the storage type; the table type is compute_type_t<T> (float for float).
/// TOut may differ from T when both compute in the same type (e.g. float in, rope::float16 or
/// rope::bfloat16 out, straight into a KV cache); the result is computed in compute_type_t<T>
/// and rounded once on store (16-bit outputs with the low-part correction, rope/arch/scalar.hpp,
/// unless rnd is rounding::fast: see rope::rounding).
template <class T, std::size_t Dim = dynamic, class TOut, class Pos>
[[nodiscard]] status apply(const table<compute_type_t<T>>& tab, const heads_view<const T>& in,
                           const heads_view<TOut>& out, const Pos* positions,
                           direction dir = direction::forward,
                           rounding rnd = rounding::accurate) noexcept {
  return detail::apply_views<Dim>(tab, in, out, positions, dir, rnd);
}

/// Out of place from a mutable input view (heads_view<float>, not heads_view<const float>),
/// its storage type deduced: `rope::apply(tab, in, out, positions)` is the call above with
/// T = TIn. Name T to choose a compile-time Dim (`rope::apply<float, 128>`).
template <class TIn, class TOut, class Pos,
          std::enable_if_t<!std::is_const<TIn>::value, int> = 0>
[[nodiscard]] status apply(const table<compute_type_t<TIn>>& tab, const heads_view<TIn>& in,
                           const heads_view<TOut>& out, const Pos* positions,
                           direction dir = direction::forward,
                           rounding rnd = rounding::accurate) noexcept {
  return detail::apply_views<dynamic>(tab, heads_view<const TIn>(in), out, positions, dir, rnd);
}

/// In place: rotates the rows of x, token t at positions[t].
template <class T, std::size_t Dim = dynamic, class Pos>
[[nodiscard]] status apply(const table<compute_type_t<T>>& tab, const heads_view<T>& x,
                           const Pos* positions, direction dir = direction::forward,
                           rounding rnd = rounding::accurate) noexcept {
  return detail::apply_views<Dim>(tab, x, x, positions, dir, rnd);
}

/// Queries and keys out of place (or in place per tensor when out is in). Every output must be
/// disjoint from every other tensor except its own input (exact aliasing). q and k may be
/// written to different types: e.g. float queries rotated in place (q_out the rows of q_in) and
/// keys rounded once into an fp16 or bf16 KV cache, both validated before either is written.
template <class T, std::size_t Dim = dynamic, class TQOut, class TKOut, class Pos>
[[nodiscard]] status apply_qk(const table<compute_type_t<T>>& tab, const heads_view<const T>& q_in,
                              const heads_view<TQOut>& q_out, const heads_view<const T>& k_in,
                              const heads_view<TKOut>& k_out, const Pos* positions,
                              direction dir = direction::forward,
                              rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_views<Dim>(tab, q_in, q_out, k_in, k_out, positions, dir, rnd);
}

/// Out of place with the storage type deduced from input views of which one or both are mutable
/// (e.g. `rope::apply_qk(tab, q, q, k_const, k_cache, positions)`: queries in place, keys from a
/// read-only buffer into a cache); both inputs of one storage type.
template <class QIn, class TQOut, class KIn, class TKOut, class Pos,
          class T = detail::deduced_input_t<QIn, KIn>>
[[nodiscard]] status apply_qk(const table<compute_type_t<T>>& tab, const heads_view<QIn>& q_in,
                              const heads_view<TQOut>& q_out, const heads_view<KIn>& k_in,
                              const heads_view<TKOut>& k_out, const Pos* positions,
                              direction dir = direction::forward,
                              rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_views<dynamic>(tab, heads_view<const T>(q_in), q_out,
                                         heads_view<const T>(k_in), k_out, positions, dir, rnd);
}

/// Queries and keys of one batch in one call (grouped-query attention: their own head counts
/// and strides), in place, token t at positions[t] for both. Both are validated before
/// either is written; q and k must not overlap.
template <class T, std::size_t Dim = dynamic, class Pos>
[[nodiscard]] status apply_qk(const table<compute_type_t<T>>& tab, const heads_view<T>& q,
                              const heads_view<T>& k, const Pos* positions,
                              direction dir = direction::forward,
                              rounding rnd = rounding::accurate) noexcept {
  return detail::apply_qk_views<Dim>(tab, q, q, k, k, positions, dir, rnd);
}

/// One head vector at one position, in place: rotates x[0, rotary_dim).
template <class T, std::size_t Dim = dynamic>
[[nodiscard]] status apply(const table<compute_type_t<T>>& tab, std::int64_t position, T* x,
                           direction dir = direction::forward,
                           rounding rnd = rounding::accurate) noexcept {
  const std::ptrdiff_t d = tab.rotary_dim();
  const heads_view<T> v{x, 1, 1, d, d, d};
  return detail::apply_views<Dim>(tab, v, v, &position, dir, rnd);
}

/// One head vector at one position, out of place: out[0, rotary_dim) rotated, out[rotary_dim,
/// head_dim) copied bit for bit.
template <class T, std::size_t Dim = dynamic, class TOut>
[[nodiscard]] status apply(const table<compute_type_t<T>>& tab, std::int64_t position,
                           const T* in, TOut* out, std::ptrdiff_t head_dim,
                           direction dir = direction::forward,
                           rounding rnd = rounding::accurate) noexcept {
  const heads_view<const T> vin{in, 1, 1, head_dim, head_dim, head_dim};
  const heads_view<TOut> vout{out, 1, 1, head_dim, head_dim, head_dim};
  return detail::apply_views<Dim>(tab, vin, vout, &position, dir, rnd);
}

ROPE_END_NAMESPACE  // rope
