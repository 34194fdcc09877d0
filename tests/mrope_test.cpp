// rope/mrope.hpp: M-RoPE against HF's construction of the per-pair stream (restated here from
// Qwen2-VL's and Qwen3-VL's code, not from the library's), against a long double 2x2 rotation
// of each pair at its stream's position, and bit for bit against rope::apply at that position;
// text tokens (three equal positions) bit for bit as rope::apply; q and k in one call; a
// context shift through shift_positions; bad input refused with nothing written (also in
// random calls); mrope_section read by from_config.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <random>
#include <rope/mrope.hpp>
#include <rope/scaling.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "oracle.hpp"
#include "random_calls.hpp"

namespace {

using ld = long double;
constexpr rope::layout kLayouts[] = {rope::layout::interleaved, rope::layout::half_split};

// How a model assigns its pairs to the streams: Qwen2-VL's consecutive sections, Qwen3-VL's
// interleaved ones, ERNIE-4.5-VL's (mrope_section read as [height, width, temporal]).
enum class order { sections, interleaved, ernie, bailing, pangu };

// HF's stream (0 temporal, 1 height, 2 width) of each of `pairs` pairs, `section` the config's
// mrope_section; empty where HF's construction raises. Qwen2-VL: cos/sin of width 2 * pairs
// (the frequencies twice) split by mrope_section * 2, chunk i taking stream i % 3; pair j is
// element j's. Qwen3-VL (interleaved): start from temporal, then for stream k = 1, 2 the
// elements k, k + 3, ... below 3 * section[k] take stream k. ERNIE-4.5-VL ([h, w, t]):
// inv_freq_3d[:h + w] = cat(inv_freq[:-t][0::2], inv_freq[:-t][1::2]), inv_freq_3d[-t:] =
// inv_freq[-t:]; the per-pair angles split by mrope_section, chunk i taking stream (i + 1) % 3
// (height, width, temporal); the height and width chunks stacked entry by entry (torch.stack:
// equal lengths), the temporal chunk after. It raises where those tensors do not fit: t = 0
// (inv_freq[:-0] is empty), h != w, or a sum that is not `pairs`. Each pair must then still turn
// by its own frequency: checked here. Bailing ([t, h, w]; vLLM's BailingMRotaryEmbedding):
// spatial = h + w, entry j < spatial from the height row where j % 2 == 0, else the width row,
// entries from spatial on from the temporal row; it raises where h != w or the sum is not
// `pairs`. openPangu (Huawei's get_mrope_interleaved_id_list(t, h, w, force_last=True), vLLM's
// MRotaryEmbeddingInterleaved): counts {t - 1, h, w}; pair by pair the candidates with some
// left and not the last one chosen (all with some left if none), the smallest (placed / count
// as Python's float division, stream) chosen; then a final 0. Where t = 0 its list does not
// give each stream its count (returned empty here).
std::vector<int> hf_streams(const int section[3], order kind, int pairs) {
  std::vector<int> stream(static_cast<std::size_t>(pairs), 0);
  if (kind == order::bailing) {
    const int t = section[0], h = section[1], w = section[2];
    if (h != w || t + h + w != pairs || t < 0 || h < 0) return {};
    for (int j = 0; j < h + w; ++j) stream[static_cast<std::size_t>(j)] = j % 2 == 0 ? 1 : 2;
    return stream;
  }
  if (kind == order::pangu) {
    if (section[0] < 1 || section[0] + section[1] + section[2] != pairs) return {};
    const int counts[3] = {section[0] - 1, section[1], section[2]};
    int placed[3] = {0, 0, 0}, rem[3] = {counts[0], counts[1], counts[2]}, last = -1;
    std::vector<int> seq;
    for (int step = 0; step < counts[0] + counts[1] + counts[2]; ++step) {
      std::vector<int> cands;
      for (int k = 0; k < 3; ++k)
        if (rem[k] > 0 && k != last) cands.push_back(k);
      if (cands.empty())
        for (int k = 0; k < 3; ++k)
          if (rem[k] > 0) cands.push_back(k);
      const auto key = [&](int k) {
        return std::make_pair(static_cast<double>(placed[k]) / counts[k], k);
      };
      const int best = *std::min_element(cands.begin(), cands.end(),
                                         [&](int a, int b) { return key(a) < key(b); });
      seq.push_back(best);
      ++placed[best];
      --rem[best];
      last = best;
    }
    seq.push_back(0);
    return seq;
  }
  if (kind == order::ernie) {
    const int h = section[0], w = section[1], t = section[2];
    if (t == 0 || h != w || h + w + t != pairs) return {};
    const std::size_t P = static_cast<std::size_t>(pairs), T = static_cast<std::size_t>(t);
    std::vector<std::size_t> freq_3d;  // inv_freq_3d as indices into inv_freq
    for (std::size_t parity : {0u, 1u})  // inv_freq[:-t][0::2], then [1::2]
      for (std::size_t i = parity; i < P - T; i += 2) freq_3d.push_back(i);
    for (std::size_t i = P - T; i < P; ++i) freq_3d.push_back(i);
    EXPECT_EQ(freq_3d.size(), P);
    for (int i = 0; i < h; ++i)
      for (int c = 0; c < 2; ++c) {  // stack([h, w]): entry 2i from chunk 0, 2i + 1 from chunk 1
        const int j = 2 * i + c, entry = c * h + i;
        stream[static_cast<std::size_t>(j)] = (c + 1) % 3;
        EXPECT_EQ(freq_3d[static_cast<std::size_t>(entry)], static_cast<std::size_t>(j));
      }
    for (std::size_t j = P - T; j < P; ++j) EXPECT_EQ(freq_3d[j], j);  // chunk 2: temporal
    return stream;
  }
  if (kind == order::interleaved) {
    for (int k = 1; k <= 2; ++k)
      for (int i = k; i < 3 * section[k] && i < pairs; i += 3)
        stream[static_cast<std::size_t>(i)] = k;
    return stream;
  }
  std::vector<int> element;  // stream of each of the 2 * pairs elements
  for (int chunk = 0; chunk < 6; ++chunk)
    for (int i = 0; i < section[chunk % 3]; ++i) element.push_back(chunk % 3);
  EXPECT_EQ(element.size(), static_cast<std::size_t>(2 * pairs));
  for (int j = 0; j < pairs; ++j)
    stream[static_cast<std::size_t>(j)] = element[static_cast<std::size_t>(j)];
  return stream;
}

struct model {
  const char* name;
  int head_dim;
  int section[3];  // the config's mrope_section
  order kind;
};
// Qwen2-VL / Qwen2.5-VL, Qwen3-VL, ERNIE-4.5-VL (d = 128), GLM-4.1V (Qwen2-VL's construction
// over d = 64 of heads of 128: partial_rotary_factor 0.5), Qwen3.5 (Qwen3-VL's over d = 64 of
// heads of 256: partial_rotary_factor 0.25, HF's default sections), Bailing V3 (vLLM's test
// sections over its 64-dim MLA rope head), openPangu-VL (its config's [16, 8, 8]), and small
// heads with odd counts.
const model kModels[] = {{"qwen2-vl", 128, {16, 24, 24}, order::sections},
                         {"qwen3-vl", 128, {24, 20, 20}, order::interleaved},
                         {"qwen3.5", 256, {11, 11, 10}, order::interleaved},  // a quarter
                         {"ernie-4.5-vl", 128, {22, 22, 20}, order::ernie},
                         {"glm-4.1v", 128, {8, 12, 12}, order::sections},  // half of each head
                         {"small-sections", 40, {4, 7, 9}, order::sections},
                         {"small-interleaved", 40, {8, 6, 6}, order::interleaved},
                         {"small-ernie", 40, {7, 7, 6}, order::ernie},
                         {"bailing-v3", 64, {8, 12, 12}, order::bailing},  // Ling's MLA width
                         {"openpangu-vl", 64, {16, 8, 8}, order::pangu},
                         {"small-pangu", 40, {3, 9, 8}, order::pangu}};

// The config's mrope_section for (temporal, height, width) pair counts of `kind`.
std::array<int, 3> config_section(int temporal, int height, int width, order kind) {
  if (kind == order::ernie) return {height, width, temporal};
  return {temporal, height, width};
}

rope::mrope_sections sections_of(const model& m) {
  if (m.kind == order::ernie) return {m.section[2], m.section[0], m.section[1], false, true};
  if (m.kind == order::bailing) return {m.section[0], m.section[1], m.section[2], false, true};
  if (m.kind == order::pangu)
    return {m.section[0], m.section[1], m.section[2], false, false, true};
  return {m.section[0], m.section[1], m.section[2], m.kind == order::interleaved};
}

// Three position streams for n tokens: runs of text tokens (three equal positions) around
// image tokens (a frame's temporal index, row and column), as Qwen2-VL's get_rope_index.
std::vector<std::int64_t> mixed_positions(std::size_t n, std::int64_t base, std::uint64_t seed) {
  std::vector<std::int64_t> p(3 * n);
  std::mt19937_64 gen(seed);
  for (std::size_t t = 0; t < n; ++t) {
    const bool text = t < 3 || (t >= 11 && t < 14) || t + 2 >= n;
    const std::int64_t q = base + static_cast<std::int64_t>(gen() % 3000);
    p[t] = q;
    p[n + t] = text ? q : base + static_cast<std::int64_t>(gen() % 64);
    p[2 * n + t] = text ? q : base + static_cast<std::int64_t>(gen() % 64);
  }
  return p;
}

using rope_test::random_rows;

// Every pair of every token's heads, bit for bit, equals rope::apply's result at its stream's
// position (three rope::apply calls, one per stream); float outputs are also within the
// README's 3 * 2^-24 * r of a long double rotation by the exact angle; dims past rotary_dim
// are copied. Out of place and in place.
template <class TOut>
void check_model(const model& m, rope::layout l, rope::table_mode mode, rope::rounding rnd) {
  const int D = m.head_dim, H = 3;
  const int pairs = m.section[0] + m.section[1] + m.section[2];
  const int d = 2 * pairs;
  const std::size_t n = 20;
  const std::int64_t base = mode == rope::table_mode::compact ? (std::int64_t{1} << 20) : 0;
  auto tab = rope::table<float>::build(rope::default_frequencies(rope::make_spec(D, d, 1e6, l)), l,
                                       base + 4096, mode);
  const std::vector<std::int64_t> pos = mixed_positions(n, base, 7);
  const std::int64_t* streams[3] = {pos.data(), pos.data() + n, pos.data() + 2 * n};
  std::vector<float> x = random_rows(n * H * static_cast<std::size_t>(D), 11);
  const std::vector<int> stream = hf_streams(m.section, m.kind, pairs);
  const std::size_t P = static_cast<std::size_t>(pairs);
  // Head 1 of each token: pairs that cancel to delta in [2^-13, 2^-10] of their norm once
  // rotated at their stream's position (R(-phi) (delta, 1)), where a 16-bit output depends
  // on the table's low parts (rope/arch/scalar.hpp), which the gathered rows must carry too.
  std::mt19937_64 gen(13);
  std::uniform_real_distribution<double> delta(0x1p-13, 0x1p-10);
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j < P; ++j) {
      const std::size_t off = (t * static_cast<std::size_t>(H) + 1) * static_cast<std::size_t>(D);
      const oracle::cos_sin cs =
          oracle::cos_sin_of_product(streams[stream[j]][t], tab->inv_freq()[j]);
      const ld e = delta(gen);
      x[off + oracle::first(l, j, P)] = static_cast<float>(e * cs.c + cs.s);
      x[off + oracle::second(l, j, P)] = static_cast<float>(cs.c - e * cs.s);
    }
  const auto xv =
      rope::heads_view<const float>{x.data(), static_cast<std::ptrdiff_t>(n), H, D, H * D, D};
  auto out_view = [&](std::vector<TOut>& v) {
    return rope::heads_view<TOut>{v.data(), static_cast<std::ptrdiff_t>(n), H, D, H * D, D};
  };
  std::vector<TOut> got(x.size());
  ASSERT_EQ(rope::apply_mrope<float>(*tab, sections_of(m), xv, out_view(got), streams[0],
                                     streams[1], streams[2], rope::direction::forward, rnd),
            rope::status::ok);
  std::vector<TOut> by_stream[3];
  for (int k = 0; k < 3; ++k) {
    by_stream[k].resize(x.size());
    ASSERT_EQ(rope::apply<float>(*tab, xv, out_view(by_stream[k]), streams[k],
                                 rope::direction::forward, rnd),
              rope::status::ok);
  }
  ld worst = 0;
  const std::size_t heads = static_cast<std::size_t>(H);
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t h = 0; h < heads; ++h) {
      const std::size_t off = (t * heads + h) * static_cast<std::size_t>(D);
      for (std::size_t j = 0; j < P; ++j) {
        const int k = stream[j];
        const std::size_t a = oracle::first(l, j, P), b = oracle::second(l, j, P);
        for (std::size_t i : {a, b})
          ASSERT_EQ(0, std::memcmp(&got[off + i], &by_stream[k][off + i], sizeof(TOut)))
              << m.name << " " << rope::to_string(l) << " token " << t << " head " << h << " pair "
              << j << " (stream " << k << ")";
        if constexpr (std::is_same<TOut, float>::value) {
          const oracle::cos_sin cs = oracle::cos_sin_of_product(streams[k][t], tab->inv_freq()[j]);
          const ld u = x[off + a], v = x[off + b];
          const ld r = std::hypot(u, v);
          worst = std::max({worst, std::fabs(got[off + a] - (u * cs.c - v * cs.s)) / r,
                            std::fabs(got[off + b] - (u * cs.s + v * cs.c)) / r});
        }
      }
      for (std::size_t i = static_cast<std::size_t>(d); i < static_cast<std::size_t>(D); ++i)
        EXPECT_EQ(0, std::memcmp(&got[off + i], &by_stream[0][off + i], sizeof(TOut)));
    }
  EXPECT_LE(worst, 3 * 0x1p-24L) << m.name;
  // In place (float rows only): the same bits.
  if constexpr (std::is_same<TOut, float>::value) {
    std::vector<float> y = x;
    ASSERT_EQ(rope::apply_mrope<float>(
                  *tab, sections_of(m),
                  rope::heads_view<float>{y.data(), static_cast<std::ptrdiff_t>(n), H, D, H * D, D},
                  streams[0], streams[1], streams[2]),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(y.data(), got.data(), y.size() * sizeof(float))) << m.name;
  }
}

