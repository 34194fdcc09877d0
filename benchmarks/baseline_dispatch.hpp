// benchmarks/baseline_dispatch.hpp: rope::apply as a binary built for baseline x86-64 runs it
// (no -m flags, ROPE_RUNTIME_DISPATCH: kernels in target regions, the path probed at run
// time), callable from apply_bench's -march=native translation unit, so that the cost of
// runtime dispatch is measured against compile-time dispatch inside one binary and one run.
//
// baseline_dispatch.cpp includes rope with the namespace renamed (rope_baseline): the two
// translation units instantiate the same templates under different flags, which under one
// name would break the one-definition rule (the linker would keep either copy for both).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace bench {

/// The path the baseline build's runtime dispatcher chose on this CPU.
const char* baseline_isa_name() noexcept;

/// A float table for D = rotary_dim = head_dim, base 1e4, positions [0, 4096], built by the
/// baseline build's copy of rope (opaque here).
std::shared_ptr<const void> baseline_table(int D, bool half_split);

/// rope::apply<float, D> in place over [1 token, heads, D] at *pos, compiled for baseline
/// x86-64 with runtime dispatch. Returns the rope::status as an int (0: ok).
template <int D>
int baseline_decode(const void* table, float* x, std::ptrdiff_t heads,
                    const std::int32_t* pos) noexcept;

}  // namespace bench
