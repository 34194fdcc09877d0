// The README's C++ snippets, compiled and run: each is pasted here line for line, inside the
// context a reader supplies (buffers, positions, a table), and must compile with the project's
// warnings as errors and return rope::status::ok. Readme.EverySnippetIsCompiledHere reads
// README.md and this file and fails when a README snippet's lines are not found here in order,
// so a snippet edited in the README alone, or one added there, fails the suite until it is
// compiled here too. The API tour's output is also checked against the long double 2x2 oracle;
// the recipes' numbers are tested in their own files (scaling, ggml, mrope, slots, eigen tests).
//
// The runtime-dispatch snippet's first lines must come before any rope header, so they open
// the file (#ifndef: the baseline preset defines ROPE_RUNTIME_DISPATCH on the command line).
#ifndef ROPE_RUNTIME_DISPATCH
#define ROPE_RUNTIME_DISPATCH      // before including rope (or -DROPE_RUNTIME_DISPATCH)
#endif
#include <rope/rope.hpp>           // no -m flags needed: kernels carry target attributes

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <rope/eigen.hpp>
#include <rope/mrope.hpp>
#include <rope/scaling.hpp>
#include <rope/slots.hpp>
#include <string>
#include <vector>

#include "oracle.hpp"

namespace {

// Snippet 9 (README, "SIMD paths, dispatch and 16-bit storage"), after the lines above.
TEST(Readme, RuntimeDispatchSnippet) {
  const rope::isa before = rope::active_isa();
  const bool has_avx2 = rope::detail::cpu_supports(rope::isa::avx2);
rope::active_isa();                // rope::isa::avx512 on this machine (CPUID + XGETBV, once)
rope::force_isa(rope::isa::avx2);  // true; false (nothing changed) if the CPU lacks it
  EXPECT_EQ(rope::active_isa(), has_avx2 ? rope::isa::avx2 : before);
  EXPECT_TRUE(rope::force_isa(before));  // back to the path the rest of the suite runs
  EXPECT_EQ(rope::active_isa(), before);
}

void fill(std::vector<float>& v) {
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>((i * 7919u) % 1000u) / 500.0f - 1.0f;
}

// The largest |out - oracle| over rows of 128 floats, in units of 2^-24 r (r: the pair's norm).
double worst_vs_oracle(const std::vector<float>& in, const std::vector<float>& out,
                       std::ptrdiff_t heads, const std::vector<std::int32_t>& pos, rope::layout l) {
  const std::vector<oracle::ld> w = oracle::inv_freq(1e4, 128);
  double worst = 0;
  for (std::size_t t = 0; t < pos.size(); ++t)
    for (std::ptrdiff_t h = 0; h < heads; ++h) {
      const std::size_t row =
          (t * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)) * 128;
      const auto ref = oracle::rotate(in.data() + row, 128, 128, w, l, pos[t]);
      for (std::size_t j = 0; j < 64; ++j) {
        const std::size_t i0 = oracle::first(l, j, 64), i1 = oracle::second(l, j, 64);
        const double r =
            std::hypot(static_cast<double>(in[row + i0]), static_cast<double>(in[row + i1]));
        for (std::size_t i : {i0, i1})
          worst = std::max(worst, static_cast<double>(std::fabs(out[row + i] - ref[i])) /
                                      (std::ldexp(1.0, -24) * std::max(r, 1e-30)));
      }
    }
  return worst;
}