TEST(Mrope, EachPairAtItsStreamsPositionFloat) {
  for (const model& m : kModels)
    for (rope::layout l : kLayouts)
      for (rope::table_mode mode : {rope::table_mode::dense, rope::table_mode::compact})
        check_model<float>(m, l, mode, rope::rounding::accurate);
}

TEST(Mrope, EachPairAtItsStreamsPositionFp16AndBf16Outputs) {
  for (const model& m : kModels)
    for (rope::layout l : kLayouts)
      for (rope::rounding rnd : {rope::rounding::accurate, rope::rounding::fast}) {
        check_model<rope::float16>(m, l, rope::table_mode::dense, rnd);
        check_model<rope::bfloat16>(m, l, rope::table_mode::compact, rnd);
      }
}

// Text tokens only (three equal positions): rope::apply's result bit for bit, both directions;
// and the inverse undoes the forward M-RoPE to within a few units of float rounding.
TEST(Mrope, TextTokensAreApplyBitForBitAndInverseUndoes) {
  for (const model& m : kModels)
    for (rope::layout l : kLayouts) {
      const int D = m.head_dim, H = 2;
      const int d = 2 * (m.section[0] + m.section[1] + m.section[2]);
      auto tab = rope::get_table<float>(rope::make_spec(D, d, 1e4, l), 70000);
      const std::ptrdiff_t n = 9;
      std::vector<std::int32_t> pos = {0, 1, 2, 69999, 5, 5, 31, 4096, 65536};
      const std::vector<float> x = random_rows(static_cast<std::size_t>(n * H * D), 3);
      for (rope::direction dir : {rope::direction::forward, rope::direction::inverse}) {
        std::vector<float> a = x, b = x;
        ASSERT_EQ(
            rope::apply_mrope<float>(*tab, sections_of(m), rope::packed_heads(a.data(), n, H, D),
                                     pos.data(), pos.data(), pos.data(), dir),
            rope::status::ok);
        ASSERT_EQ(rope::apply<float>(*tab, rope::packed_heads(b.data(), n, H, D), pos.data(), dir),
                  rope::status::ok);
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << m.name;
      }
      // Image tokens: forward then inverse with the same streams.
      const std::vector<std::int64_t> p3 = mixed_positions(static_cast<std::size_t>(n), 0, 5);
      std::vector<float> y = x;
      const auto yv = rope::packed_heads(y.data(), n, H, D);
      for (rope::direction dir : {rope::direction::forward, rope::direction::inverse})
        ASSERT_EQ(rope::apply_mrope<float>(*tab, sections_of(m), yv, p3.data(), p3.data() + n,
                                           p3.data() + 2 * n, dir),
                  rope::status::ok);
      for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 12 * 0x1p-24) << i;
    }
}

// Random calls: head and rotary dims (run-time and two compile-time), both layouts, padded,
// head-major and offset rows, in place and out of place (float and bf16 outputs), sections
// valid or not, positions in range or one out of range in one stream. A call either returns
// the error its input calls for with every byte of the buffers (padding included) unchanged,
// or succeeds with each pair of each row bit for bit rope::apply's at its stream's position,
// the padding and the gaps untouched. (ASan and UBSan run this too: the asan preset.)
template <class TOut, std::size_t Dim>
void random_call(std::mt19937_64& gen, int& calls_ok, int& calls_refused) {
  auto pick = [&](int n) { return static_cast<int>(gen() % static_cast<std::uint64_t>(n)); };
  const int heads[] = {40, 64, 72, 128, 136};
  const int D = Dim ? static_cast<int>(Dim) + 2 * pick(3) : heads[pick(5)];
  const int d = Dim ? static_cast<int>(Dim) : 2 * (2 + pick(D / 2 - 1));
  const rope::layout l = kLayouts[pick(2)];
  const int pairs = d / 2;
  const order kind = static_cast<order>(pick(5));
  const bool interleaved = kind == order::interleaved;
  const bool alternating = kind == order::ernie || kind == order::bailing;
  int h = pick(interleaved            ? (pairs + 1) / 3 + 1
               : kind == order::ernie ? (pairs - 1) / 2 + 1  // temporal > 0
               : alternating          ? pairs / 2 + 1
               : kind == order::pangu ? pairs  // temporal >= 1
                                      : pairs + 1);
  int w = alternating ? h
                      : pick(interleaved            ? pairs / 3 + 1
                             : kind == order::pangu ? pairs - h
                                                    : pairs - h + 1);
  if (h + w > pairs) w = pairs - h;
  rope::mrope_sections sec{pairs - h - w, h, w, interleaved, alternating, kind == order::pangu};
  const int mistake = pick(6);  // 0: bad sections, 1: a position out of range, else valid
  if (mistake == 0) sec.temporal += pick(2) ? 1 : -1;
  const std::ptrdiff_t n = 1 + pick(12), H = 1 + pick(3);
  const std::ptrdiff_t pad = pick(3), offset = pick(5);
  const bool head_major = pick(3) == 0;
  const std::ptrdiff_t hs = head_major ? n * (D + pad) : D + pad;
  const std::ptrdiff_t ts = head_major ? D + pad : H * (D + pad) + pad;
  const std::size_t size = static_cast<std::size_t>(offset + H * n * (D + pad) + n * pad + D);
  const std::int64_t length = 1000;
  auto tab = rope::get_table<float>(rope::make_spec(D, d, 1e4, l), length);
  std::vector<std::int64_t> pos(static_cast<std::size_t>(3 * n));
  for (auto& p : pos) p = pick(3) == 0 ? pick(3) : pick(static_cast<int>(length));
  // The first position past the table (a cached table may be longer than asked for).
  if (mistake == 1) pos[static_cast<std::size_t>(pick(static_cast<int>(3 * n)))] = tab->length();
  const std::int64_t* st[3] = {pos.data(), pos.data() + n, pos.data() + 2 * n};
  std::vector<float> x = random_rows(size, gen());
  const bool in_place = std::is_same<TOut, float>::value && pick(2) == 0;
  const rope::heads_view<float> xv{x.data() + offset, n, H, D, ts, hs};
  std::vector<TOut> out(size, rope::storage_traits<TOut>::store(-3.5f));
  const rope::heads_view<TOut> ov{out.data() + offset, n, H, D, ts, hs};
  const std::vector<float> x0 = x;
  const std::vector<TOut> out0 = out;
  rope::status got;
  if constexpr (std::is_same<TOut, float>::value) {
    got = in_place ? rope::apply_mrope<float, Dim>(*tab, sec, xv, st[0], st[1], st[2])
                   : rope::apply_mrope<float, Dim>(*tab, sec, rope::heads_view<const float>(xv), ov,
                                                   st[0], st[1], st[2]);
  } else {
    got = rope::apply_mrope<float, Dim>(*tab, sec, rope::heads_view<const float>(xv), ov, st[0],
                                        st[1], st[2]);
  }
  const rope::status want = mistake == 0   ? rope::status::bad_dimension
                            : mistake == 1 ? rope::status::position_out_of_range
                                           : rope::status::ok;
  ASSERT_EQ(got, want) << "D=" << D << " d=" << d << " sections " << sec.temporal << ","
                       << sec.height << "," << sec.width << (interleaved ? " interleaved" : "")
                       << (sec.hw_alternating ? " hw_alternating" : "")
                       << (sec.balanced ? " balanced" : "");
  if (got != rope::status::ok) {
    ++calls_refused;
    ASSERT_EQ(0, std::memcmp(x.data(), x0.data(), size * sizeof(float)));
    ASSERT_EQ(0, std::memcmp(out.data(), out0.data(), size * sizeof(TOut)));
    return;
  }
  ++calls_ok;
  // The reference: rope::apply at each stream's positions, out of place into copies.
  std::vector<TOut> ref[3];
  const std::vector<int> stream =
      hf_streams(config_section(sec.temporal, h, w, kind).data(), kind, pairs);
  for (int k = 0; k < 3; ++k) {
    ref[k] = out0;
    ASSERT_EQ(
        rope::apply<float>(*tab, rope::heads_view<const float>{x0.data() + offset, n, H, D, ts, hs},
                           rope::heads_view<TOut>{ref[k].data() + offset, n, H, D, ts, hs}, st[k]),
        rope::status::ok);
  }
  // Element by element: rotated elements from their pair's stream, everything else (the
  // pass-through dims, the padding, the gaps) as stream 0's reference has it.
  std::vector<int> from(size, 0);
  const std::size_t P = static_cast<std::size_t>(pairs);
  for (std::ptrdiff_t t = 0; t < n; ++t)
    for (std::ptrdiff_t hh = 0; hh < H; ++hh)
      for (std::size_t j = 0; j < P; ++j) {
        const std::size_t row = static_cast<std::size_t>(offset + t * ts + hh * hs);
        from[row + oracle::first(l, j, P)] = stream[j];
        from[row + oracle::second(l, j, P)] = stream[j];
      }
  if (in_place) {
    // In place: the rows as the references have them, everything else unchanged.
    std::vector<float> expect = x0;
    for (std::ptrdiff_t t = 0; t < n; ++t)
      for (std::ptrdiff_t hh = 0; hh < H; ++hh) {
        const std::size_t row = static_cast<std::size_t>(offset + t * ts + hh * hs);
        for (std::size_t i = row; i < row + static_cast<std::size_t>(D); ++i)
          std::memcpy(&expect[i], &ref[from[i]][i], sizeof(float));
      }
    ASSERT_EQ(0, std::memcmp(x.data(), expect.data(), size * sizeof(float))) << "D=" << D;
  } else {
    ASSERT_EQ(0, std::memcmp(x.data(), x0.data(), size * sizeof(float)));
    for (std::size_t i = 0; i < size; ++i)
      ASSERT_EQ(0, std::memcmp(&out[i], &ref[from[i]][i], sizeof(TOut))) << "D=" << D << " i=" << i;
  }
}

