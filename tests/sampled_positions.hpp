// Positions to check a table at, shared by table_test and fastmath_test.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace rope_test {

/// Positions below limit: 0..first-1, every 2^k - 1, 2^k, 2^k + 1 from 2^first_power, and
/// `random` more drawn with the seed.
inline std::vector<std::int64_t> sampled_positions(std::int64_t limit, std::int64_t first = 1024,
                                                   int first_power = 10, int random = 2000,
                                                   std::uint64_t seed = 99) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i < first && i < limit; ++i) p.push_back(i);
  for (int k = first_power; (std::int64_t{1} << k) < limit; ++k)
    for (std::int64_t d = -1; d <= 1; ++d)
      if ((std::int64_t{1} << k) + d < limit) p.push_back((std::int64_t{1} << k) + d);
  std::mt19937_64 gen(seed);
  for (int i = 0; i < random; ++i)
    p.push_back(static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(limit)));
  return p;
}

}  // namespace rope_test
