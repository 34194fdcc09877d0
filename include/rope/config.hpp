// rope/config.hpp: configuration macros and the cold-path error mechanism.
//
// The hot path (rope::apply and friends) never throws: it returns a rope::status. The cold path
// (validating a spec, building a table) reports bad input by throwing std::invalid_argument or
// std::out_of_range whose message names the parameter and its value. In a build without
// exceptions (-fno-exceptions) the same message goes to the handler installed with
// rope::set_error_handler, which must not return (the default prints and calls std::abort).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

/// 1 when cold-path errors are thrown as exceptions, 0 when they go to the handler installed
/// with rope::set_error_handler. Detected from the compiler's exception setting; define it
/// to 0 or 1 before including rope to override.
#if !defined(ROPE_HAS_EXCEPTIONS)
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define ROPE_HAS_EXCEPTIONS 1
#else
#define ROPE_HAS_EXCEPTIONS 0
#endif
#endif

/// For the few small functions the kernels call per token (a table row's address): inlined
/// even into the runtime-dispatched kernels, whose target attribute otherwise keeps GCC from
/// inlining a function compiled for the baseline target (a call per token, 2% of a decode).
#if defined(__GNUC__) || defined(__clang__)
#define ROPE_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ROPE_ALWAYS_INLINE inline
#endif

/// For the compact table's row formation (a loop per token, called from every kernel): kept
/// out of line so that each kernel stays its hot loop. Inlined, it made a -march=native kernel
/// four times as long and its decode 2-9% slower than the same kernel built for runtime
/// dispatch, where the target attribute kept it out of line.
#if defined(__GNUC__) || defined(__clang__)
#define ROPE_NOINLINE __attribute__((noinline))
#else
#define ROPE_NOINLINE
#endif

/// Before a loop whose trip count is a compile-time constant (a held table row's vectors):
/// unrolled whole at every optimization level. At -O2 GCC keeps such a loop rolled, so the
/// row's vectors live in a stack array and every vector of every head loads its table values
/// again (measured: a 32-head D = 64 decode took 1.7x as long at -O2 as at -O3).
#if defined(__GNUC__) || defined(__clang__)
#define ROPE_UNROLL _Pragma("GCC unroll 64")
#else
#define ROPE_UNROLL
#endif

/// A hint that the 64-byte line at p will be read and written soon (see detail::prefetch_row in
/// the kernels); nothing where the compiler has no prefetch builtin.
#if defined(__GNUC__) || defined(__clang__)
#define ROPE_PREFETCH_RW(p) __builtin_prefetch((p), 1, 3)
#else
#define ROPE_PREFETCH_RW(p) static_cast<void>(p)
#endif