TEST(Mrope, RandomCallsMatchApplyOrWriteNothing) {
  std::mt19937_64 gen(2026);
  const auto [ok, refused] =
      rope_test::random_call_rounds([&](auto out, auto dim, int& n_ok, int& n_refused) {
        random_call<decltype(out), decltype(dim)::value>(gen, n_ok, n_refused);
      });
  if (::testing::Test::HasFatalFailure()) return;
  std::printf("apply_mrope random calls: %d succeeded, %d refused\n", ok, refused);
  EXPECT_GT(ok, 800);
  EXPECT_GT(refused, 300);
}

// apply_mrope accepts exactly the sections under which the reference construction runs and
// gives each stream its count of pairs (every split of 1..70 pairs; hw_alternating as vLLM's
// Bailing, which takes temporal 0 where HF's ERNIE raises: from_config refuses that for ERNIE):
// checked on an empty view, so nothing but the sections is looked at. Two flags at once are
// refused.
TEST(Mrope, SectionsAcceptedExactlyWhenEachStreamGetsItsCount) {
  int accepted = 0;
  for (int pairs = 1; pairs <= 70; ++pairs) {
    auto tab = rope::table<float>::build(rope::default_frequencies(rope::make_spec(
                                             2 * pairs, 2 * pairs, 1e4, rope::layout::half_split)),
                                         rope::layout::half_split, 1);
    const rope::heads_view<float> none{nullptr, 0, 1, 2 * pairs, 2 * pairs, 2 * pairs};
    const std::int64_t p = 0;
    for (int h = 0; h <= pairs; ++h)
      for (int w = 0; w + h <= pairs; ++w)
        for (order kind : {order::sections, order::interleaved, order::bailing, order::pangu}) {
          const bool interleaved = kind == order::interleaved;
          const bool alternating = kind == order::bailing, pangu = kind == order::pangu;
          const int section[3] = {pairs - h - w, h, w};
          const std::vector<int> stream =
              hf_streams(config_section(section[0], h, w, kind).data(), kind, pairs);
          int count[3] = {0, 0, 0};
          for (int k : stream) ++count[k];
          const bool want = !stream.empty() && count[0] == section[0] && count[1] == h &&
                            count[2] == w;
          const rope::status st = rope::apply_mrope<float>(
              *tab, rope::mrope_sections{section[0], h, w, interleaved, alternating, pangu}, none,
              &p, &p, &p);
          ASSERT_EQ(st, want ? rope::status::ok : rope::status::bad_dimension)
              << pairs << " pairs: " << section[0] << "," << h << "," << w
              << (interleaved ? " interleaved" : "") << (alternating ? " hw_alternating" : "")
              << (pangu ? " balanced" : "");
          if ((alternating || pangu) && want && h <= (pairs + 1) / 3 && w <= pairs / 3) {
            for (const rope::mrope_sections two :
                 {rope::mrope_sections{section[0], h, w, true, alternating, pangu},
                  rope::mrope_sections{section[0], h, w, false, true, true}})
              ASSERT_EQ(rope::apply_mrope<float>(*tab, two, none, &p, &p, &p),
                        rope::status::bad_dimension);
          }
          accepted += want;
        }
  }
  EXPECT_GT(accepted, 110000);
}

TEST(Mrope, BadInputIsRefusedAndNothingWritten) {
  const int D = 128;
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e6, rope::layout::half_split), 1024);
  const std::ptrdiff_t n = 4;
  std::vector<float> x(static_cast<std::size_t>(n * D), 0.25f);
  const std::vector<float> canary = x;
  const auto v = rope::packed_heads(x.data(), n, 1, D);
  std::vector<std::int64_t> pt = {0, 1, 2, 3}, ph = {0, 1, 2, 3}, pw = {0, 5, 6, 3};
  const rope::mrope_sections ok{16, 24, 24, false};
  auto call = [&](const rope::mrope_sections& s, const std::int64_t* h, const std::int64_t* w) {
    return rope::apply_mrope<float>(*tab, s, v, pt.data(), h, w);
  };
  EXPECT_EQ(call({16, 24, 23, false}, ph.data(), pw.data()), rope::status::bad_dimension);
  EXPECT_EQ(call({16, 24, 25, false}, ph.data(), pw.data()), rope::status::bad_dimension);
  EXPECT_EQ(call({-1, 41, 24, false}, ph.data(), pw.data()), rope::status::bad_dimension);
  // Interleaved: 30 height pairs need pairs up to 3 * 30 - 2 = 88 of 64.
  EXPECT_EQ(call({4, 30, 30, true}, ph.data(), pw.data()), rope::status::bad_dimension);
  EXPECT_EQ(call(ok, ph.data(), nullptr), rope::status::null_pointer);
  pw[2] = 1024;  // past the table, in the width stream only
  EXPECT_EQ(call(ok, ph.data(), pw.data()), rope::status::position_out_of_range);
  pw[2] = 6;
  ph[1] = -1;
  EXPECT_EQ(call(ok, ph.data(), pw.data()), rope::status::position_out_of_range);
  ph[1] = 1;
  EXPECT_EQ((rope::apply_mrope<float, 64>(*tab, ok, v, pt.data(), ph.data(), pw.data())),
            rope::status::bad_dimension);
  EXPECT_EQ(rope::apply_mrope<float>(*tab, ok, v, pt.data(), ph.data(), pw.data(),
                                     static_cast<rope::direction>(9)),
            rope::status::bad_option);
  EXPECT_EQ(x, canary);
  // A position stream inside the output rows.
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n * D / 2), 0);
  const auto rv = rope::heads_view<float>{reinterpret_cast<float*>(rows.data()), n, 1, D, D, D};
  EXPECT_EQ(rope::apply_mrope<float>(*tab, ok, rv, pt.data(), rows.data() + 3, pw.data()),
            rope::status::overlapping_buffers);
  for (std::int64_t r : rows) EXPECT_EQ(r, 0);
  // The same call with good input writes.
  EXPECT_EQ(call(ok, ph.data(), pw.data()), rope::status::ok);
  EXPECT_NE(x, canary);
}

