// rope/isa.hpp: which instruction set rope::apply runs on, and how to choose it.
//
//   if (!rope::force_isa(rope::isa::avx2)) { /* this CPU has no AVX2+FMA+F16C */ }
//   std::printf("%s\n", rope::to_string(rope::active_isa()));
//
// Two dispatch modes:
//  - compile time (default): rope::apply calls the best kernel the compiler's flags allow
//    (__AVX512F__ etc., or __ARM_NEON on AArch64), fully inlined; active_isa() is that ISA and
//    force_isa() accepts only it.
//  - run time (#define ROPE_RUNTIME_DISPATCH before including rope, or the CMake option of the
//    same name for rope's own tests): every x86-64 kernel is compiled inside target regions, so
//    no -m flag is needed; the CPU is probed once (CPUID, and XGETBV so that the OS saves the
//    wide registers) and the choice is cached. The environment variable
//    ROPE_FORCE_ISA=scalar|avx2|avx512|neon, read at that first probe, or force_isa() picks a
//    path; a path the CPU lacks is refused (force_isa returns false; the environment variable
//    is ignored with a message on stderr).
// A compile-time build cannot switch paths, so ROPE_FORCE_ISA naming a path other than the
// compiled one, or a value that names no path, gets one line on stderr (unset or empty: none)
// when that build mode's first table is built, instead of being ignored without a word: a test
// or benchmark run that asked for a path must not believe it ran it.
//
// Paths: avx512 needs AVX512F+BW+DQ+VL, FMA and F16C; avx2 needs AVX2, FMA and F16C; neon is
// AArch64's Advanced SIMD. Every path gives bitwise the results of the scalar path.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "rope/config.hpp"
#include "rope/fwd.hpp"

#if (defined(__x86_64__) || defined(_M_X64) || defined(__i386__)) && \
    (defined(__GNUC__) || defined(__clang__))
#define ROPE_X86 1
#include <cpuid.h>
#else
#define ROPE_X86 0
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#define ROPE_NEON 1
#else
#define ROPE_NEON 0
#endif

ROPE_BEGIN_NAMESPACE

/// An instruction-set path of rope::apply.
enum class isa : unsigned char { scalar = 1, avx2 = 2, avx512 = 3, neon = 4 };

inline const char* to_string(isa i) noexcept {
  switch (i) {
    case isa::scalar: return "scalar";
    case isa::avx2: return "avx2";
    case isa::avx512: return "avx512";
    case isa::neon: return "neon";
  }
  return "unknown";
}

/// The ISA compile-time dispatch uses, from the compiler's flags.
constexpr isa compiled_isa() noexcept {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__FMA__) && defined(__F16C__)
  return isa::avx512;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  return isa::avx2;
#elif ROPE_NEON
  return isa::neon;
#else
  return isa::scalar;
#endif
}