// Snippet 1, the API tour.
TEST(Readme, ApiTourSnippet) {
  const std::ptrdiff_t n_tokens = 5, n_q_heads = 32, n_kv_heads = 8;
  std::vector<float> qb(static_cast<std::size_t>(n_tokens * n_q_heads * 128));
  std::vector<float> kb(static_cast<std::size_t>(n_tokens * n_kv_heads * 128));
  fill(qb);
  fill(kb);
  const std::vector<float> q0 = qb, k0 = kb;
  float* q = qb.data();
  float* k = kb.data();
  const std::vector<std::int32_t> pv{0, 1, 2, 30000, 32767};
  const std::int32_t* positions = pv.data();

#include <rope/rope.hpp>

// 1. What the model does. There is no default layout: name it (see "Which layout?").
const rope::spec spec = rope::make_spec(/*head_dim=*/128, /*rotary_dim=*/128, /*base=*/1e4,
                                        rope::layout::half_split);

// 2. Cold path, once: a cached, shared, immutable cos/sin table (float for float models,
//    double for double). Thread safe; asking for more positions later grows it without
//    invalidating handles other threads hold. It covers at least the positions asked for
//    (a grown table twice the last length where that fits: 2^32 positions, and a dense
//    table's max_dense_table_bytes): tab->length() says how many.
std::shared_ptr<const rope::table<float>> tab = rope::get_table<float>(spec, /*positions=*/32768);

// 3. Hot path, every token and layer: noexcept, no allocation, no lock.
//    q: [n_tokens, n_q_heads, 128] packed; k: [n_tokens, n_kv_heads, 128]; one position per token.
rope::status st = rope::apply_qk<float, 128>(*tab,
    rope::packed_heads(q, n_tokens, n_q_heads, 128),
    rope::packed_heads(k, n_tokens, n_kv_heads, 128), positions /* int32_t* or int64_t* */);
if (st != rope::status::ok) { /* rope::message(st); nothing was written */ }

  ASSERT_EQ(st, rope::status::ok) << rope::message(st);
  EXPECT_GE(tab->length(), 32768);
  const double wq = worst_vs_oracle(q0, qb, n_q_heads, pv, rope::layout::half_split);
  const double wk = worst_vs_oracle(k0, kb, n_kv_heads, pv, rope::layout::half_split);
  EXPECT_LE(wq, 3.0);  // the accuracy contract: 3 * 2^-24 * r
  EXPECT_LE(wk, 3.0);
  EXPECT_GT(wq, 0.0);  // the rows did turn (a no-op would read 0 only at position 0)
}

// Snippet 2, "Context extension".
TEST(Readme, ScalingSnippet) {
  const std::int64_t seq_len = 40000;
  std::vector<float> qb(4 * 32 * 128);
  fill(qb);
  rope::heads_view<float> q_rows = rope::packed_heads(qb.data(), 4, 32, 128);
  const std::vector<std::int32_t> pv{0, 1, 39999, 131071};
  const std::int32_t* positions = pv.data();

#include <rope/rope.hpp>
#include <rope/scaling.hpp>

rope::model_config cfg;                       // the engine parses config.json itself
cfg.rope_theta = 1e6; cfg.head_dim = 128; cfg.max_position_embeddings = 131072;
cfg.rope_scaling = {{"rope_type", "yarn"}, {"factor", 4.0},
                    {"original_max_position_embeddings", 32768}};
const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);  // layout: name it

// Frequencies depend on the sequence length for dynamic and longrope: pass it.
rope::scaled_frequencies f = rope::compute_frequencies(m.spec, m.scaling, seq_len);
auto tab = rope::get_table<float>(m.spec, m.scaling, seq_len, /*positions=*/131072);  // cached
rope::status st = rope::apply<float, 128>(*tab, q_rows, positions);                   // as usual

  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
  EXPECT_EQ(f.frequencies.inv_freq, tab->frequencies().inv_freq);
  EXPECT_NEAR(f.frequencies.attention_factor, 1 + 0.1 * std::log(4.0), 1e-15);  // YaRN's default
}

// Snippet 3, rerotate and shift_positions.
TEST(Readme, RerotateAndShiftSnippet) {
  const rope::spec sp = rope::make_spec(128, 128, 1e4, rope::layout::half_split);
  rope::scaling sc;
  sc.type = rope::scaling_type::dynamic_ntk;
  sc.factor = 2.0;
  sc.max_position_embeddings = 4096;
  const rope::frequencies old_f = rope::compute_frequencies(sp, sc, 4096).frequencies;
  const rope::frequencies new_f = rope::compute_frequencies(sp, sc, 8192).frequencies;
  const rope::scaled_frequencies f = rope::compute_frequencies(sp, sc, 8192);
  const rope::layout layout = sp.layout;
  const std::ptrdiff_t n = 10, H = 8;
  const int n_dropped = 3;
  std::vector<float> cache(static_cast<std::size_t>(n * H * 128));
  fill(cache);
  const rope::heads_view<float> k_cache_view = rope::packed_heads(cache.data(), n, H, 128);
  // tokens [2, 5) dropped: the tail [5, 10) moves down to [2, 7)
  const rope::heads_view<float> kept_tail_view =
      rope::packed_heads(cache.data() + 5 * H * 128, n - 5, H, 128);
  const rope::heads_view<float> moved_to_view =
      rope::packed_heads(cache.data() + 2 * H * 128, n - 5, H, 128);
  std::vector<std::int32_t> pv(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < pv.size(); ++i) pv[i] = static_cast<std::int32_t>(100 + i);
  const std::int32_t* positions = pv.data();

// keys rotated with `old_f` at positions[t] become keys rotated with `new_f` (same positions);
// both are rope::frequencies (a scaled_frequencies' `.frequencies`)
rope::status st = rope::rerotate<float, 128>(old_f, new_f, layout, k_cache_view, positions);
  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
// context shift / attention sinks: keys at p become keys at p + delta (delta may be negative)
st = rope::shift_positions<float, 128>(f.frequencies, layout, k_cache_view, positions, -n_dropped);
  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
// or in one pass, moving the keys after the dropped tokens down over them (same cache):
st = rope::shift_positions<float, 128>(f.frequencies, layout, kept_tail_view, moved_to_view,
                                       positions, -n_dropped);
  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
}