// Queries and keys in one call: the bits of two apply_mrope calls (q in place, k out of place
// into a head-major bf16 cache; both in place); a bad k view refused before q is written.
TEST(Mrope, QueriesAndKeysInOneCall) {
  const int D = 128;
  const std::ptrdiff_t n = 16, Hq = 4, Hk = 2, slots = 32;
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 5e6, rope::layout::half_split), 8192);
  const rope::mrope_sections sec{24, 20, 20, true};  // Qwen3-VL
  const std::vector<std::int64_t> pos = mixed_positions(static_cast<std::size_t>(n), 100, 9);
  const std::int64_t* p = pos.data();
  const auto q0 = random_rows(static_cast<std::size_t>(n * Hq * D), 21);
  const auto k0 = random_rows(static_cast<std::size_t>(n * Hk * D), 22);
  std::vector<float> q = q0, q_ref = q0;
  const rope::bfloat16 canary = rope::storage_traits<rope::bfloat16>::store(-9.0f);
  std::vector<rope::bfloat16> cache(static_cast<std::size_t>(Hk * slots * D), canary);
  std::vector<rope::bfloat16> cache_ref = cache;
  const auto cache_view = [&](std::vector<rope::bfloat16>& c, std::ptrdiff_t head_dim) {
    return rope::heads_view<rope::bfloat16>{c.data() + 3 * D, n, Hk, head_dim, D, slots * D};
  };
  const auto kv = rope::heads_view<const float>(rope::packed_heads(k0.data(), n, Hk, D));
  const auto qv = rope::packed_heads(q.data(), n, Hq, D);
  // A bad k output (head_dim below the rotary dim): neither q nor the cache written.
  EXPECT_EQ(rope::apply_qk_mrope<float>(*tab, sec, rope::heads_view<const float>(qv), qv, kv,
                                        cache_view(cache, D / 2), p, p + n, p + 2 * n),
            rope::status::bad_dimension);
  EXPECT_EQ(q, q0);
  EXPECT_EQ(0, std::memcmp(cache.data(), cache_ref.data(), cache.size() * 2));
  ASSERT_EQ(rope::apply_qk_mrope<float>(*tab, sec, rope::heads_view<const float>(qv), qv, kv,
                                        cache_view(cache, D), p, p + n, p + 2 * n),
            rope::status::ok);
  ASSERT_EQ(rope::apply_mrope<float>(*tab, sec, rope::packed_heads(q_ref.data(), n, Hq, D), p,
                                     p + n, p + 2 * n),
            rope::status::ok);
  ASSERT_EQ(rope::apply_mrope<float>(*tab, sec, kv, cache_view(cache_ref, D), p, p + n, p + 2 * n),
            rope::status::ok);
  EXPECT_EQ(0, std::memcmp(q.data(), q_ref.data(), q.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(cache.data(), cache_ref.data(), cache.size() * 2));
  // Both in place.
  std::vector<float> q2 = q0, k2 = k0, k_ref = k0;
  ASSERT_EQ(
      rope::apply_qk_mrope<float>(*tab, sec, rope::packed_heads(q2.data(), n, Hq, D),
                                  rope::packed_heads(k2.data(), n, Hk, D), p, p + n, p + 2 * n),
      rope::status::ok);
  ASSERT_EQ(rope::apply_mrope<float>(*tab, sec, rope::packed_heads(k_ref.data(), n, Hk, D), p,
                                     p + n, p + 2 * n),
            rope::status::ok);
  EXPECT_EQ(0, std::memcmp(q2.data(), q_ref.data(), q2.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(k2.data(), k_ref.data(), k2.size() * sizeof(float)));
}

// A context shift of M-RoPE keys by delta turns every pair by delta * w_j whatever its stream:
// rope::shift_positions with the temporal stream gives the keys apply_mrope gives at the three
// shifted positions, within the two results' bounds (README: 4 and 3 * 2^-24 r).
TEST(Mrope, ShiftPositionsShiftsEveryStream) {
  const int D = 128;
  const std::ptrdiff_t n = 20, H = 2;
  for (const model& m : kModels) {
    if (m.head_dim != D) continue;
    const int d = 2 * (m.section[0] + m.section[1] + m.section[2]);  // GLM-4.1V: half the head
    auto tab = rope::get_table<float>(rope::make_spec(D, d, 1e6, rope::layout::half_split), 40000);
    const rope::frequencies& f = tab->frequencies();
    const std::vector<std::int64_t> pos = mixed_positions(static_cast<std::size_t>(n), 5000, 4);
    const auto x = random_rows(static_cast<std::size_t>(n * H * D), 8);
    for (std::int64_t delta : {std::int64_t{-4000}, std::int64_t{1}, std::int64_t{30000}}) {
      std::vector<float> keys = x, want = x;
      const std::int64_t* p = pos.data();
      ASSERT_EQ(
          rope::apply_mrope<float>(*tab, sections_of(m), rope::packed_heads(keys.data(), n, H, D),
                                   p, p + n, p + 2 * n),
          rope::status::ok);
      ASSERT_EQ(rope::shift_positions<float>(f, rope::layout::half_split,
                                             rope::packed_heads(keys.data(), n, H, D), p, delta),
                rope::status::ok);
      std::vector<std::int64_t> shifted = pos;
      for (auto& v : shifted) v += delta;
      const std::int64_t* s = shifted.data();
      ASSERT_EQ(
          rope::apply_mrope<float>(*tab, sections_of(m), rope::packed_heads(want.data(), n, H, D),
                                   s, s + n, s + 2 * n),
          rope::status::ok);
      // Each within its bound of the exact rotation: 4 u r (shifted) + 3 u r (apply_mrope),
      // r <= sqrt(2) for inputs in [-1, 1].
      for (std::size_t i = 0; i < x.size(); ++i)
        ASSERT_LE(std::fabs(keys[i] - want[i]), 7 * 0x1p-24 * std::sqrt(2.0))
            << m.name << " delta " << delta << " i " << i;
    }
  }
}

rope::model_config qwen_vl() {
  rope::model_config cfg;
  cfg.rope_theta = 1e6;
  cfg.hidden_size = 3584;
  cfg.num_attention_heads = 28;  // head_dim 128
  cfg.max_position_embeddings = 128000;
  return cfg;
}

#if ROPE_HAS_EXCEPTIONS
// from_config refuses cfg with std::invalid_argument naming an mrope_ key.
void expect_refused_naming(const rope::model_config& cfg, rope::layout l, const char* key) {
  try {
    (void)rope::from_config(cfg, l);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}
void expect_refused_naming_mrope(const rope::model_config& cfg, rope::layout l) {
  expect_refused_naming(cfg, l, "mrope_");
}
#endif

TEST(Mrope, FromConfigReadsTheSections) {
  rope::model_config cfg = qwen_vl();
  cfg.rope_scaling = {{"type", "mrope"}, {"mrope_section", {16, 24, 24}}};  // Qwen2-VL
  rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.scaling.type, rope::scaling_type::none);
  EXPECT_EQ(m.mrope.temporal, 16);
  EXPECT_EQ(m.mrope.height, 24);
  EXPECT_EQ(m.mrope.width, 24);
  EXPECT_FALSE(m.mrope.interleaved);
  cfg.rope_scaling = {{"rope_type", "default"},  // Qwen3-VL
                      {"mrope_section", {24, 20, 20}},
                      {"mrope_interleaved", true}};
  m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.mrope.temporal, 24);
  EXPECT_TRUE(m.mrope.interleaved);
  // Qwen2.5-VL's long-context config: YaRN with the sections in the same block (its model card's
  // `"type": "yarn", "mrope_section": [16, 24, 24], "factor": 4, ...`): both are read.
  cfg.rope_scaling = {{"type", "yarn"},
                      {"mrope_section", {16, 24, 24}},
                      {"factor", 4},
                      {"original_max_position_embeddings", 32768}};
  m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.scaling.type, rope::scaling_type::yarn);
  EXPECT_EQ(m.scaling.factor, 4.0);
  EXPECT_EQ(m.scaling.original_max_position_embeddings, 32768);
  EXPECT_EQ(m.mrope.temporal, 16);
  EXPECT_EQ(m.mrope.height, 24);
  EXPECT_EQ(m.mrope.width, 24);
  EXPECT_NEAR(rope::compute_frequencies(m.spec, m.scaling).frequencies.attention_factor,
              1 + 0.1 * std::log(4.0), 1e-15);
  cfg.rope_scaling = {};
  m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.mrope.temporal + m.mrope.height + m.mrope.width, 0);
#if ROPE_HAS_EXCEPTIONS
  for (const auto& bad : std::vector<std::map<std::string, rope::config_value>>{
           {{"mrope_section", {16, 24, 23}}},
           {{"mrope_section", {16, 48}}},
           {{"mrope_section", {16.5, 23.5, 24}}},
           {{"mrope_section", 64}},
           {{"mrope_section", {4, 30, 30}}, {"mrope_interleaved", true}},
           {{"mrope_section", {16, 24, 24}}, {"mrope_interleaved", 1}},
           {{"type", "mrope"}},               // HF raises: no sections
           {{"mrope_interleaved", true}}}) {  // not plain RoPE without its sections
    cfg.rope_scaling = bad;
    expect_refused_naming_mrope(cfg, rope::layout::half_split);
  }
#endif
  // GLM-4.1V: Qwen2-VL's sections over half of each head (partial_rotary_factor 0.5).
  rope::model_config glm;
  glm.head_dim = 128;
  glm.partial_rotary_factor = 0.5;
  glm.rope_scaling = {{"type", "default"}, {"mrope_section", {8, 12, 12}}};
  m = rope::from_config(glm, rope::layout::interleaved);
  EXPECT_EQ(m.spec.rotary_dim, 64);
  EXPECT_EQ(m.mrope.temporal, 8);
  EXPECT_EQ(m.mrope.height, 12);
  EXPECT_EQ(m.mrope.width, 12);
  EXPECT_FALSE(m.mrope.interleaved || m.mrope.hw_alternating);
  // Qwen3.5's text config (v5 rope_parameters with theta and the partial factor inside): 32
  // pairs over the first 64 dims of heads of 256, Qwen3-VL's interleaved sections.
  rope::model_config qwen35;
  qwen35.head_dim = 256;
  qwen35.rope_scaling = {{"rope_type", "default"},          {"rope_theta", 10000000},
                         {"partial_rotary_factor", 0.25},   {"mrope_section", {11, 11, 10}},
                         {"mrope_interleaved", true}};
  m = rope::from_config(qwen35, rope::layout::half_split);
  EXPECT_EQ(m.spec.head_dim, 256);
  EXPECT_EQ(m.spec.rotary_dim, 64);
  EXPECT_EQ(m.spec.base, 1e7);
  EXPECT_EQ(m.mrope.temporal, 11);
  EXPECT_EQ(m.mrope.height, 11);
  EXPECT_EQ(m.mrope.width, 10);
  EXPECT_TRUE(m.mrope.interleaved);
  // ERNIE-4.5-VL (HF's text config: rope_parameters {"rope_theta": 500000, "mrope_section":
  // [22, 22, 20]}, interleaved pairs): by model_type, read as [height, width, temporal].
  rope::model_config ernie;
  ernie.rope_theta = 500000;
  ernie.head_dim = 128;
  ernie.rope_scaling = {{"mrope_section", {22, 22, 20}}};
  m = rope::from_config(ernie, rope::layout::interleaved);
  EXPECT_EQ(m.mrope.temporal, 22);  // without model_type: Qwen's reading
  EXPECT_FALSE(m.mrope.hw_alternating);
  for (const char* type : {"ernie4_5_vl_moe", "ernie4_5_vl_moe_text", "ernie4_5_moe_vl"}) {
    ernie.model_type = type;
    m = rope::from_config(ernie, rope::layout::interleaved);
    EXPECT_EQ(m.mrope.temporal, 20) << type;
    EXPECT_EQ(m.mrope.height, 22) << type;
    EXPECT_EQ(m.mrope.width, 22) << type;
    EXPECT_FALSE(m.mrope.interleaved) << type;
    EXPECT_TRUE(m.mrope.hw_alternating) << type;
  }
  ernie.model_type = "ernie4_5_moe";  // the text-only ERNIE 4.5: no M-RoPE keys to read
  m = rope::from_config(ernie, rope::layout::interleaved);
  EXPECT_FALSE(m.mrope.hw_alternating);
  ernie.model_type = "ernie4_5_vl_moe_vision";  // its vision tower: plain RoPE keys, no M-RoPE
  ernie.rope_scaling = {};
  m = rope::from_config(ernie, rope::layout::half_split);
  EXPECT_EQ(m.mrope.temporal + m.mrope.height + m.mrope.width, 0);
#if ROPE_HAS_EXCEPTIONS
  ernie.model_type = "ernie4_5_vl_moe";
  for (const auto& bad : std::vector<std::map<std::string, rope::config_value>>{
           {{"mrope_section", {22, 20, 22}}},  // height != width
           {{"mrope_section", {22, 22, 21}}},
           {{"mrope_section", {32, 32, 0}}},  // HF raises (inv_freq[:-0]); Baidu asserts
           {{"mrope_section", {22, 22, 20}}, {"mrope_interleaved", true}},
           {{"rope_type", "default"}}}) {  // HF's default sections are its own, not ours
    ernie.rope_scaling = bad;
    expect_refused_naming_mrope(ernie, rope::layout::interleaved);
  }
  // HF raises for any rope_type but default; vLLM's ERNIE-4.5-VL applies no scaling.
  // (The message, not only the key: yarn without max_position_embeddings is refused anyway.)
  for (const char* type : {"yarn", "linear", "mrope"}) {
    ernie.rope_scaling = {{"rope_type", type}, {"factor", 2.0}, {"mrope_section", {22, 22, 20}}};
    expect_refused_naming(ernie, rope::layout::interleaved, "must be default for model_type");
  }
  ernie.rope_scaling = {{"mrope_section", {11, 11, 10}}};  // HF, vLLM, Baidu: the whole head
  ernie.partial_rotary_factor = 0.5;
  expect_refused_naming(ernie, rope::layout::interleaved, "partial_rotary_factor");
  ernie.partial_rotary_factor = 1.0;
#endif
  // Baidu's own configs: model_type ernie4_5_moe_vl, a top-level freq_allocation (20 for the
  // 28B and 424B models) that the engine puts in rope_scaling; vLLM's sections
  // [(d/2 - f)/2, (d/2 - f)/2, f].
  ernie.model_type = "ernie4_5_moe_vl";
  for (int f = 2; f <= 64; f += 2) {
    ernie.rope_scaling = {{"freq_allocation", f}};
    m = rope::from_config(ernie, rope::layout::interleaved);
    EXPECT_EQ(m.mrope.temporal, f);
    EXPECT_EQ(m.mrope.height, (64 - f) / 2);
    EXPECT_EQ(m.mrope.width, (64 - f) / 2);
    EXPECT_TRUE(m.mrope.hw_alternating);
    EXPECT_FALSE(m.mrope.interleaved);
    ernie.rope_scaling["mrope_section"] = {(64.0 - f) / 2, (64.0 - f) / 2, static_cast<double>(f)};
    const rope::scaled_spec both = rope::from_config(ernie, rope::layout::interleaved);
    EXPECT_EQ(both.mrope.temporal, f);
    EXPECT_EQ(both.mrope.height, m.mrope.height);
  }