// The build-mode namespace. Every rope name is declared inside an inline namespace of rope whose
// name spells how this file is compiled: the dispatch mode (ROPE_RUNTIME_DISPATCH), the target's
// ISA flags that change the code of the kernels or of anything the compiler may vectorize (on x86:
// SSE2/SSE3/SSSE3/SSE4.1, AVX, AVX2, FMA, F16C, AVX512F/BW/DQ/VL, AVX512_BF16, AVX512_FP16; on
// AArch64: SVE, SVE2 and a fixed SVE vector length), exceptions on or off, and -ffast-math. Code
// still says rope::apply. Without it, a file built with -march=native and one built for runtime
// dispatch (or with other -m flags) emit the same weak symbols (rope::apply<...>, the kernels): the
// linker keeps one copy for the whole program, and the other file can then run instructions its CPU
// lacks (a -march=native copy of the AVX-512 kernels uses vcvtne2ps2bf16, which an AVX-512 CPU
// without AVX512_BF16 faults on, though runtime dispatch chose avx512 for it). Files built the same
// way share one namespace, so one table cache; differently built files each have their own, and a
// rope type from one is another type in the other (a link error where a rope type is in a
// function's signature; a struct holding one, built both ways, is an ODR violation the linker does
// not see). It protects rope's own symbols only: a user's inline function or template that calls
// rope is still one symbol for both files. Users name the enclosing namespace (rope::table<float>;
// `namespace rope { template <> struct storage_traits<T> ... }` specializes the traits); forward
// declarations of rope names must come from rope/fwd.hpp, since a `namespace rope { class ...; }`
// of one's own declares another entity.
//
// Each field is a digit (0 = absent), so no user macro can change the spelling: only the
// literal prefix (ct_ or rt_) and the pasted result are tokens the preprocessor sees as names.
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#if defined(__SSE4_1__)
#define ROPE_ABI_SSE_ 4
#elif defined(__SSSE3__)
#define ROPE_ABI_SSE_ 3
#elif defined(__SSE3__)
#define ROPE_ABI_SSE_ 2
#elif defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#define ROPE_ABI_SSE_ 1
#else
#define ROPE_ABI_SSE_ 0
#endif
#if defined(__AVX__)
#define ROPE_ABI_AVX_ 1
#else
#define ROPE_ABI_AVX_ 0
#endif
#if defined(__AVX2__)
#define ROPE_ABI_AVX2_ 1
#else
#define ROPE_ABI_AVX2_ 0
#endif
#if defined(__FMA__) && defined(__F16C__)
#define ROPE_ABI_FMA_ 1
#elif defined(__FMA__)
#define ROPE_ABI_FMA_ 2
#elif defined(__F16C__)
#define ROPE_ABI_FMA_ 3
#else
#define ROPE_ABI_FMA_ 0
#endif
// AVX-512: one digit each for F, BW, DQ and VL.
#if defined(__AVX512F__)
#define ROPE_ABI_512F_ 1
#else
#define ROPE_ABI_512F_ 0
#endif
#if defined(__AVX512BW__)
#define ROPE_ABI_512BW_ 1
#else
#define ROPE_ABI_512BW_ 0
#endif
#if defined(__AVX512DQ__)
#define ROPE_ABI_512DQ_ 1
#else
#define ROPE_ABI_512DQ_ 0
#endif
#if defined(__AVX512VL__)
#define ROPE_ABI_512VL_ 1
#else
#define ROPE_ABI_512VL_ 0
#endif
#if defined(__AVX512BF16__) && defined(__AVX512FP16__)
#define ROPE_ABI_16_ 3
#elif defined(__AVX512FP16__)
#define ROPE_ABI_16_ 2
#elif defined(__AVX512BF16__)
#define ROPE_ABI_16_ 1
#else
#define ROPE_ABI_16_ 0
#endif
// x86: x, then SSE level, AVX, AVX2, FMA/F16C, AVX-512 F, BW, DQ, VL, AVX-512 16-bit.
#define ROPE_ABI_ISA_(P, E, X) P##x##E##_e##X
#define ROPE_ABI_FLAGS_                                                                         \
  ROPE_ABI_JOIN9_(ROPE_ABI_SSE_, ROPE_ABI_AVX_, ROPE_ABI_AVX2_, ROPE_ABI_FMA_, ROPE_ABI_512F_, \
                  ROPE_ABI_512BW_, ROPE_ABI_512DQ_, ROPE_ABI_512VL_, ROPE_ABI_16_)