namespace detail {

#if ROPE_X86
// XGETBV with ECX = 0 as an instruction, so no target attribute is needed.
inline unsigned long long xgetbv0() noexcept {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}
#endif

/// Whether the running CPU (and OS) can run path i.
inline bool cpu_supports(isa i) noexcept {
  if (i == isa::scalar) return true;
#if ROPE_X86
  if (i != isa::avx2 && i != isa::avx512) return false;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool osxsave = (c >> 27) & 1u, avx = (c >> 28) & 1u, fma = (c >> 12) & 1u,
             f16c = (c >> 29) & 1u;
  if (!osxsave || !avx || !fma || !f16c) return false;
  const unsigned long long xcr0 = xgetbv0();
  if ((xcr0 & 0x6u) != 0x6u) return false;  // XMM and YMM state saved by the OS
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool avx2 = (b >> 5) & 1u;
  if (i == isa::avx2) return avx2;
  const bool f = (b >> 16) & 1u, dq = (b >> 17) & 1u, bw = (b >> 30) & 1u, vl = (b >> 31) & 1u;
  return avx2 && f && dq && bw && vl && (xcr0 & 0xe0u) == 0xe0u;  // opmask, ZMM state
#elif ROPE_NEON
  return i == isa::neon;
#else
  return false;
#endif
}

/// The best path of this CPU among those compiled in.
inline isa best_isa() noexcept {
#if ROPE_X86
  if (cpu_supports(isa::avx512)) return isa::avx512;
  if (cpu_supports(isa::avx2)) return isa::avx2;
  return isa::scalar;
#elif ROPE_NEON
  return isa::neon;
#else
  return isa::scalar;
#endif
}

inline bool parse_isa(const char* s, isa& out) noexcept {
  for (isa i : {isa::scalar, isa::avx2, isa::avx512, isa::neon})
    if (std::strcmp(s, to_string(i)) == 0) {
      out = i;
      return true;
    }
  return false;
}

/// The runtime dispatcher's choice; 0 until the first probe.
inline std::atomic<unsigned char> dispatch_choice{0};

/// Out of line: inlined into the dispatcher, its CPUID code made every call save and
/// restore six registers around the one-byte load (28 instructions where 8 do, counted with
/// callgrind).
ROPE_NOINLINE inline isa probe_isa() noexcept {
  isa chosen = best_isa();
  if (const char* env = std::getenv("ROPE_FORCE_ISA"); env != nullptr && *env != '\0') {
    isa wanted;
    if (!parse_isa(env, wanted))
      std::fprintf(stderr, "rope: ROPE_FORCE_ISA=%s is not scalar|avx2|avx512|neon; using %s\n",
                   env, to_string(chosen));
    else if (!cpu_supports(wanted))
      std::fprintf(stderr, "rope: ROPE_FORCE_ISA=%s: this CPU lacks it; using %s\n", env,
                   to_string(chosen));
    else
      chosen = wanted;
  }
  unsigned char expected = 0;
  dispatch_choice.compare_exchange_strong(expected, static_cast<unsigned char>(chosen));
  return static_cast<isa>(dispatch_choice.load(std::memory_order_relaxed));
}

/// The runtime dispatcher's path: one relaxed load after the first call.
inline isa dispatched_isa() noexcept {
  const unsigned char v = dispatch_choice.load(std::memory_order_relaxed);
  return v != 0 ? static_cast<isa>(v) : probe_isa();
}

/// Sets the runtime dispatcher's path; false (and no change) when the CPU lacks it.
inline bool force_dispatched_isa(isa i) noexcept {
  if (!cpu_supports(i)) return false;
  dispatch_choice.store(static_cast<unsigned char>(i), std::memory_order_relaxed);
  return true;
}

/// What ROPE_FORCE_ISA = env asks of a build whose path was fixed at compile time: nothing
/// (unset or empty), the compiled path itself, a path this build cannot switch to, or a string
/// that names no path.
enum class fixed_path_request : unsigned char { none, compiled_path, other_path, not_a_path };

inline fixed_path_request classify_fixed_path_request(const char* env, isa compiled) noexcept {
  if (env == nullptr || *env == '\0') return fixed_path_request::none;
  isa wanted;
  if (!parse_isa(env, wanted)) return fixed_path_request::not_a_path;
  return wanted == compiled ? fixed_path_request::compiled_path : fixed_path_request::other_path;
}

#define ROPE_STRINGIFY_I_(x) #x
#define ROPE_STRINGIFY_(x) ROPE_STRINGIFY_I_(x)

#if !defined(ROPE_RUNTIME_DISPATCH)
/// The line itself; true when the variable asked anything.
inline bool say_fixed_path_ignores_request() noexcept {
  const char* env = std::getenv("ROPE_FORCE_ISA");
  const fixed_path_request r = classify_fixed_path_request(env, compiled_isa());
  if (r == fixed_path_request::other_path || r == fixed_path_request::not_a_path)
    std::fprintf(stderr,
                 "rope: ROPE_FORCE_ISA=%s is ignored%s by rope::%s: compile-time dispatch, its "
                 "rope::apply runs %s (build with ROPE_RUNTIME_DISPATCH to choose the path at "
                 "run time)\n",
                 env, r == fixed_path_request::not_a_path ? " (not scalar|avx2|avx512|neon)" : "",
                 ROPE_STRINGIFY_(ROPE_ABI_NAMESPACE), to_string(compiled_isa()));
  return r != fixed_path_request::none;
}
#endif

/// In a compile-time build, the one line for ROPE_FORCE_ISA (see the file comment), once per
/// build-mode namespace: called by table<Real>::build, the cold path every caller of apply goes
/// through, rather than from a static initializer, so that no code of a file built for another
/// ISA runs unless the program calls that file (and so that including rope adds no global
/// constructor). The line names the namespace: a program may link several build modes, and a
/// runtime-dispatch one among them honours the variable.
inline void note_fixed_path_request() noexcept {
#if !defined(ROPE_RUNTIME_DISPATCH)
  static const bool noted = say_fixed_path_ignores_request();
  static_cast<void>(noted);
#endif
}

}  // namespace detail

/// The path rope::apply runs on now.
inline isa active_isa() noexcept {
#if defined(ROPE_RUNTIME_DISPATCH)
  return detail::dispatched_isa();
#else
  return compiled_isa();
#endif
}

/// Makes rope::apply run on path i from now on (for tests and benchmarks; not meant to be
/// called while other threads run apply, though doing so is not a data race). Returns false,
/// changing nothing, when the CPU lacks i, or, with compile-time dispatch, when i is not the
/// compiled path.
inline bool force_isa(isa i) noexcept {
#if defined(ROPE_RUNTIME_DISPATCH)
  return detail::force_dispatched_isa(i);
#else
  return i == compiled_isa() && detail::cpu_supports(i);
#endif
}

ROPE_END_NAMESPACE  // rope