// Snippet 4, "GGUF checkpoints".
TEST(Readme, GgmlSnippet) {
  const std::int64_t n_ctx = 65536;
  std::vector<float> rf(64);
  for (std::size_t i = 0; i < rf.size(); ++i) rf[i] = 1.0f + static_cast<float>(i) / 8.0f;
  const float* rope_freqs = rf.data();

#include <rope/rope.hpp>

// Qwen2.5 with YaRN (ggml mode NEOX: half_split). Keys are {arch}.rope.*.
rope::ggml_rope_params p;
p.n_dims = 128;          // rope.dimension_count (absent: the head dim; dims past it are copied)
p.freq_base = 1e6;       // rope.freq_base
p.freq_scale = 0.25f;    // 1 / rope.scaling.factor (linear, yarn; older files: rope.scale_linear)
p.ext_factor = 1;        // yarn: 1 (llama.cpp's default for it), else 0
p.n_ctx_orig = 32768;    // rope.scaling.original_context_length (yarn)
auto qwen = rope::table_cache::global().get<float>(rope::ggml_frequencies(p),
                                                   rope::layout::half_split, n_ctx);

// Llama 3.1 (mode NORM: interleaved): no scaling keys; the F32 tensor rope_freqs.weight divides.
rope::ggml_rope_params l;
l.n_dims = 128;
l.freq_base = 5e5;
l.freq_factors.assign(rope_freqs, rope_freqs + 64);  // const float* rope_freqs
auto llama = rope::table_cache::global().get<float>(rope::ggml_frequencies(l),
                                                    rope::layout::interleaved, n_ctx);

  EXPECT_GE(qwen->length(), n_ctx);
  EXPECT_GE(llama->length(), n_ctx);
  std::vector<float> qb(2 * 4 * 128);
  fill(qb);
  const std::int32_t pos[2] = {5, 60000};
  EXPECT_EQ((rope::apply<float, 128>(*qwen, rope::packed_heads(qb.data(), 2, 4, 128), pos)),
            rope::status::ok);
  EXPECT_EQ((rope::apply<float, 128>(*llama, rope::packed_heads(qb.data(), 2, 4, 128), pos)),
            rope::status::ok);
}

// Snippet 5, "Multimodal RoPE".
TEST(Readme, MropeSnippet) {
  rope::model_config cfg;
  cfg.rope_theta = 1e6;
  cfg.head_dim = 128;
  cfg.max_position_embeddings = 32768;
  cfg.rope_scaling = {{"rope_type", "mrope"}, {"mrope_section", std::vector<double>{16, 24, 24}}};
  const std::ptrdiff_t n = 6;
  std::vector<float> qb(static_cast<std::size_t>(n * 4 * 128));
  fill(qb);
  const rope::heads_view<float> q_rows = rope::packed_heads(qb.data(), n, 4, 128);
  const std::vector<std::int32_t> idv{0, 1, 2, 3, 3, 3, 0, 1, 2, 4, 5, 6, 0, 1, 2, 7, 8, 9};
  const std::int32_t* ids = idv.data();

#include <rope/mrope.hpp>
#include <rope/scaling.hpp>  // from_config, scaled_spec

const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);  // m.mrope
auto tab = rope::get_table<float>(m.spec, m.scaling, 0, /*positions=*/32768);
// position_ids of shape [3, n_tokens] (HF's get_rope_index): t, h, w rows
rope::status st = rope::apply_mrope<float>(*tab, m.mrope, q_rows, ids, ids + n, ids + 2 * n);

  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
  EXPECT_EQ(m.mrope.temporal, 16);
  EXPECT_EQ(m.mrope.height, 24);
  EXPECT_EQ(m.mrope.width, 24);
}

