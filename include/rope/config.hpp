// rope/config.hpp: configuration macros and the cold-path error mechanism.
//
// The hot path (rope::apply and friends) never throws: it returns a rope::status. The cold path
// (validating a spec, building a table) reports bad input by throwing std::invalid_argument or
// std::out_of_range whose message names the parameter and its value. In a build without
// exceptions (-fno-exceptions) the same message goes to the handler installed with
// rope::set_error_handler, which must not return (the default prints and calls std::abort).
#pragma once

#include <cstdio>
#include <cstdlib>
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

/// Rotary position embeddings: every public rope name lives here.
namespace rope {

/// The kinds of cold-path error, as the standard exception they map to.
enum class error_kind : unsigned char { none = 0, invalid_argument, out_of_range };

/// Called for cold-path errors when exceptions are disabled. Must not return.
using error_handler = void (*)(error_kind kind, const char* message);

namespace detail {

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

}  // namespace rope