#elif defined(__aarch64__) || defined(_M_ARM64)
#if defined(__ARM_FEATURE_SVE2)
#define ROPE_ABI_SVE_ 2
#elif defined(__ARM_FEATURE_SVE)
#define ROPE_ABI_SVE_ 1
#else
#define ROPE_ABI_SVE_ 0
#endif
// A fixed SVE vector length (-msve-vector-bits=N) changes the code too.
#if defined(__ARM_FEATURE_SVE_BITS)
#define ROPE_ABI_SVEB_ __ARM_FEATURE_SVE_BITS
#else
#define ROPE_ABI_SVEB_ 0
#endif
// AArch64: a, then SVE, then the fixed SVE length in bits or 0 (NEON is always there).
#define ROPE_ABI_ISA_(P, E, X) P##a##E##_e##X
#define ROPE_ABI_FLAGS_ ROPE_ABI_JOINSVE_(ROPE_ABI_SVE_, ROPE_ABI_SVEB_)
#else
// Any other target: n (rope runs its scalar path there).
#define ROPE_ABI_ISA_(P, E, X) P##n##E##_e##X
#define ROPE_ABI_FLAGS_ 0
#endif
#define ROPE_ABI_JOINSVEI_(a, b) a##_##b
#define ROPE_ABI_JOINSVE_(a, b) ROPE_ABI_JOINSVEI_(a, b)
#define ROPE_ABI_JOIN9I_(a, b, c, d, e, f, g, h, i) a##b##c##d##e##f##g##h##i
#define ROPE_ABI_JOIN9_(a, b, c, d, e, f, g, h, i) ROPE_ABI_JOIN9I_(a, b, c, d, e, f, g, h, i)
// Whether this file is compiled with -ffast-math or the parts of it that change rope's arithmetic
// (-funsafe-math-optimizations, -fassociative-math, -ffinite-math-only; GCC and Clang).
#if defined(__FAST_MATH__) || defined(__ASSOCIATIVE_MATH__) || \
    (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#define ROPE_FAST_MATH_ 1
#else
#define ROPE_FAST_MATH_ 0
#endif
// Exceptions as a digit of our own (ROPE_HAS_EXCEPTIONS may be defined by the user as any
// expression that is true or false), plus 2 under ROPE_FAST_MATH_: such a file compiles rope's
// arithmetic differently (see detail::opaque), so it keeps its own copy too.
#if ROPE_HAS_EXCEPTIONS && ROPE_FAST_MATH_
#define ROPE_ABI_EXC_ 3
#elif ROPE_FAST_MATH_
#define ROPE_ABI_EXC_ 2
#elif ROPE_HAS_EXCEPTIONS
#define ROPE_ABI_EXC_ 1
#else
#define ROPE_ABI_EXC_ 0
#endif
#if defined(ROPE_RUNTIME_DISPATCH)
#define ROPE_ABI_JOIN2_(E, X) ROPE_ABI_ISA_(rt_, E, X)
#else
#define ROPE_ABI_JOIN2_(E, X) ROPE_ABI_ISA_(ct_, E, X)
#endif
#define ROPE_ABI_JOIN_(E, X) ROPE_ABI_JOIN2_(E, X)
/// The inline namespace's name, e.g. ct_x411111111_e1 (compile-time dispatch, -march with
/// AVX-512 and AVX512_BF16), rt_x100000000_e1 (runtime dispatch from a baseline x86-64 build) or
/// ct_a0_0_e1 (AArch64 without SVE).
#define ROPE_ABI_NAMESPACE ROPE_ABI_JOIN_(ROPE_ABI_FLAGS_, ROPE_ABI_EXC_)
/// Opens and closes namespace rope with its build-mode namespace (every rope header does).
#define ROPE_BEGIN_NAMESPACE \
  namespace rope {           \
  inline namespace ROPE_ABI_NAMESPACE {
#define ROPE_END_NAMESPACE \
  }                        \
  }

/// Rotary position embeddings: every public rope name lives here.
ROPE_BEGIN_NAMESPACE

/// The kinds of cold-path error, as the standard exception they map to.
enum class error_kind : unsigned char { none = 0, invalid_argument, out_of_range };

/// Called for cold-path errors when exceptions are disabled. Must not return.
using error_handler = void (*)(error_kind kind, const char* message);

namespace detail {

/// x unchanged, opaque to the optimizer: an empty asm costs no instruction. It keeps an
/// error-free transform's error term (two-sum's (a - (s - bb)) + (b - bb), a long double's
/// rounding remainder) from being folded to zero under -ffast-math's reassociation, and GCC from
/// rewriting -fma(x, y, z) as fma(-x, y, -z) (arch/scalar.hpp's correction).
template <class Real>
inline Real opaque(Real x) noexcept {
#if defined(__GNUC__) && defined(__SSE2__)
  __asm__("" : "+x"(x));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(x));
#else
  volatile Real v = x;
  x = v;
#endif
  return x;
}

/// Whether x is finite, from its bits: std::isfinite is folded to true under -ffinite-math-only
/// (part of -ffast-math), and validation must still refuse NaN and Inf there. The bits pass an
/// empty asm: newer Clang turns the exponent test back into a class test and folds it too.
inline bool finite(double x) noexcept {
  unsigned long long bits;
  static_assert(sizeof bits == sizeof x, "64-bit double");
  std::memcpy(&bits, &x, sizeof x);
#if defined(__GNUC__)
  __asm__("" : "+r"(bits));
#endif
  return (bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

/// fma(x, y, z) rounded once, for the error terms fma(x, y, -x*y) of error-free transforms.
/// Clang under -ffast-math on a target without fma instructions (x86-64 without -mfma) splits
/// std::fma into a multiply and an add, which makes such a term 0: there libm's fma is called
/// through a pointer the optimizer cannot see through.
inline double exact_fma(double x, double y, double z) noexcept {
#if defined(__clang__) && ROPE_FAST_MATH_ && !defined(__FMA__) && !defined(__aarch64__)
  double (*f)(double, double, double) = &::fma;
  __asm__("" : "+r"(f));
  return f(x, y, z);
#else
  return std::fma(x, y, z);
#endif
}

inline void default_error_handler(error_kind kind, const char* message) {
  std::fprintf(stderr, "rope: %s: %s\n",
               kind == error_kind::out_of_range ? "out of range" : "invalid argument", message);
  std::abort();
}

inline error_handler& error_handler_slot() noexcept {
  static error_handler handler = &default_error_handler;
  return handler;
}

[[noreturn]] inline void raise(error_kind kind, const std::string& message) {
#if ROPE_HAS_EXCEPTIONS
  if (kind == error_kind::out_of_range) throw std::out_of_range(message);
  throw std::invalid_argument(message);
#else
  error_handler_slot()(kind, message.c_str());
  std::abort();  // a handler that returns is a bug; never continue with bad input
#endif
}

}  // namespace detail

/// Installs the handler used for cold-path errors in builds without exceptions and returns
/// the previous one. Has no effect on builds with exceptions. Not thread safe against a
/// concurrent error: install it once at start-up.
inline error_handler set_error_handler(error_handler handler) noexcept {
  error_handler previous = detail::error_handler_slot();
  detail::error_handler_slot() = handler ? handler : &detail::default_error_handler;
  return previous;
}

ROPE_END_NAMESPACE  // rope