#if ROPE_HAS_EXCEPTIONS
  for (const auto& bad : std::vector<std::map<std::string, rope::config_value>>{
           {{"freq_allocation", 21}},  // 43 pairs left for height and width
           {{"freq_allocation", 0}},   // no temporal pair: HF and Baidu refuse
           {{"freq_allocation", 66}},
           {{"freq_allocation", 20.5}},
           {{"freq_allocation", "20"}},
           {{"freq_allocation", 20}, {"mrope_section", {24, 24, 16}}}}) {  // disagree
    ernie.rope_scaling = bad;
    expect_refused_naming(ernie, rope::layout::interleaved, "freq_allocation");
  }
  ernie.model_type = "";  // freq_allocation is ERNIE's: not plain RoPE for another model
  ernie.rope_scaling = {{"freq_allocation", 20}};
  expect_refused_naming(ernie, rope::layout::interleaved, "freq_allocation");
#endif
}

// openPangu's order against listings made outside this file: (2, 3, 3) with force_last is
// [0, 1, 2, 1, 2, 1, 2, 0] (another project's test of get_mrope_interleaved_id_list), and
// Pangu 30B-A2B's [6, 5, 5] happens to be Qwen3-VL's interleaved order (0, 1, 2 repeated, then
// 0), which most other sections are not: openPangu-VL's [16, 8, 8] as Huawei's Python function
// lists it (run outside this file) differs from Qwen3-VL's at 15 of 32 pairs.
TEST(Mrope, OpenPanguOrderMatchesItsListings) {
  const int a[3] = {2, 3, 3};
  EXPECT_EQ(hf_streams(a, order::pangu, 8), (std::vector<int>{0, 1, 2, 1, 2, 1, 2, 0}));
  const int b[3] = {6, 5, 5};
  EXPECT_EQ(hf_streams(b, order::pangu, 16), hf_streams(b, order::interleaved, 16));
  const int c[3] = {16, 8, 8};
  const std::vector<int> pangu = hf_streams(c, order::pangu, 32);
  EXPECT_EQ(pangu, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 0, 2, 0, 1, 0, 2, 0, 1,
                                     0, 2, 0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 0, 2, 0, 0}));
  const std::vector<int> qwen = hf_streams(c, order::interleaved, 32);
  int differ = 0;
  for (std::size_t j = 0; j < 32; ++j) differ += pangu[j] != qwen[j];
  EXPECT_EQ(differ, 15);
}

// rope::mrope_pair_streams lists apply_mrope's map: each model's, as the oracle assigns it, and
// false with nothing written for sections that do not fit.
TEST(Mrope, PairStreamsListEachOrder) {
  for (const model& m : kModels) {
    const int pairs = m.section[0] + m.section[1] + m.section[2];
    std::vector<unsigned char> got(static_cast<std::size_t>(pairs) + 1, 7);
    ASSERT_TRUE(rope::mrope_pair_streams(sections_of(m), 2 * pairs, got.data())) << m.name;
    const std::vector<int> want = hf_streams(m.section, m.kind, pairs);
    for (std::size_t j = 0; j < want.size(); ++j)
      EXPECT_EQ(got[j], want[j]) << m.name << " pair " << j;
    EXPECT_EQ(got[static_cast<std::size_t>(pairs)], 7) << m.name;  // nothing past the pairs
    std::vector<unsigned char> untouched(got.size(), 7);
    EXPECT_FALSE(rope::mrope_pair_streams(sections_of(m), 2 * pairs + 2, untouched.data()));
    EXPECT_FALSE(rope::mrope_pair_streams(sections_of(m), 2 * pairs, nullptr));
    EXPECT_EQ(untouched, std::vector<unsigned char>(got.size(), 7)) << m.name;
  }
  std::vector<unsigned char> out(16, 7);
  EXPECT_FALSE(rope::mrope_pair_streams(rope::mrope_sections{0, 8, 8, false, false, true}, 32,
                                        out.data()));  // balanced: its last pair is temporal
  EXPECT_FALSE(rope::mrope_pair_streams(rope::mrope_sections{8, 4, 4, false, true, true}, 32,
                                        out.data()));  // two orders
  EXPECT_EQ(out, std::vector<unsigned char>(16, 7));
}

// Bailing's configs (model_type bailing_moe_v3_vl, bailing_hybrid: mrope_section [t, h, w], h
// and w alternating) and openPangu's (openpangu_vl, PanguEmbedded: mrope_interleaved in its
// balanced order) by model_type; other model types keep Qwen's readings.
TEST(Mrope, FromConfigReadsBailingAndOpenPangu) {
  rope::model_config bailing;
  bailing.rope_theta = 6e6;
  bailing.head_dim = 128;
  bailing.qk_rope_head_dim = 64;
  bailing.rope_scaling = {{"rope_type", "default"},
                          {"partial_rotary_factor", 0.5},
                          {"mrope_section", {8, 12, 12}}};
  for (const char* type : {"bailing_moe_v3_vl", "bailing_hybrid", "bailingmm_moe_v2_lite"}) {
    bailing.model_type = type;
    const rope::scaled_spec m = rope::from_config(bailing, rope::layout::interleaved);
    EXPECT_EQ(m.spec.rotary_dim, 64) << type;
    EXPECT_EQ(m.mrope.temporal, 8) << type;
    EXPECT_EQ(m.mrope.height, 12) << type;
    EXPECT_EQ(m.mrope.width, 12) << type;
    EXPECT_TRUE(m.mrope.hw_alternating) << type;
    EXPECT_FALSE(m.mrope.interleaved || m.mrope.balanced) << type;
  }
  bailing.rope_scaling["mrope_section"] = {32, 0, 0};  // no spatial pairs: vLLM accepts it
  EXPECT_EQ(rope::from_config(bailing, rope::layout::interleaved).mrope.temporal, 32);
  bailing.model_type = "";  // without it: Qwen's consecutive sections
  bailing.rope_scaling["mrope_section"] = {8, 12, 12};
  EXPECT_FALSE(rope::from_config(bailing, rope::layout::interleaved).mrope.hw_alternating);
  // sglang's switch, video_rope: true beside mrope_section, under any model_type (its Bailing
  // config classes add it); false, or without sections (sglang then runs plain RoPE), no change.
  for (const char* type : {"", "bailing_moe_v2", "qwen2_vl"}) {
    bailing.model_type = type;
    bailing.rope_scaling["video_rope"] = true;
    const rope::mrope_sections got = rope::from_config(bailing, rope::layout::interleaved).mrope;
    EXPECT_TRUE(got.hw_alternating && got.temporal == 8 && got.height == 12) << type;
    bailing.rope_scaling["video_rope"] = false;
    EXPECT_EQ(rope::from_config(bailing, rope::layout::interleaved).mrope.hw_alternating,
              std::string(type).rfind("bailing", 0) == 0)
        << type;
  }
  bailing.rope_scaling = {{"video_rope", true}, {"factor", 0.5}};  // no sections: plain RoPE
  for (const char* type : {"", "openpangu_vl"}) {  // (ignored, as sglang does)
    bailing.model_type = type;
    EXPECT_EQ(rope::from_config(bailing, rope::layout::interleaved).mrope.temporal, 0) << type;
  }
  bailing.model_type = "openpangu_vl";  // consecutive sections (no mrope_interleaved): Bailing's
  bailing.rope_scaling = {{"mrope_section", {8, 12, 12}}, {"video_rope", true}};
  EXPECT_TRUE(rope::from_config(bailing, rope::layout::interleaved).mrope.hw_alternating);
  bailing.model_type = "";
  bailing.rope_scaling = {{"partial_rotary_factor", 0.5},  // a factor sglang ignores (<= 1)
                          {"mrope_section", {8, 12, 12}},
                          {"video_rope", true},
                          {"factor", 1.0}};
  EXPECT_TRUE(rope::from_config(bailing, rope::layout::interleaved).mrope.hw_alternating);
#if ROPE_HAS_EXCEPTIONS
  // A factor > 1 under rope_type default: sglang's Bailing runs YaRN by it, vLLM ignores it;
  // refused whether the model_type or video_rope chose Bailing's order, naming which.
  bailing.rope_scaling["factor"] = 4.0;
  bailing.model_type = "qwen2_vl";
  expect_refused_naming(bailing, rope::layout::interleaved,
                        "factor=4 with Bailing's M-RoPE (video_rope true)");
  bailing.rope_scaling.erase("video_rope");
  EXPECT_FALSE(rope::from_config(bailing, rope::layout::interleaved).mrope.hw_alternating);
  bailing.model_type = "bailing_moe_v3_vl";
  expect_refused_naming(bailing, rope::layout::interleaved,
                        "factor=4 with Bailing's M-RoPE (model_type bailing_moe_v3_vl)");
  bailing.rope_scaling = {{"mrope_section", {8, 12, 12}}, {"video_rope", 1.0}};  // not a bool
  expect_refused_naming(bailing, rope::layout::interleaved, "video_rope");
  bailing.rope_scaling = {{"mrope_section", {8, 12, 12}},  // two orders
                          {"video_rope", true},
                          {"mrope_interleaved", true}};
  expect_refused_naming(bailing, rope::layout::interleaved, "mrope_interleaved");
  bailing.model_type = "ernie4_5_vl_moe";
  bailing.rope_scaling = {{"mrope_section", {8, 12, 12}}, {"video_rope", true}};
  expect_refused_naming(bailing, rope::layout::interleaved, "video_rope=true");
  bailing.model_type = "openpangu_vl";  // openPangu's balanced order: two orders
  bailing.rope_scaling["mrope_interleaved"] = true;
  expect_refused_naming(bailing, rope::layout::interleaved, "mrope_interleaved=true");
  bailing.model_type = "hunyuan_vl";
  bailing.rope_scaling = {{"xdrope_section", {8, 8, 8, 8}}, {"video_rope", true}};
  expect_refused_naming(bailing, rope::layout::interleaved, "video_rope=true");
  bailing.model_type = "";
  bailing.rope_scaling = {{"rope_type", "yarn"},  // sglang only: refused like Bailing's yarn
                          {"factor", 2.0},
                          {"original_max_position_embeddings", 4096},
                          {"mrope_section", {8, 12, 12}},
                          {"video_rope", true}};
  expect_refused_naming(bailing, rope::layout::interleaved,
                        "must be default for video_rope true with mrope_section (sglang");
  bailing.model_type = "bailing_moe_v3_vl";
  for (const auto& bad : std::vector<std::map<std::string, rope::config_value>>{
           {{"mrope_section", {8, 14, 10}}},  // height != width
           {{"mrope_section", {8, 12, 12}}, {"mrope_interleaved", true}}}) {
    bailing.rope_scaling = bad;
    expect_refused_naming_mrope(bailing, rope::layout::interleaved);
  }
  bailing.rope_scaling = {{"rope_type", "yarn"},  // vLLM's Bailing M-RoPE raises
                          {"factor", 2.0},
                          {"original_max_position_embeddings", 4096},
                          {"mrope_section", {8, 12, 12}}};
  expect_refused_naming(bailing, rope::layout::interleaved, "must be default for model_type");
  bailing.rope_scaling = {{"rope_type", "yarn"},  // without sections: Bailing's text models
                          {"factor", 2.0},
                          {"original_max_position_embeddings", 4096}};
  EXPECT_EQ(rope::from_config(bailing, rope::layout::interleaved).scaling.type,
            rope::scaling_type::yarn);
#endif
  rope::model_config pangu;
  pangu.rope_theta = 1e4;
  pangu.head_dim = 64;
  pangu.rope_scaling = {{"rope_type", "default"},
                        {"mrope_section", {16, 8, 8}},
                        {"mrope_interleaved", true}};
  for (const char* type : {"openpangu_vl", "openpangu_vl_text", "PanguEmbedded"}) {
    pangu.model_type = type;
    const rope::scaled_spec m = rope::from_config(pangu, rope::layout::half_split);
    EXPECT_EQ(m.mrope.temporal, 16) << type;
    EXPECT_EQ(m.mrope.height, 8) << type;
    EXPECT_TRUE(m.mrope.balanced) << type;
    EXPECT_FALSE(m.mrope.interleaved || m.mrope.hw_alternating) << type;
  }
  pangu.model_type = "qwen3_vl";
  EXPECT_TRUE(rope::from_config(pangu, rope::layout::half_split).mrope.interleaved);
  pangu.model_type = "openpangu_vl";  // Pangu without mrope_interleaved: consecutive sections
  pangu.rope_scaling.erase("mrope_interleaved");
  const rope::scaled_spec plain = rope::from_config(pangu, rope::layout::half_split);
  EXPECT_FALSE(plain.mrope.balanced || plain.mrope.interleaved || plain.mrope.hw_alternating);
  // vLLM's own name for it (OpenPanguEmbeddedAttention rewrites the rope_type), any model_type.
  pangu.model_type = "qwen2_moe";
  pangu.rope_scaling = {{"rope_type", "openpangu"},
                        {"mrope_section", {16, 8, 8}},
                        {"mrope_interleaved", true}};
  EXPECT_TRUE(rope::from_config(pangu, rope::layout::half_split).mrope.balanced);
#if ROPE_HAS_EXCEPTIONS
  pangu.rope_scaling.erase("mrope_interleaved");  // vLLM's MRotaryEmbeddingInterleaved raises
  expect_refused_naming(pangu, rope::layout::half_split, "mrope_interleaved");
  pangu.rope_scaling = {{"rope_type", "openpangu"}, {"mrope_interleaved", true}};
  expect_refused_naming_mrope(pangu, rope::layout::half_split);
  pangu.model_type = "openpangu_vl";
  pangu.rope_scaling = {{"mrope_section", {0, 16, 16}}, {"mrope_interleaved", true}};
  expect_refused_naming_mrope(pangu, rope::layout::half_split);  // its last pair is temporal
#endif
}

