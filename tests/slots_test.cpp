// rope/slots.hpp: keys rotated into KV-cache slots. Each written row bit for bit rope::apply's
// for that token alone, and within the README's bound of a long double 2x2 rotation (float:
// 3 * 2^-24 r; fp16 and bf16: 1 ulp); every byte not written by a token (other slots, padding
// slots -1, the gaps of strided caches, the input) unchanged; a repeated slot holds the later
// token; queries and keys in one call; bad input refused with nothing written, also in random
// calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <rope/slots.hpp>
#include <type_traits>
#include <vector>

#include "oracle.hpp"
#include "random_calls.hpp"

namespace {

using ld = long double;
constexpr rope::layout kLayouts[] = {rope::layout::interleaved, rope::layout::half_split};

using rope_test::random_rows;

// The spacing of T's values at |x| (fp16: 10 fraction bits, normal from 2^-14; bf16: 7, 2^-126;
// float: 23, 2^-126).
template <class T>
ld spacing(ld x) {
  const bool half = std::is_same<T, rope::float16>::value;
  const bool brain = std::is_same<T, rope::bfloat16>::value;
  const int frac = half ? 10 : brain ? 7 : 23;
  const int emin = half ? -14 : -126;
  const int e = x == 0 ? emin : std::max(std::ilogb(x), emin);
  return std::ldexp(ld{1}, e - frac);
}

template <class T>
float load(const T& v) {
  return rope::storage_traits<T>::load(v);
}

// A cache of n_slots slots of H heads of D elements with padding between heads and slots
// (token-major) or heads of n_slots rows (head-major), canary-filled.
template <class T>
struct cache_buf {
  std::ptrdiff_t n_slots, H, D, ts, hs;
  std::vector<T> data;
  cache_buf(std::ptrdiff_t slots, std::ptrdiff_t heads, std::ptrdiff_t dim, bool head_major,
            std::ptrdiff_t pad)
      : n_slots(slots), H(heads), D(dim),
        ts(head_major ? dim + pad : heads * (dim + pad) + pad),
        hs(head_major ? slots * (dim + pad) + pad : dim + pad),
        data(static_cast<std::size_t>(head_major ? heads * hs : slots * ts),
             rope::storage_traits<T>::store(-7.5f)) {}
  rope::heads_view<T> view() { return {data.data(), n_slots, H, D, ts, hs}; }
  T* row(std::ptrdiff_t slot, std::ptrdiff_t h) { return data.data() + slot * ts + h * hs; }
};

// n tokens of H heads rotated into a cache by `slots`, against: rope::apply of each token
// alone (bit for bit), a long double rotation of each pair (float 3 * 2^-24 r, 16-bit 1 ulp),
// the tail copied, and every element no token wrote unchanged.
template <class TOut, std::size_t Dim>
void check_slots(int D, int d, rope::layout l, bool head_major, rope::rounding rnd) {
  const std::ptrdiff_t H = 3, n = 12, n_slots = 40;
  auto tab = rope::get_table<float>(rope::make_spec(D, d, 1e6, l), 300000);
  // Runs (5..7, 8..9), single tokens, padding (-1), slot 0 and the last slot.
  const std::vector<std::int32_t> slots = {5, 6, 7, 20, -1, 0, 39, 8, 9, 3, -1, 33};
  const std::vector<std::int64_t> pos = {0, 1, 2, 299999, 17, 4096, 131071, 65536, 65537, 9, 5, 77};
  const std::vector<float> x = random_rows(static_cast<std::size_t>(n * H * D), 31);
  const rope::heads_view<const float> xv = rope::packed_heads(x.data(), n, H, D);
  cache_buf<TOut> cache(n_slots, H, D, head_major, 3);
  const std::vector<TOut> before = cache.data;
  ASSERT_EQ((rope::apply_to_slots<float, Dim>(*tab, xv, cache.view(), pos.data(), slots.data(),
                                              rope::direction::forward, rnd)),
            rope::status::ok);
  // Expected: the canaries with each written token's rows from rope::apply of it alone.
  std::vector<TOut> expect = before;
  std::vector<TOut> one(static_cast<std::size_t>(H * D));
  const std::size_t P = static_cast<std::size_t>(d / 2);
  const ld bound = 3 * 0x1p-24L;
  for (std::ptrdiff_t t = 0; t < n; ++t) {
    const std::ptrdiff_t s = slots[static_cast<std::size_t>(t)];
    if (s < 0) continue;
    ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(x.data() + t * H * D, 1, H, D),
                                 rope::packed_heads(one.data(), 1, H, D), &pos[static_cast<std::size_t>(t)],
                                 rope::direction::forward, rnd),
              rope::status::ok);
    for (std::ptrdiff_t h = 0; h < H; ++h) {
      std::memcpy(expect.data() + (cache.row(s, h) - cache.data.data()), one.data() + h * D,
                  static_cast<std::size_t>(D) * sizeof(TOut));
      const float* in = x.data() + (t * H + h) * D;
      const TOut* got = cache.row(s, h);
      for (std::size_t j = 0; j < P; ++j) {
        const oracle::cos_sin cs =
            oracle::cos_sin_of_product(pos[static_cast<std::size_t>(t)], tab->inv_freq()[j]);
        const std::size_t a = oracle::first(l, j, P), b = oracle::second(l, j, P);
        const ld u = in[a], v = in[b];
        const ld ea = u * cs.c - v * cs.s, eb = u * cs.s + v * cs.c;
        if constexpr (std::is_same<TOut, float>::value) {
          const ld r = std::hypot(u, v);
          ASSERT_LE(std::fabs(got[a] - ea), bound * r) << "token " << t << " pair " << j;
          ASSERT_LE(std::fabs(got[b] - eb), bound * r) << "token " << t << " pair " << j;
        } else if (rnd == rope::rounding::accurate) {
          ASSERT_LE(std::fabs(load(got[a]) - ea), spacing<TOut>(std::fabs(ea))) << t << " " << j;
          ASSERT_LE(std::fabs(load(got[b]) - eb), spacing<TOut>(std::fabs(eb))) << t << " " << j;
        }
      }
    }
  }
  for (std::size_t i = 0; i < expect.size(); ++i)
    ASSERT_EQ(0, std::memcmp(&cache.data[i], &expect[i], sizeof(TOut)))
        << "element " << i << " D=" << D << " d=" << d << " " << rope::to_string(l)
        << (head_major ? " head-major" : " token-major");
}

