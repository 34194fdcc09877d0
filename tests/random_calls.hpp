// tests/random_calls.hpp: what the random-calls tests of mrope_test and slots_test share: rows
// of uniform floats, and the rounds: 400
// rounds of four kinds of call, each a call<TOut, Dim>(ok, refused) of the test's own: float
// and bf16 outputs with Dim = rope::dynamic, float with Dim = 64, fp16 with Dim = 128. Stops at
// the first fatal failure; returns how many calls succeeded and how many were refused.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <rope/storage.hpp>
#include <type_traits>
#include <utility>
#include <vector>

namespace rope_test {

/// n floats uniform in [-1, 1] (std::mt19937_64 from seed).
inline std::vector<float> random_rows(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (auto& e : v) e = dist(gen);
  return v;
}

template <class Call>
std::pair<int, int> random_call_rounds(Call&& call) {
  using dynamic_dim = std::integral_constant<std::size_t, 0>;
  int ok = 0, refused = 0;
  for (int i = 0; i < 400 && !::testing::Test::HasFatalFailure(); ++i) {
    call(float{}, dynamic_dim{}, ok, refused);
    call(rope::bfloat16{}, dynamic_dim{}, ok, refused);
    call(float{}, std::integral_constant<std::size_t, 64>{}, ok, refused);
    call(rope::float16{}, std::integral_constant<std::size_t, 128>{}, ok, refused);
  }
  return {ok, refused};
}

}  // namespace rope_test