// ---- Vision encoders' 2-D RoPE (README "Vision encoders"): each recipe against a long double
// transcription of the model's HF code (its cos/sin vectors assembled as HF assembles them,
// then x * cos + rotate_half(x) * sin; Mistral's complex product for Pixtral's own layout),
// with the formula's frequencies in long double. Patches at (row, col) in [0, 2048).

struct patches {
  std::vector<std::int64_t> row, col;
};
patches some_patches(std::size_t n, std::uint64_t seed) {
  patches p;
  std::mt19937_64 gen(seed);
  for (std::size_t t = 0; t < n; ++t) {
    const bool corner = t < 4;  // (0, 0), (0, 1), (1, 0), (1, 1) first
    p.row.push_back(corner ? static_cast<std::int64_t>(t / 2) : static_cast<std::int64_t>(gen() % 2048));
    p.col.push_back(corner ? static_cast<std::int64_t>(t % 2) : static_cast<std::int64_t>(gen() % 2048));
  }
  return p;
}

// HF's apply_rotary_pos_emb on one block of e.size() dims: x * cos(e) + rotate_half(x) * sin(e).
// Pixtral's, Llama 4's and MoonViT's view_as_complex(x) * polar(1, e): complex pair m (dims
// 2m, 2m + 1) turned by e[m], for e.size() pairs.
std::vector<ld> complex_pairs(const float* x, const std::vector<ld>& e) {
  std::vector<ld> out(2 * e.size());
  for (std::size_t m = 0; m < e.size(); ++m) {
    const std::complex<ld> r = std::complex<ld>(x[2 * m], x[2 * m + 1]) * std::polar(ld{1}, e[m]);
    out[2 * m] = r.real();
    out[2 * m + 1] = r.imag();
  }
  return out;
}

std::vector<ld> hf_rotate_half(const float* x, const std::vector<ld>& e) {
  const std::size_t n = e.size(), h = n / 2;
  std::vector<ld> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const ld rh = i < h ? -static_cast<ld>(x[i + h]) : static_cast<ld>(x[i - h]);
    out[i] = static_cast<ld>(x[i]) * std::cos(e[i]) + rh * std::sin(e[i]);
  }
  return out;
}

// HF's torch.cat((freqs, freqs), dim=-1): the angles twice.
std::vector<ld> twice(std::vector<ld> e) {
  const std::size_t m = e.size();
  e.resize(2 * m);
  std::copy_n(e.begin(), m, e.begin() + static_cast<std::ptrdiff_t>(m));
  return e;
}

// Largest |got - want| over the norm of the element's pair (partner(i)), for every element of
// n tokens x H heads x D dims; the README's float bound is 3 * 2^-24 of it.
template <class Want, class Partner>
ld worst_relative(const std::vector<float>& x, const std::vector<float>& got, std::size_t n, int H,
                  int D, Want want, Partner partner) {
  ld worst = 0;
  const auto d = static_cast<std::size_t>(D);
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t h = 0; h < static_cast<std::size_t>(H); ++h) {
      const std::size_t off = (t * static_cast<std::size_t>(H) + h) * d;
      const std::vector<ld> w = want(t, x.data() + off);
      for (std::size_t i = 0; i < d; ++i) {
        const ld r = std::hypot(static_cast<ld>(x[off + i]), static_cast<ld>(x[off + partner(i)]));
        worst = std::max(worst, std::fabs(static_cast<ld>(got[off + i]) - w[i]) / r);
      }
    }
  return worst;
}

// Qwen2-VL / Qwen2.5-VL vision: heads of 80 (1280 / 16), VisionRotaryEmbedding(40), theta 1e4:
// HF's 40 angles per patch are [row * w_0..19, col * w_0..19] with w_k = 1e4^(-2k/40), taken
// twice (cat) and applied with rotate_half over the whole head: pair i (dims i, i + 40) turns
// by row * w_i for i < 20, by col * w_(i-20) after. As rope: a half-split table whose 40
// frequencies are w_0..19 twice, and M-RoPE sections {0, 20, 20} fed the rows and columns.
TEST(VisionRope, Qwen2VlRowsThenColumnsOverTheWholeHead) {
  constexpr int D = 80, H = 3;
  const std::size_t n = 40;
  const rope::frequencies half =
      rope::default_frequencies(rope::make_spec(D / 2, D / 2, 1e4, rope::layout::half_split));
  rope::frequencies f;
  f.rotary_dim = D;
  f.inv_freq = half.inv_freq;
  f.inv_freq.insert(f.inv_freq.end(), half.inv_freq.begin(), half.inv_freq.end());
  f.description = "qwen2-vl vision";
  rope::table_cache cache;
  auto tab = cache.get<float>(f, rope::layout::half_split, 2048);
  const patches p = some_patches(n, 21);
  const std::vector<float> x = random_rows(n * H * D, 22);
  std::vector<float> got = x;
  ASSERT_EQ(rope::apply_mrope<float>(
                *tab, rope::mrope_sections{0, D / 4, D / 4},
                rope::heads_view<float>{got.data(), static_cast<std::ptrdiff_t>(n), H, D, H * D, D},
                p.row.data(), p.row.data(), p.col.data()),
            rope::status::ok);
  const std::vector<ld> w = oracle::inv_freq(1e4, D / 2);
  const ld worst = worst_relative(
      x, got, n, H, D,
      [&](std::size_t t, const float* row) {
        std::vector<ld> e;  // HF: rotary_pos_emb = [h * w, w * w]; emb = cat(that, that)
        for (ld wk : w) e.push_back(static_cast<ld>(p.row[t]) * wk);
        for (ld wk : w) e.push_back(static_cast<ld>(p.col[t]) * wk);
        return hf_rotate_half(row, twice(e));
      },
      [](std::size_t i) { return (i + D / 2) % D; });
  EXPECT_LE(worst, 3 * 0x1p-24L);
  std::printf("vision qwen2-vl (D 80): worst %.3Lf x 2^-24 r\n", worst * 0x1p24L);
}

// Pixtral: heads of 64, theta 1e4, f_k = 1e4^(-2k/64); rows take the even f_k, columns the odd
// ones. HF (rotate_half over the head, pairs (i, i + 32)): angles [row * f_0, f_2, ..., f_30,
// col * f_1, ..., f_31], cat twice. Mistral's own code and vLLM (complex product on pairs
// (2m, 2m + 1)): the same 32 angles, one per pair. As rope: both are a table listing f_0, f_2,
// ..., f_30, f_1, ..., f_31 (half-split for HF's weights, interleaved for Mistral's) and
// sections {0, 16, 16}.
TEST(VisionRope, PixtralRowsTakeEvenFrequenciesColumnsOdd) {
  constexpr int D = 64, H = 2;
  const std::size_t n = 40;
  const rope::frequencies all =
      rope::default_frequencies(rope::make_spec(D, D, 1e4, rope::layout::half_split));
  rope::frequencies f;
  f.rotary_dim = D;
  for (int parity : {0, 1})
    for (std::size_t k = static_cast<std::size_t>(parity); k < all.inv_freq.size(); k += 2)
      f.inv_freq.push_back(all.inv_freq[k]);
  f.description = "pixtral vision";
  const std::vector<ld> fk = oracle::inv_freq(1e4, D);
  const patches p = some_patches(n, 31);
  const std::vector<float> x = random_rows(n * H * D, 32);
  auto angles = [&](std::size_t t) {  // HF's freqs: cat(row * f[::2], col * f[1::2])
    std::vector<ld> e;
    for (std::size_t k = 0; k < fk.size(); k += 2) e.push_back(static_cast<ld>(p.row[t]) * fk[k]);
    for (std::size_t k = 1; k < fk.size(); k += 2) e.push_back(static_cast<ld>(p.col[t]) * fk[k]);
    return e;
  };
  rope::table_cache cache;
  for (rope::layout l : kLayouts) {
    auto tab = cache.get<float>(f, l, 2048);
    std::vector<float> got = x;
    ASSERT_EQ(rope::apply_mrope<float>(
                  *tab, rope::mrope_sections{0, D / 4, D / 4},
                  rope::heads_view<float>{got.data(), static_cast<std::ptrdiff_t>(n), H, D, H * D, D},
                  p.row.data(), p.row.data(), p.col.data()),
              rope::status::ok);
    ld worst;
    if (l == rope::layout::half_split) {
      worst = worst_relative(
          x, got, n, H, D,
          [&](std::size_t t, const float* row) {
            return hf_rotate_half(row, twice(angles(t)));
          },
          [](std::size_t i) { return (i + D / 2) % D; });
    } else {
      worst = worst_relative(
          x, got, n, H, D,
          [&](std::size_t t, const float* row) {  // view_as_complex(x) * freqs_cis
            return complex_pairs(row, angles(t));
          },
          [](std::size_t i) { return i ^ 1u; });
    }
    EXPECT_LE(worst, 3 * 0x1p-24L) << rope::to_string(l);
    std::printf("vision pixtral (D 64, %s): worst %.3Lf x 2^-24 r\n", rope::to_string(l),
                worst * 0x1p24L);
  }
}