TEST(Slots, EachTokenIsApplyAtItsSlotFloat) {
  for (rope::layout l : kLayouts)
    for (bool head_major : {false, true}) {
      check_slots<float, rope::dynamic>(128, 128, l, head_major, rope::rounding::accurate);
      check_slots<float, 128>(128, 128, l, head_major, rope::rounding::accurate);
      check_slots<float, rope::dynamic>(80, 64, l, head_major, rope::rounding::accurate);
      check_slots<float, rope::dynamic>(72, 72, l, head_major, rope::rounding::accurate);
    }
}

TEST(Slots, EachTokenIsApplyAtItsSlotFp16AndBf16Caches) {
  for (rope::layout l : kLayouts)
    for (bool head_major : {false, true})
      for (rope::rounding rnd : {rope::rounding::accurate, rope::rounding::fast}) {
        check_slots<rope::float16, rope::dynamic>(128, 128, l, head_major, rnd);
        check_slots<rope::bfloat16, 64>(64, 64, l, head_major, rnd);
        check_slots<rope::bfloat16, rope::dynamic>(80, 64, l, head_major, rnd);
      }
}

// The inverse direction and double storage go through the same runs.
TEST(Slots, InverseAndDoubleRows) {
  const int D = 64;
  const std::ptrdiff_t n = 4, H = 2;
  auto tab = rope::get_table<double>(rope::make_spec(D, D, 1e4, rope::layout::half_split), 100);
  std::vector<double> x(static_cast<std::size_t>(n * H * D));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<double>(i) + 0.5);
  const std::vector<std::int64_t> pos = {3, 4, 99, 0}, slots = {1, 2, 0, -1};
  std::vector<double> cache(static_cast<std::size_t>(3 * H * D), -1.0);
  for (rope::direction dir : {rope::direction::forward, rope::direction::inverse}) {
    ASSERT_EQ(rope::apply_to_slots(*tab, rope::packed_heads(x.data(), n, H, D),
                                   rope::packed_heads(cache.data(), 3, H, D), pos.data(),
                                   slots.data(), dir),
              rope::status::ok);
    for (std::ptrdiff_t t = 0; t < 3; ++t) {
      std::vector<double> one(static_cast<std::size_t>(H * D));
      ASSERT_EQ(rope::apply<double>(*tab, rope::packed_heads(x.data() + t * H * D, 1, H, D),
                                    rope::packed_heads(one.data(), 1, H, D),
                                    &pos[static_cast<std::size_t>(t)], dir),
                rope::status::ok);
      EXPECT_EQ(0, std::memcmp(cache.data() + slots[static_cast<std::size_t>(t)] * H * D,
                               one.data(), one.size() * sizeof(double)));
    }
  }
}