// The XD-RoPE snippet, "Multimodal RoPE" (HunyuanOCR's config).
TEST(Readme, XdropeSnippet) {
  rope::model_config cfg;
  cfg.rope_theta = 1e4;
  cfg.head_dim = 128;
  cfg.rope_scaling = {{"type", "xdrope"},
                      {"alpha", 1000.0},
                      {"xdrope_section", std::vector<double>{16, 16, 16, 16}}};
  const std::ptrdiff_t n = 6;
  std::vector<float> qb(static_cast<std::size_t>(n * 4 * 128));
  fill(qb);
  const std::vector<float> before = qb;
  const rope::heads_view<float> q_rows = rope::packed_heads(qb.data(), n, 4, 128);
  const std::vector<std::int32_t> idv{0, 1, 2, 3, 4, 5, 0, 1, 2, 0, 1, 5,
                                      0, 1, 0, 1, 1, 5, 0, 1, 1, 1, 1, 5};
  const std::int32_t* ids = idv.data();

const rope::scaled_spec m = rope::from_config(cfg, rope::layout::half_split);  // m.xdrope
auto tab = rope::get_table<float>(m.spec, m.scaling, 0, /*positions=*/32768);
// position_ids of shape [4, n_tokens]: sequence position, column, row, image index
rope::status st = rope::apply_xdrope<float>(*tab, m.xdrope, q_rows, ids, ids + n, ids + 2 * n,
                                            ids + 3 * n);

  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
  EXPECT_EQ(m.xdrope.position + m.xdrope.width + m.xdrope.height + m.xdrope.image, 64);
  // Token 0 (all four positions 0) is unchanged; token 5 (all 5) is rope::apply's at 5.
  EXPECT_EQ(0, std::memcmp(qb.data(), before.data(), 4 * 128 * sizeof(float)));
  std::vector<float> t5(before.begin() + 5 * 4 * 128, before.end());
  const std::int32_t five = 5;
  EXPECT_EQ(rope::apply<float>(*tab, rope::packed_heads(t5.data(), 1, 4, 128), &five),
            rope::status::ok);
  EXPECT_EQ(0, std::memcmp(qb.data() + 5 * 4 * 128, t5.data(), t5.size() * sizeof(float)));
}

// Snippets 6 and 7, "Vision encoders".
TEST(Readme, VisionSnippets) {
  const std::vector<std::int32_t> cv{0, 1, 2, 3, 2047}, rv{0, 0, 1, 1, 2047};
  const std::int32_t* col = cv.data();
  const std::int32_t* row = rv.data();
  {  // Gemma 4
    const int D = 64, H = 16, n = 5;
    std::vector<float> qb(static_cast<std::size_t>(n * H * D));
    fill(qb);
    float* q = qb.data();

    auto tab = rope::get_table<float>(rope::make_spec(D / 2, D / 2, 100, rope::layout::half_split), 4096);
    rope::status st = rope::apply<float>(*tab, rope::heads_view<float>{q, n, H, D / 2, H * D, D}, col);  // x
    if (st == rope::status::ok)
      st = rope::apply<float>(*tab, rope::heads_view<float>{q + D / 2, n, H, D / 2, H * D, D}, row);   // y

    EXPECT_EQ(st, rope::status::ok) << rope::message(st);
  }
  {  // Qwen2-VL
    const int D = 80, H = 16;
    const std::ptrdiff_t n = 5;
    std::vector<float> qb(static_cast<std::size_t>(n * H * D));
    fill(qb);
    const rope::heads_view<float> q_rows = rope::packed_heads(qb.data(), n, H, D);

    rope::frequencies half = rope::default_frequencies(rope::make_spec(D / 2, D / 2, 1e4, rope::layout::half_split));
    rope::frequencies f = half;
    f.rotary_dim = D;
    f.inv_freq.insert(f.inv_freq.end(), half.inv_freq.begin(), half.inv_freq.end());
    auto tab = rope::table_cache::global().get<float>(f, rope::layout::half_split, 4096);
    rope::status st = rope::apply_mrope<float>(*tab, rope::mrope_sections{0, D / 4, D / 4}, q_rows,
                                             row, row, col);  // D: an int (mrope_sections' fields)

    EXPECT_EQ(st, rope::status::ok) << rope::message(st);
  }
}