// MoonViT (Kimi-VL, Kimi K2.5's vision tower: heads of 72, theta 1e4): Rope2DPosEmb stacks
// x (column) and y (row) angles per frequency f_k = 1e4^(-4k/D), k < D/4, so complex pair m
// (dims 2m, 2m + 1) turns by col * f_(m/2) for even m and row * f_((m-1)/2) for odd m. As rope:
// an interleaved table listing f_0, f_0, f_1, f_1, ..., and alternating sections {0, D/4, D/4}
// fed the columns as "height" (even pairs) and the rows as "width" (odd pairs).
TEST(VisionRope, MoonVitColumnsAtEvenPairsRowsAtOdd) {
  constexpr int D = 72, H = 2;
  const std::size_t n = 40;
  const rope::frequencies half =
      rope::default_frequencies(rope::make_spec(D / 2, D / 2, 1e4, rope::layout::interleaved));
  rope::frequencies f;
  f.rotary_dim = D;
  for (double w : half.inv_freq) f.inv_freq.insert(f.inv_freq.end(), {w, w});
  f.description = "moonvit";
  const std::vector<ld> fk = oracle::inv_freq(1e4, D / 2);  // 1e4^(-2k/(D/2)) = 1e4^(-4k/D)
  const patches p = some_patches(n, 41);
  const std::vector<float> x = random_rows(n * H * D, 42);
  rope::table_cache cache;
  auto tab = cache.get<float>(f, rope::layout::interleaved, 2048);
  std::vector<float> got = x;
  ASSERT_EQ(rope::apply_mrope<float>(
                *tab, rope::mrope_sections{0, D / 4, D / 4, false, true},
                rope::heads_view<float>{got.data(), static_cast<std::ptrdiff_t>(n), H, D, H * D, D},
                p.col.data(), p.col.data(), p.row.data()),
            rope::status::ok);
  const ld worst = worst_relative(
      x, got, n, H, D,
      [&](std::size_t t, const float* row) {  // view_as_complex(x) * freqs_cis
        std::vector<ld> e(D / 2);
        for (std::size_t m = 0; m < e.size(); ++m)
          e[m] = static_cast<ld>(m % 2 == 0 ? p.col[t] : p.row[t]) * fk[m / 2];
        return complex_pairs(row, e);
      },
      [](std::size_t i) { return i ^ 1u; });
  EXPECT_LE(worst, 3 * 0x1p-24L);
  std::printf("vision moonvit (D 72): worst %.3Lf x 2^-24 r\n", worst * 0x1p24L);
}

// Gemma 4's vision tower: heads of 64 (E2B, E4B) or 72 (26B-A4B, 31B), theta 100. HF splits each
// head in two halves of D / 2 and rotates each with its own rotate_half, the first by the
// patch's x (column), the second by its y (row), w_k = 100^(-2k/(D/2)). As rope: one plain
// spec of width D / 2 and two rope::apply calls on views of the two halves (head stride D),
// which keeps rope::apply's SIMD kernels.
TEST(VisionRope, Gemma4EachHalfOfTheHeadIsOneCoordinate) {
  for (int D : {64, 72}) {
    constexpr int H = 2;
    const std::size_t n = 40;
    const int half = D / 2;
    auto tab = rope::get_table<float>(rope::make_spec(half, half, 100, rope::layout::half_split), 2048);
    const patches p = some_patches(n, 41);
    const std::vector<float> x = random_rows(n * static_cast<std::size_t>(H * D), 42);
    std::vector<float> got = x;
    const auto N = static_cast<std::ptrdiff_t>(n);
    ASSERT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{got.data(), N, H, half, H * D, D},
                                 p.col.data()),
              rope::status::ok);
    ASSERT_EQ(rope::apply<float>(
                  *tab, rope::heads_view<float>{got.data() + half, N, H, half, H * D, D},
                  p.row.data()),
              rope::status::ok);
    const std::vector<ld> w = oracle::inv_freq(100, half);
    const auto hs = static_cast<std::size_t>(half);
    const ld worst = worst_relative(
        x, got, n, H, D,
        [&](std::size_t t, const float* row) {
          std::vector<ld> out;
          for (const std::int64_t pos : {p.col[t], p.row[t]}) {  // position_ids[..., 0] is x
            std::vector<ld> e;
            for (ld wk : w) e.push_back(static_cast<ld>(pos) * wk);
            const std::vector<ld> r = hf_rotate_half(row + out.size(), twice(e));
            out.insert(out.end(), r.begin(), r.end());
          }
          return out;
        },
        [&](std::size_t i) { return i / hs * hs + (i % hs + hs / 2) % hs; });
    EXPECT_LE(worst, 3 * 0x1p-24L) << "D " << D;
    std::printf("vision gemma4 (D %d): worst %.3Lf x 2^-24 r\n", D, worst * 0x1p24L);
  }
}

// Llama 4's vision tower (Scout, Maverick): heads of 88 (hidden 1408, 16 heads), theta 1e4,
// patches in raster order on an image_size / patch_size = 24 grid and the CLS token last. HF's
// Llama4VisionRotaryEmbedding, transcribed: freq_dim = D / 2, rope_freq_k = theta^(-2k /
// freq_dim) for k < freq_dim / 2, freqs_x = repeat_interleave((x + 1) * rope_freq, 2) (x the
// column), freqs_y the same with the row, freqs = cat(freqs_x, freqs_y)[::2], zeroed for the CLS
// token (its index -2), and each complex pair (2m, 2m + 1) of the head multiplied by
// e^(i freqs_m). So the first half of the head is an interleaved rotation by column + 1 and the
// second half by row + 1, CLS by 0: two rope::apply calls on the halves (the Gemma 4 recipe,
// interleaved, positions one more).
TEST(VisionRope, Llama4EachHalfOfTheHeadInterleavedAtPositionPlusOne) {
  constexpr int D = 88, H = 2, idx = 24;
  const std::size_t n = idx * idx + 1;  // HF: img_idx = arange(idx^2), then CLS (-2) appended
  std::vector<std::int64_t> img_idx(n);
  for (std::size_t t = 0; t + 1 < n; ++t) img_idx[t] = static_cast<std::int64_t>(t);
  img_idx[n - 1] = -2;
  // rope's positions: column + 1 and row + 1, 0 for the CLS token.
  std::vector<std::int64_t> x_pos(n), y_pos(n);
  for (std::size_t t = 0; t < n; ++t) {
    x_pos[t] = img_idx[t] < 0 ? 0 : img_idx[t] % idx + 1;
    y_pos[t] = img_idx[t] < 0 ? 0 : img_idx[t] / idx + 1;
  }
  const int half = D / 2;
  auto tab = rope::get_table<float>(rope::make_spec(half, half, 1e4, rope::layout::interleaved), 64);
  const std::vector<float> x = random_rows(n * static_cast<std::size_t>(H * D), 51);
  std::vector<float> got = x;
  const auto N = static_cast<std::ptrdiff_t>(n);
  ASSERT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{got.data(), N, H, half, H * D, D},
                               x_pos.data()),
            rope::status::ok);
  ASSERT_EQ(rope::apply<float>(*tab, rope::heads_view<float>{got.data() + half, N, H, half, H * D, D},
                               y_pos.data()),
            rope::status::ok);
  // HF's rope_freq: theta^(-arange(0, freq_dim, 2)[: freq_dim // 2] / freq_dim), freq_dim = D / 2.
  const std::vector<ld> rope_freq = oracle::inv_freq(1e4, D / 2);
  const ld worst = worst_relative(
      x, got, n, H, D,
      [&](std::size_t t, const float* row) {
        // img_idx % idx and // idx (for the CLS token Python's floor division gives 22 and -1;
        // its angles are zeroed below whatever they are)
        const std::int64_t fx = img_idx[t] % idx, fy = img_idx[t] / idx;
        std::vector<ld> freqs;  // cat(repeat_interleave(...x), repeat_interleave(...y))
        for (const std::int64_t c : {fx, fy})
          for (ld w : rope_freq)
            for (int rep = 0; rep < 2; ++rep) freqs.push_back(static_cast<ld>(c + 1) * w);
        std::vector<ld> e(D / 2);
        for (std::size_t m = 0; m < e.size(); ++m)
          e[m] = img_idx[t] < 0 ? 0 : freqs[2 * m];  // [..., ::2], masked_fill
        return complex_pairs(row, e);
      },
      [](std::size_t i) { return i ^ 1u; });
  EXPECT_LE(worst, 3 * 0x1p-24L);
  std::printf("vision llama4 (D 88): worst %.3Lf x 2^-24 r\n", worst * 0x1p24L);
}

// ---- XD-RoPE (HunyuanOCR, Hunyuan-VL): four positions per token (sequence position, column,
// row, image index), each pair taking its section's. The oracle restates Tencent's
// apply_rotary_pos_emb_xdrope: cos/sin over the 2 * pairs elements (torch.cat((freqs,
// freqs))) split by xdrope_section * 2 (the list repeated: eight chunks), chunk i taking stream
// i % 4, then x * cos + rotate_half(x) * sin, in long double.

rope::model_config hunyuan_ocr() {  // HunyuanOCR's text config
  rope::model_config cfg;
  cfg.rope_theta = 10000;
  cfg.head_dim = 128;
  cfg.max_position_embeddings = 32768;
  cfg.rope_scaling = {{"type", "xdrope"},   {"alpha", 1000.0},  {"factor", 1.0},
                      {"beta_fast", 32},    {"beta_slow", 1},   {"mscale", 1.0},
                      {"mscale_all_dim", 1.0}, {"xdrope_section", {16, 16, 16, 16}}};
  return cfg;
}

// n tokens: text (four equal positions), then an image of 3 rows of 4 columns plus a newline
// column (Tencent's merger appends one per row) at image index 1, then text; the sequence
// position starts at base.
std::array<std::vector<std::int64_t>, 4> xd_positions(std::size_t n, std::int64_t base) {
  std::array<std::vector<std::int64_t>, 4> p;
  for (std::size_t t = 0; t < n; ++t) {
    const std::int64_t q = base + static_cast<std::int64_t>(t);
    const bool image = t >= 3 && t < 18;
    const std::int64_t i = image ? static_cast<std::int64_t>(t - 3) : 0;
    p[0].push_back(q);
    p[1].push_back(image ? i % 5 : q);
    p[2].push_back(image ? i / 5 : q);
    p[3].push_back(image ? 1 : q);
  }
  return p;
}

TEST(XdRope, TencentsSplitOverFourPositions) {
  const rope::scaled_spec m = rope::from_config(hunyuan_ocr(), rope::layout::half_split);
  const rope::xdrope_sections sec = m.xdrope;
  const int D = 128, H = 3;
  const std::size_t n = 24, d = static_cast<std::size_t>(D), P = d / 2;
  for (const std::int64_t base : {std::int64_t{0}, std::int64_t{100000}}) {
    auto tab = rope::get_table<float>(m.spec, m.scaling, 0, base + 64);
    const auto pos = xd_positions(n, base);
    const std::int64_t* s[4] = {pos[0].data(), pos[1].data(), pos[2].data(), pos[3].data()};
    const std::vector<float> x = random_rows(n * H * d, 31);
    const auto xv = rope::packed_heads(x.data(), static_cast<std::ptrdiff_t>(n), H, D);
    std::vector<float> got(x.size());
    const auto N = static_cast<std::ptrdiff_t>(n);
    ASSERT_EQ(rope::apply_xdrope<float>(*tab, sec, rope::heads_view<const float>(xv),
                                        rope::packed_heads(got.data(), N, H, D), s[0], s[1], s[2],
                                        s[3]),
              rope::status::ok);
    // Tencent's angles: element e in chunk e / 16 of xdrope_section * 2, stream (e / 16) % 4.
    const int sections2[8] = {16, 16, 16, 16, 16, 16, 16, 16};
    const ld worst = worst_relative(
        x, got, n, H, D,
        [&](std::size_t t, const float* row) {
          std::vector<ld> e(d);
          std::size_t at = 0;
          for (int c = 0; c < 8; ++c)
            for (int k = 0; k < sections2[c]; ++k, ++at)
              e[at] = static_cast<ld>(s[c % 4][t]) * static_cast<ld>(tab->inv_freq()[at % P]);
          return hf_rotate_half(row, e);
        },
        [&](std::size_t i) { return i < P ? i + P : i - P; });
    EXPECT_LE(worst, 3 * 0x1p-24L) << "base " << base;
    std::printf("xdrope base %lld: worst %.3Lf x 2^-24 r\n", static_cast<long long>(base),
                worst * 0x1p24L);
  }
}