// A slot given twice holds the later token's row; a slot of -1 writes nothing of its token.
TEST(Slots, RepeatedSlotHoldsTheLaterTokenAndPaddingIsSkipped) {
  const int D = 64;
  const std::ptrdiff_t H = 2, n = 5;
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, rope::layout::interleaved), 64);
  const std::vector<float> x = random_rows(static_cast<std::size_t>(n * H * D), 5);
  const std::vector<std::int32_t> pos = {1, 2, 3, 4, 5}, slots = {2, 3, -1, 2, -1};
  std::vector<float> cache(static_cast<std::size_t>(4 * H * D), 42.0f);
  ASSERT_EQ(rope::apply_to_slots<float>(*tab, rope::packed_heads(x.data(), n, H, D),
                                        rope::packed_heads(cache.data(), 4, H, D), pos.data(),
                                        slots.data()),
            rope::status::ok);
  std::vector<float> want(static_cast<std::size_t>(H * D));
  for (std::ptrdiff_t t : {1, 3}) {  // slot 3 from token 1, slot 2 from token 3 (not 0)
    ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(x.data() + t * H * D, 1, H, D),
                                 rope::packed_heads(want.data(), 1, H, D),
                                 &pos[static_cast<std::size_t>(t)]),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(cache.data() + slots[static_cast<std::size_t>(t)] * H * D,
                             want.data(), want.size() * sizeof(float)))
        << "token " << t;
  }
  for (std::ptrdiff_t s : {0, 1})
    for (std::ptrdiff_t i = 0; i < H * D; ++i) EXPECT_EQ(cache[static_cast<std::size_t>(s * H * D + i)], 42.0f);
}