// Snippet 8, "KV-cache slots".
TEST(Readme, SlotsSnippet) {
  const std::ptrdiff_t n_slots = 16, n_kv_heads = 8, n_q_heads = 32, n_tokens = 3;
  const auto tab =
      rope::get_table<float>(rope::make_spec(128, 128, 1e4, rope::layout::half_split), 4096);
  std::vector<rope::float16> kvb(static_cast<std::size_t>(n_slots * n_kv_heads * 128));
  rope::float16* kv_k = kvb.data();
  std::vector<float> qb(static_cast<std::size_t>(n_tokens * n_q_heads * 128));
  std::vector<float> kb(static_cast<std::size_t>(n_tokens * n_kv_heads * 128));
  fill(qb);
  fill(kb);
  const rope::heads_view<float> q_rows = rope::packed_heads(qb.data(), n_tokens, n_q_heads, 128);
  const rope::heads_view<float> k_rows = rope::packed_heads(kb.data(), n_tokens, n_kv_heads, 128);
  const std::int32_t positions[3] = {7, 100, 4000};
  const std::int32_t slots[3] = {3, -1, 15};

#include <rope/slots.hpp>

// cache: n_slots x [n_kv_heads, 128] fp16 slots ([n_slots, H, D]; head-major [H, n_slots, D]
// is head_stride = n_slots * D, token_stride = D)
const auto cache = rope::packed_heads(kv_k, n_slots, n_kv_heads, 128);
// token t (sequence t's newest key, at positions[t]) into cache slot slots[t]; -1 skips it
rope::status st = rope::apply_to_slots(*tab, k_rows, cache, positions, slots);
  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
// queries rotated in place and keys into their slots, one validated call
st = rope::apply_qk_to_slots(*tab, q_rows, q_rows, k_rows, cache, positions, slots);
  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
}

}  // namespace

// Snippet 10, "16-bit storage": the specializations at namespace scope, then the call.
struct my_engine_bf16 {
  std::uint16_t bits;
};
template <> struct rope::storage_traits<Eigen::half> : rope::fp16_storage<Eigen::half> {};
template <> struct rope::storage_traits<my_engine_bf16> : rope::bf16_storage<my_engine_bf16> {};

namespace {

TEST(Readme, StorageTraitsSnippet) {
  const std::ptrdiff_t T = 4, H = 8;
  const auto tab =
      rope::get_table<float>(rope::make_spec(128, 128, 1e4, rope::layout::half_split), 4096);
  std::vector<float> kb(static_cast<std::size_t>(T * H * 128));
  fill(kb);
  const float* k = kb.data();
  std::vector<rope::float16> cb(static_cast<std::size_t>(T * H * 128));
  rope::float16* k_cache_fp16 = cb.data();
  const std::int32_t positions[4] = {0, 1, 2, 4095};

// float activations in, fp16 straight into the KV cache, one pass:
rope::status st = rope::apply<float, 128>(*tab, rope::packed_heads<const float>(k, T, H, 128),
                                         rope::packed_heads(k_cache_fp16, T, H, 128), positions);

  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
  // The adopted types give the same bits as rope's own (fp16 here; bf16 against rope::bfloat16).
  std::vector<Eigen::half> eh(cb.size());
  EXPECT_EQ((rope::apply<float, 128>(*tab, rope::packed_heads<const float>(k, T, H, 128),
                                    rope::packed_heads(eh.data(), T, H, 128), positions)),
            rope::status::ok);
  std::vector<my_engine_bf16> mb(cb.size());
  std::vector<rope::bfloat16> rb(cb.size());
  EXPECT_EQ((rope::apply<float, 128>(*tab, rope::packed_heads<const float>(k, T, H, 128),
                                    rope::packed_heads(mb.data(), T, H, 128), positions)),
            rope::status::ok);
  EXPECT_EQ((rope::apply<float, 128>(*tab, rope::packed_heads<const float>(k, T, H, 128),
                                    rope::packed_heads(rb.data(), T, H, 128), positions)),
            rope::status::ok);
  static_assert(sizeof(Eigen::half) == 2 && sizeof(my_engine_bf16) == 2, "2-byte types");
  EXPECT_EQ(std::memcmp(eh.data(), cb.data(), 2 * cb.size()), 0);
  EXPECT_EQ(std::memcmp(mb.data(), rb.data(), 2 * rb.size()), 0);
}

// Snippet 11, "Using rope in your build" (Eigen).
TEST(Readme, EigenSnippet) {
  const Eigen::Index n_tokens = 5;
  const auto tab =
      rope::get_table<float>(rope::make_spec(128, 128, 1e4, rope::layout::half_split), 4096);
  const std::int32_t pv[5] = {0, 1, 2, 100, 4095};
  const std::int32_t* positions = pv;

using Q = Eigen::Matrix<float, Eigen::Dynamic, 128, Eigen::RowMajor>;  // tokens x head_dim
Q q = Q::Random(n_tokens, 128);
rope::status st = rope::eigen::apply(*tab, q, positions);  // one head per row, in place
  EXPECT_EQ(st, rope::status::ok) << rope::message(st);

// A fused projection [tokens, (32 + 8 + 8) * 128], row-major: 32 query heads, 8 key heads, v.
Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> qkv(n_tokens, 48 * 128);
qkv.setRandom();
st = rope::eigen::apply_qk(*tab, qkv.middleCols(0, 32 * 128), 32,
                           qkv.middleCols(32 * 128, 8 * 128), 8, positions);
  EXPECT_EQ(st, rope::status::ok) << rope::message(st);
}

}  // namespace