// Each pair, bit for bit, is rope::apply's result at its section's position: both layouts,
// forward and inverse, float and fp16 outputs, out of place, in place, and q and k (one key
// head against two query heads) in one call; text tokens are rope::apply's.
template <class TOut>
void check_xdrope_pairs(rope::layout l, rope::direction dir) {
  const int D = 96, H = 2;
  const std::size_t n = 24, d = static_cast<std::size_t>(D), P = d / 2;
  const rope::xdrope_sections sec{10, 14, 14, 10};
  auto tab = rope::get_table<float>(rope::make_spec(D, D, 1e6, l), 4096);
  const auto pos = xd_positions(n, 2000);
  const std::int64_t* s[4] = {pos[0].data(), pos[1].data(), pos[2].data(), pos[3].data()};
  const std::vector<float> x = random_rows(n * H * d, 33);
  const auto N = static_cast<std::ptrdiff_t>(n);
  const auto xv = rope::heads_view<const float>(rope::packed_heads(x.data(), N, H, D));
  std::vector<TOut> got(x.size()), by[4];
  ASSERT_EQ(rope::apply_xdrope<float>(*tab, sec, xv, rope::packed_heads(got.data(), N, H, D), s[0],
                                      s[1], s[2], s[3], dir),
            rope::status::ok);
  for (int k = 0; k < 4; ++k) {
    by[k].resize(x.size());
    ASSERT_EQ(rope::apply<float>(*tab, xv, rope::packed_heads(by[k].data(), N, H, D), s[k], dir),
              rope::status::ok);
  }
  const int first[5] = {0, sec.position, sec.position + sec.width,
                        sec.position + sec.width + sec.height, D / 2};
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t h = 0; h < static_cast<std::size_t>(H); ++h)
      for (std::size_t j = 0; j < P; ++j) {
        int k = 0;
        while (static_cast<int>(j) >= first[k + 1]) ++k;
        const std::size_t off = (t * static_cast<std::size_t>(H) + h) * d;
        for (std::size_t i : {oracle::first(l, j, P), oracle::second(l, j, P)})
          ASSERT_EQ(0, std::memcmp(&got[off + i], &by[k][off + i], sizeof(TOut)))
              << rope::to_string(l) << " token " << t << " pair " << j << " stream " << k;
      }
  for (std::size_t t : {std::size_t{0}, std::size_t{2}, std::size_t{20}})  // text tokens
    EXPECT_EQ(0, std::memcmp(&got[t * H * d], &by[0][t * H * d], H * d * sizeof(TOut)));
  if constexpr (std::is_same<TOut, float>::value) {
    std::vector<float> y = x;
    ASSERT_EQ(rope::apply_xdrope<float>(*tab, sec, rope::packed_heads(y.data(), N, H, D), s[0],
                                        s[1], s[2], s[3], dir),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(y.data(), got.data(), y.size() * sizeof(float)));
    std::vector<float> q = x, k(n * d);  // k: each token's first head
    for (std::size_t t = 0; t < n; ++t)
      std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(t * H * d), d,
                  k.begin() + static_cast<std::ptrdiff_t>(t * d));
    ASSERT_EQ(rope::apply_qk_xdrope<float>(*tab, sec, rope::packed_heads(q.data(), N, H, D),
                                           rope::packed_heads(k.data(), N, 1, D), s[0], s[1],
                                           s[2], s[3], dir),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(q.data(), got.data(), q.size() * sizeof(float)));
    for (std::size_t t = 0; t < n; ++t)
      EXPECT_EQ(0, std::memcmp(&k[t * d], &got[t * H * d], d * sizeof(float))) << t;
    // Out of place from mutable input views, the storage type deduced (no <float>).
    std::vector<float> xm = x, k_in(k.size()), y2(x.size()), q2(x.size()), k2(k.size());
    for (std::size_t t = 0; t < n; ++t)  // k_in: each token's first head, unrotated
      std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(t * H * d), d,
                  k_in.begin() + static_cast<std::ptrdiff_t>(t * d));
    const auto xmv = rope::packed_heads(xm.data(), N, H, D);
    ASSERT_EQ(rope::apply_xdrope(*tab, sec, xmv, rope::packed_heads(y2.data(), N, H, D), s[0],
                                 s[1], s[2], s[3], dir),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(y2.data(), got.data(), y2.size() * sizeof(float)));
    ASSERT_EQ(rope::apply_qk_xdrope(*tab, sec, xmv, rope::packed_heads(q2.data(), N, H, D),
                                    rope::packed_heads(k_in.data(), N, 1, D),
                                    rope::packed_heads(k2.data(), N, 1, D), s[0], s[1], s[2],
                                    s[3], dir),
              rope::status::ok);
    EXPECT_EQ(0, std::memcmp(q2.data(), got.data(), q2.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(k2.data(), k.data(), k2.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(xm.data(), x.data(), x.size() * sizeof(float)));  // inputs kept
  }
}

TEST(XdRope, EachPairIsApplyAtItsSectionsPosition) {
  for (const rope::layout l : kLayouts)
    for (const rope::direction dir : {rope::direction::forward, rope::direction::inverse}) {
      check_xdrope_pairs<float>(l, dir);
      check_xdrope_pairs<rope::float16>(l, dir);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(XdRope, BadInputIsRefusedAndNothingWritten) {
  const int D = 128;
  const auto l = rope::layout::half_split;  // a table of its own: exactly 1024 positions
  auto tab = rope::table<float>::build(rope::default_frequencies(rope::make_spec(D, D, 1e4, l)), l,
                                       1024);
  const std::ptrdiff_t n = 4;
  std::vector<float> x(static_cast<std::size_t>(n * D), 0.25f);
  const std::vector<float> canary = x;
  const auto v = rope::packed_heads(x.data(), n, 1, D);
  std::vector<std::int64_t> pp = {0, 1, 2, 3}, pw = {0, 5, 6, 3}, ph = {0, 1, 1, 3},
                            pi = {0, 1, 1, 3};
  const rope::xdrope_sections ok{16, 16, 16, 16};
  auto call = [&](const rope::xdrope_sections& s, const std::int64_t* i) {
    return rope::apply_xdrope<float>(*tab, s, v, pp.data(), pw.data(), ph.data(), i);
  };
  EXPECT_EQ(call({16, 16, 16, 15}, pi.data()), rope::status::bad_dimension);
  EXPECT_EQ(call({16, 16, 16, 17}, pi.data()), rope::status::bad_dimension);
  EXPECT_EQ(call({-1, 17, 32, 16}, pi.data()), rope::status::bad_dimension);  // sums to 64
  EXPECT_EQ(call(ok, nullptr), rope::status::null_pointer);
  pi[2] = 1024;  // past the table, in the image-index stream only
  EXPECT_EQ(call(ok, pi.data()), rope::status::position_out_of_range);
  pi[2] = 1;
  std::vector<float> k(x.size(), 0.5f);
  const std::vector<float> k_canary = k;
  EXPECT_EQ(rope::apply_qk_xdrope<float>(*tab, {16, 16, 16, 15}, v,
                                         rope::packed_heads(k.data(), n, 1, D), pp.data(),
                                         pw.data(), ph.data(), pi.data()),
            rope::status::bad_dimension);
  EXPECT_EQ(x, canary);
  EXPECT_EQ(k, k_canary);
  EXPECT_EQ(call(ok, pi.data()), rope::status::ok);
  EXPECT_NE(x, canary);
}

TEST(XdRope, FromConfigReadsHunyuansSections) {
  rope::model_config cfg = hunyuan_ocr();
  rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);
  EXPECT_EQ(m.xdrope.position, 16);
  EXPECT_EQ(m.xdrope.width, 16);
  EXPECT_EQ(m.xdrope.height, 16);
  EXPECT_EQ(m.xdrope.image, 16);
  EXPECT_EQ(m.mrope.temporal + m.mrope.height + m.mrope.width, 0);
  // Hunyuan's fixed NTK base: 1e4 * 1000^(128/126), as vLLM's DynamicNTKAlphaRotaryEmbedding.
  const rope::frequencies f = rope::compute_frequencies(m.spec, m.scaling).frequencies;
  const ld base = 1e4L * std::pow(1000.0L, 128.0L / 126.0L);
  for (std::size_t j = 0; j < 64; ++j) {
    const ld want = std::pow(base, -2.0L * static_cast<ld>(j) / 128);
    EXPECT_LE(std::fabs(static_cast<ld>(f.inv_freq[j]) - want), 0x1p-52L * want) << j;
  }
  EXPECT_EQ(f.attention_factor, 1.0);
  // transformers v5's HunYuanVL config: rope_type dynamic, the sections under mrope_section.
  rope::model_config v5 = cfg;
  v5.model_type = "hunyuan_vl";
  v5.rope_scaling = {
      {"rope_type", "dynamic"}, {"alpha", 1000.0}, {"mrope_section", {16, 16, 16, 16}}};
  const rope::scaled_spec m5 = rope::from_config(v5, rope::layout::half_split);
  EXPECT_EQ(m5.xdrope.image, 16);
  EXPECT_EQ(rope::compute_frequencies(m5.spec, m5.scaling).frequencies.inv_freq, f.inv_freq);
#if ROPE_HAS_EXCEPTIONS
  for (const auto& [key, value] : std::vector<std::pair<std::string, rope::config_value>>{
           {"xdrope_section", {16, 16, 16, 15}},      // 63 pairs of 64
           {"xdrope_section", {16, 16, 16, 8, 8}},    // five
           {"xdrope_section", {24, 20, 20}},          // three: HF's 3-axis mode, refused
           {"xdrope_section", {16, 16, -16, 48}},     // a negative count (sum 64)
           {"xdrope_section", {16, 16, 16.5, 15.5}},  // not integers
           {"xdrope_section", 64},
           {"mrope_section", {16, 16, 32, 0}}}) {  // disagrees with xdrope_section
    rope::model_config bad = hunyuan_ocr();
    bad.rope_scaling[key] = value;
    expect_refused_naming(bad, rope::layout::half_split, "xdrope_section");
  }
  rope::model_config bad = hunyuan_ocr();
  bad.rope_scaling.erase("xdrope_section");  // type xdrope without its sections
  expect_refused_naming(bad, rope::layout::half_split, "xdrope_section");
  bad = hunyuan_ocr();
  bad.rope_scaling["mrope_interleaved"] = true;
  expect_refused_naming(bad, rope::layout::half_split, "xdrope_section");
  bad = hunyuan_ocr();
  bad.rope_scaling.erase("xdrope_section");
  bad.rope_scaling["type"] = "dynamic";
  bad.rope_scaling["mrope_section"] = {16, 16, 16, 16};  // four counts outside HunYuanVL
  expect_refused_naming(bad, rope::layout::half_split, "mrope_section");
#endif
}

}  // namespace