// Queries in place and keys into an fp16 cache in one call: the bits of rope::apply on q and
// apply_to_slots on k; a bad slot or cache refused before q is written.
TEST(Slots, QueriesAndKeysInOneCall) {
  const int D = 128;
  const std::ptrdiff_t n = 6, Hq = 8, Hk = 2, n_slots = 64;
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 5e5, rope::layout::half_split), 131072);
  // A fused [n, Hq + 2 Hk, D] QKV buffer: q and k rows of one token interleave with v's.
  const std::ptrdiff_t W = (Hq + 2 * Hk) * D;
  const std::vector<float> qkv0 = random_rows(static_cast<std::size_t>(n * W), 77);
  std::vector<float> qkv = qkv0, qkv_ref = qkv0;
  const rope::heads_view<float> q{qkv.data(), n, Hq, D, W, D};
  const rope::heads_view<float> k{qkv.data() + Hq * D, n, Hk, D, W, D};
  // Six sequences decoding, each its own 10-slot region of a head-major cache.
  const std::vector<std::int64_t> pos = {7, 131071, 0, 4095, 12, 9};
  const std::vector<std::int64_t> slots = {7, 19, 20, 35, 42, 59};
  const rope::float16 canary = rope::storage_traits<rope::float16>::store(-9.0f);
  cache_buf<rope::float16> cache(n_slots, Hk, D, true, 0);
  std::fill(cache.data.begin(), cache.data.end(), canary);
  cache_buf<rope::float16> cache_ref = cache;
  ASSERT_EQ(rope::apply_qk_to_slots(*tab, q, q, k, cache.view(), pos.data(), slots.data()),
            rope::status::ok);
  ASSERT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{qkv_ref.data(), n, Hq, D, W, D},
                               pos.data()),
            rope::status::ok);
  ASSERT_EQ(rope::apply_to_slots(
                *tab, rope::heads_view<const float>{qkv_ref.data() + Hq * D, n, Hk, D, W, D},
                cache_ref.view(), pos.data(), slots.data()),
            rope::status::ok);
  EXPECT_EQ(0, std::memcmp(qkv.data(), qkv_ref.data(), qkv.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(cache.data.data(), cache_ref.data.data(),
                           cache.data.size() * sizeof(rope::float16)));
  // Keys and values of the buffer are unchanged (k is read, not written).
  for (std::ptrdiff_t t = 0; t < n; ++t)
    EXPECT_EQ(0, std::memcmp(qkv.data() + t * W + Hq * D, qkv0.data() + t * W + Hq * D,
                             static_cast<std::size_t>(2 * Hk * D) * sizeof(float)));
  // Refused with nothing written: a slot past the cache, a cache with one head too many, the
  // cache inside the QKV buffer, the slots inside the cache.
  const std::vector<float> qkv_now = qkv;
  const std::vector<rope::float16> cache_now = cache.data;
  std::vector<std::int64_t> bad = slots;
  bad[3] = n_slots;
  EXPECT_EQ(rope::apply_qk_to_slots(*tab, q, q, k, cache.view(), pos.data(), bad.data()),
            rope::status::position_out_of_range);
  bad[3] = -2;
  EXPECT_EQ(rope::apply_qk_to_slots(*tab, q, q, k, cache.view(), pos.data(), bad.data()),
            rope::status::position_out_of_range);
  rope::heads_view<rope::float16> wide = cache.view();
  wide.n_heads = 3;
  EXPECT_EQ(rope::apply_qk_to_slots(*tab, q, q, k, wide, pos.data(), slots.data()),
            rope::status::bad_dimension);
  const rope::heads_view<float> over_q{qkv.data(), n, Hk, D, W, D};  // the cache over q's rows
  EXPECT_EQ(rope::apply_qk_to_slots(*tab, q, q, k, over_q, pos.data(), slots.data()),
            rope::status::overlapping_buffers);
  std::vector<std::int64_t> far = pos;
  far[5] = 131072;
  EXPECT_EQ(rope::apply_qk_to_slots(*tab, q, q, k, cache.view(), far.data(), slots.data()),
            rope::status::position_out_of_range);
  EXPECT_EQ(rope::apply_qk_to_slots<float>(*tab, q, q, k, cache.view(), pos.data(),
                                           static_cast<const std::int64_t*>(nullptr)),
            rope::status::null_pointer);
  EXPECT_EQ(0, std::memcmp(qkv.data(), qkv_now.data(), qkv.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(cache.data.data(), cache_now.data(),
                           cache.data.size() * sizeof(rope::float16)));
}

// Each row of the bad-input table for apply_to_slots: the error, and not a byte of the cache
// (or the input) changed.
TEST(Slots, BadInputIsRefusedAndNothingWritten) {
  const int D = 64;
  const std::ptrdiff_t n = 4, H = 2, n_slots = 16;
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e4, rope::layout::interleaved), 512);
  std::vector<float> x = random_rows(static_cast<std::size_t>(n * H * D), 8);
  const std::vector<float> x0 = x;
  std::vector<float> cache(static_cast<std::size_t>(n_slots * H * D), 1.5f);
  const auto xv = rope::packed_heads(x.data(), n, H, D);
  const auto cv = rope::packed_heads(cache.data(), n_slots, H, D);
  std::vector<std::int64_t> pos = {0, 1, 2, 511}, slots = {0, 15, -1, 4};
  // The slots and positions arrays, copied into the cache's last row.
  float* last = cache.data() + (n_slots - 1) * H * D + D;
  std::memcpy(last, slots.data(), slots.size() * sizeof(std::int64_t));
  std::memcpy(last + 16, pos.data(), pos.size() * sizeof(std::int64_t));
  const std::vector<float> cache0 = cache;
  auto call = [&](const rope::heads_view<float>& in, const rope::heads_view<float>& c,
                  const std::int64_t* p, const std::int64_t* s) {
    return rope::apply_to_slots(*tab, in, c, p, s);
  };
  std::vector<std::int64_t> bad = slots;
  bad[1] = n_slots;
  EXPECT_EQ(call(xv, cv, pos.data(), bad.data()), rope::status::position_out_of_range);
  bad[1] = -2;
  EXPECT_EQ(call(xv, cv, pos.data(), bad.data()), rope::status::position_out_of_range);
  EXPECT_EQ(call(xv, cv, pos.data(), nullptr), rope::status::null_pointer);
  EXPECT_EQ(call(xv, cv, nullptr, slots.data()), rope::status::null_pointer);
  std::vector<std::int64_t> far = pos;
  far[0] = -1;
  EXPECT_EQ(call(xv, cv, far.data(), slots.data()), rope::status::position_out_of_range);
  far[0] = 512;
  EXPECT_EQ(call(xv, cv, far.data(), slots.data()), rope::status::position_out_of_range);
  EXPECT_EQ(call(xv, rope::packed_heads(cache.data(), n_slots, H + 1, D), pos.data(), slots.data()),
            rope::status::bad_dimension);
  EXPECT_EQ(call(xv, rope::heads_view<float>{cache.data(), n_slots, H, D + 2, H * D, D + 2},
                 pos.data(), slots.data()),
            rope::status::bad_stride);
  EXPECT_EQ(call(rope::packed_heads(x.data(), n, H, D - 2), rope::packed_heads(cache.data(), n_slots, H, D - 2),
                 pos.data(), slots.data()),
            rope::status::bad_dimension);  // head_dim below the table's rotary_dim
  EXPECT_EQ((rope::apply_to_slots<float, 128>(*tab, xv, cv, pos.data(), slots.data())),
            rope::status::bad_dimension);
  EXPECT_EQ(rope::apply_to_slots(*tab, xv, cv, pos.data(), slots.data(),
                                 static_cast<rope::direction>(7)),
            rope::status::bad_option);
  // The input inside the cache; the slots or positions arrays inside the cache.
  EXPECT_EQ(call(rope::packed_heads(cache.data() + 3 * H * D, n, H, D), cv, pos.data(),
                 slots.data()),
            rope::status::overlapping_buffers);
  EXPECT_EQ(call(xv, cv, pos.data(), reinterpret_cast<const std::int64_t*>(last)),
            rope::status::overlapping_buffers);
  EXPECT_EQ(call(xv, cv, reinterpret_cast<const std::int64_t*>(last + 16), slots.data()),
            rope::status::overlapping_buffers);
  EXPECT_EQ(0, std::memcmp(cache.data(), cache0.data(), cache.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(x.data(), x0.data(), x.size() * sizeof(float)));
  // Nothing to do: zero tokens (slots not read), zero heads.
  EXPECT_EQ(call(rope::packed_heads(x.data(), 0, H, D), cv, pos.data(), nullptr),
            rope::status::ok);
  EXPECT_EQ(call(rope::packed_heads(x.data(), n, 0, D), rope::packed_heads(cache.data(), n_slots, 0, D),
                 pos.data(), nullptr),
            rope::status::ok);
  // Only padding: validated, nothing written.
  const std::vector<std::int64_t> skip = {-1, -1, -1, -1};
  EXPECT_EQ(call(xv, cv, pos.data(), skip.data()), rope::status::ok);
  EXPECT_EQ(0, std::memcmp(cache.data(), cache0.data(), cache.size() * sizeof(float)));
  // The same call with good input writes.
  EXPECT_EQ(call(xv, cv, pos.data(), slots.data()), rope::status::ok);
  EXPECT_NE(0, std::memcmp(cache.data(), cache0.data(), cache.size() * sizeof(float)));
}

