// benchmarks/baseline_dispatch.cpp: see baseline_dispatch.hpp. Built without -march=native
// (benchmarks/CMakeLists.txt), with runtime dispatch, and with rope renamed to rope_baseline.
// (rope's build-mode namespace, rope/config.hpp, now keeps the two files' instantiations apart
// by itself; the rename also keeps apply_bench's calls from naming this copy by mistake.)
//
// Every standard header rope uses is included first, so the rename reaches only rope's own
// names (the standard headers' include guards keep them from being read again below).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "baseline_dispatch.hpp"

#define ROPE_RUNTIME_DISPATCH 1
#define rope rope_baseline
#include <rope/rope.hpp>
#undef rope

namespace bench {

const char* baseline_isa_name() noexcept {
  return rope_baseline::to_string(rope_baseline::active_isa());
}

std::shared_ptr<const void> baseline_table(int D, bool half_split) {
  const auto l = half_split ? rope_baseline::layout::half_split : rope_baseline::layout::interleaved;
  return rope_baseline::get_table<float>(rope_baseline::make_spec(D, D, 1e4, l), 4096 + 1);
}

template <int D>
int baseline_decode(const void* table, float* x, std::ptrdiff_t heads,
                    const std::int32_t* pos) noexcept {
  const auto& tab = *static_cast<const rope_baseline::table<float>*>(table);
  return static_cast<int>(
      rope_baseline::apply<float, D>(tab, rope_baseline::packed_heads(x, 1, heads, D), pos));
}

template int baseline_decode<64>(const void*, float*, std::ptrdiff_t, const std::int32_t*) noexcept;
template int baseline_decode<80>(const void*, float*, std::ptrdiff_t, const std::int32_t*) noexcept;
template int baseline_decode<96>(const void*, float*, std::ptrdiff_t, const std::int32_t*) noexcept;
template int baseline_decode<128>(const void*, float*, std::ptrdiff_t, const std::int32_t*) noexcept;
template int baseline_decode<256>(const void*, float*, std::ptrdiff_t, const std::int32_t*) noexcept;

}  // namespace bench