// Snippet 12, "Without exceptions": the handler at namespace scope.
[[noreturn]] void on_rope_error([[maybe_unused]] rope::error_kind kind, const char* message) {
  // kind: rope::error_kind::invalid_argument or ::out_of_range; message names the parameter
  // and its value, e.g. "rotary_dim=7 must be even, >= 2, <= head_dim (64) and <= 1024".
  std::fprintf(stderr, "rope: %s\n", message);
  std::exit(3);  // must not return
}

namespace {

TEST(Readme, ErrorHandlerSnippet) {
rope::error_handler previous =
// once, at start-up (not thread safe against a concurrent error):
rope::set_error_handler(&on_rope_error);  // returns the previous handler
  EXPECT_EQ(rope::set_error_handler(previous), &on_rope_error);  // the suite's handler back
}

// README.md's ```cpp blocks, each a list of its lines with leading and trailing blanks removed
// (blank lines dropped).
std::vector<std::vector<std::string>> cpp_blocks(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> blocks;
  std::string line;
  bool inside = false;
  const auto trim = [](const std::string& s) {
    const std::size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (!inside && t == "```cpp") {
      inside = true;
      blocks.emplace_back();
    } else if (inside && t == "```") {
      inside = false;
    } else if (inside && !t.empty()) {
      blocks.back().push_back(t);
    }
  }
  EXPECT_FALSE(inside) << path << ": a ```cpp block is not closed";
  return blocks;
}

TEST(Readme, EverySnippetIsCompiledHere) {
  const auto readme = cpp_blocks(ROPE_README_PATH);
  ASSERT_EQ(readme.size(), 13u) << "README.md's ```cpp blocks: paste a new one here and count it";
  // This file's lines, trimmed as the README's.
  std::vector<std::string> here;
  {
    std::ifstream in(ROPE_README_TEST_SOURCE);
    std::string line;
    while (std::getline(in, line)) {
      const std::size_t b = line.find_first_not_of(" \t"), e = line.find_last_not_of(" \t\r");
      if (b != std::string::npos) here.push_back(line.substr(b, e - b + 1));
    }
  }
  ASSERT_GT(here.size(), 300u) << ROPE_README_TEST_SOURCE;
  // Each block's lines must appear here in order, starting at some occurrence of its first line.
  for (std::size_t k = 0; k < readme.size(); ++k) {
    const auto& block = readme[k];
    std::size_t best = 0;  // the most lines matched from any start
    for (std::size_t s = 0; s < here.size() && best < block.size(); ++s) {
      if (here[s] != block[0]) continue;
      std::size_t matched = 1;
      for (std::size_t i = s + 1; i < here.size() && matched < block.size(); ++i)
        if (here[i] == block[matched]) ++matched;
      best = std::max(best, matched);
    }
    EXPECT_EQ(best, block.size()) << "README snippet " << k + 1 << " (first line \"" << block[0]
                                  << "\"): line \"" << block[std::min(best, block.size() - 1)]
                                  << "\" is not compiled in " << ROPE_README_TEST_SOURCE;
  }
}

}  // namespace