// Random calls: head and rotary dims (run-time and two compile-time), both layouts, token- or
// head-major caches with padding and an offset, float/fp16/bf16 caches, random slots (runs,
// single tokens, -1, repeats), with one mistake or none (a slot past the cache or below -1, a
// position past the table, a cache with one head fewer). A call either returns the error
// its input calls for with every byte of the input and the cache unchanged, or leaves the
// cache exactly as writing each token's rope::apply rows, in token order, into its slot would.
// (ASan and UBSan run this too: the asan preset.)
template <class TOut, std::size_t Dim>
void random_call(std::mt19937_64& gen, int& calls_ok, int& calls_refused) {
  auto pick = [&](int n) { return static_cast<int>(gen() % static_cast<std::uint64_t>(n)); };
  const int dims[] = {40, 64, 72, 128, 136};
  const int D = Dim ? static_cast<int>(Dim) + 2 * pick(3) : dims[pick(5)];
  const int d = Dim ? static_cast<int>(Dim) : 2 * (1 + pick(D / 2));
  const rope::layout l = kLayouts[pick(2)];
  const std::ptrdiff_t n = 1 + pick(12), H = 1 + pick(3), n_slots = 1 + pick(24);
  const bool head_major = pick(3) == 0;
  const std::ptrdiff_t pad = pick(3), offset = pick(5);
  const std::int64_t length = 1000;
  auto tab = rope::get_table<float>(rope::make_spec(D, d, 1e4, l), length);
  std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
  for (auto& p : pos) p = pick(static_cast<int>(length));
  std::vector<std::int32_t> slots(static_cast<std::size_t>(n));
  for (std::size_t t = 0; t < slots.size(); ++t) {
    const int kind = pick(4);
    slots[t] = kind == 0 ? -1
               : kind == 1 && t > 0 && slots[t - 1] >= 0 && slots[t - 1] + 1 < n_slots
                   ? slots[t - 1] + 1
                   : pick(static_cast<int>(n_slots));
  }
  const int mistake = pick(8);  // 0: slot, 1: position, 2: one head fewer, else none
  if (mistake == 0)
    slots[static_cast<std::size_t>(pick(static_cast<int>(n)))] =
        pick(2) ? static_cast<std::int32_t>(n_slots) : -2;
  if (mistake == 1) pos[static_cast<std::size_t>(pick(static_cast<int>(n)))] = tab->length();
  const std::vector<float> x = random_rows(static_cast<std::size_t>(n * H * D), gen());
  const std::ptrdiff_t ts = head_major ? D + pad : H * (D + pad) + pad;
  const std::ptrdiff_t hs = head_major ? n_slots * (D + pad) + pad : D + pad;
  const std::size_t size = static_cast<std::size_t>(offset + (head_major ? H * hs : n_slots * ts));
  std::vector<TOut> cache(size, rope::storage_traits<TOut>::store(-3.5f));
  const std::vector<TOut> cache0 = cache;
  const rope::heads_view<TOut> cv{cache.data() + offset, n_slots, mistake == 2 ? H - 1 : H, D, ts,
                                  hs};
  const auto xv = rope::packed_heads(x.data(), n, H, D);
  const rope::status got =
      rope::apply_to_slots<float, Dim>(*tab, xv, cv, pos.data(), slots.data());
  const rope::status want = mistake == 0   ? rope::status::position_out_of_range
                            : mistake == 1 ? rope::status::position_out_of_range
                            : mistake == 2 ? rope::status::bad_dimension
                                           : rope::status::ok;
  ASSERT_EQ(got, want) << "D=" << D << " d=" << d << " n=" << n << " slots=" << n_slots;
  if (got != rope::status::ok) {
    ++calls_refused;
    ASSERT_EQ(0, std::memcmp(cache.data(), cache0.data(), size * sizeof(TOut)));
    return;
  }
  ++calls_ok;
  std::vector<TOut> expect = cache0;
  std::vector<TOut> one(static_cast<std::size_t>(H * D));
  for (std::ptrdiff_t t = 0; t < n; ++t) {
    const std::ptrdiff_t s = slots[static_cast<std::size_t>(t)];
    if (s < 0) continue;
    ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(x.data() + t * H * D, 1, H, D),
                                 rope::packed_heads(one.data(), 1, H, D), &pos[static_cast<std::size_t>(t)]),
              rope::status::ok);
    for (std::ptrdiff_t h = 0; h < H; ++h)
      std::memcpy(expect.data() + offset + s * ts + h * hs, one.data() + h * D,
                  static_cast<std::size_t>(D) * sizeof(TOut));
  }
  for (std::size_t i = 0; i < size; ++i)
    ASSERT_EQ(0, std::memcmp(&cache[i], &expect[i], sizeof(TOut)))
        << "D=" << D << " d=" << d << " i=" << i << (head_major ? " head-major" : "");
}

TEST(Slots, RandomCallsMatchApplyOrWriteNothing) {
  std::mt19937_64 gen(1204);
  const auto [ok, refused] =
      rope_test::random_call_rounds([&](auto out, auto dim, int& n_ok, int& n_refused) {
        random_call<decltype(out), decltype(dim)::value>(gen, n_ok, n_refused);
      });
  if (::testing::Test::HasFatalFailure()) return;
  std::printf("apply_to_slots random calls: %d succeeded, %d refused\n", ok, refused);
  EXPECT_GT(ok, 900);
  EXPECT_GT(refused, 450);
}

}  // namespace
