// KV-cache decode: where rope sits in an attention layer's decode loop.
//
// A tiny attention layer with grouped-query heads (8 query heads share 2 key/value heads).
// Prefill runs the prompt in one batch; decode then runs one token at a time. Each key is
// rotated exactly once, at its own position, as it is written into the KV cache (rope::apply_qk
// out of place, straight into the cache's storage type); the query of the new token is rotated
// at its position in the same call; attention reads the cached keys as they are. Because a
// key's rotation depends only on its own position, the cache never needs re-rotating, and
// decoding gives the same outputs as recomputing the whole sequence from scratch. The example
// checks that, and shows that an off-by-position bug (the new token rotated at position 0) is
// caught by it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <rope/rope.hpp>
#include <vector>

// The KV cache's element type: fp16, as engines store it. rope::apply_qk computes each rotated
// key in float (corrected by the table's low parts, so within 1 ulp) and rounds it once, to
// nearest even, as it stores it into the cache (float in, fp16 out, one pass); attention reads
// it back through rope::storage_traits<kv_t>::load. Change this line to rope::bfloat16 or float
// to see the same equality with another cache type.
using kv_t = rope::float16;

namespace {

constexpr int d_model = 64, n_q_heads = 8, n_kv_heads = 2, head_dim = 32;
constexpr int group = n_q_heads / n_kv_heads;
constexpr int prompt_len = 12, total_len = 20, max_tokens = 64;

using traits = rope::storage_traits<kv_t>;

struct layer {
  std::vector<float> wq, wk, wv;  // [out][d_model] row-major projections
  explicit layer(std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> dist(0.0, 1.0 / std::sqrt(double{d_model}));
    auto init = [&](std::vector<float>& w, int rows) {
      w.resize(static_cast<std::size_t>(rows * d_model));
      for (auto& e : w) e = static_cast<float>(dist(gen));
    };
    init(wq, n_q_heads * head_dim);
    init(wk, n_kv_heads * head_dim);
    init(wv, n_kv_heads * head_dim);
  }
};

// y[r] = sum_c w[r][c] x[c] for n tokens (x: [n][d_model], y: [n][rows]).
std::vector<float> project(const std::vector<float>& w, int rows, const float* x, int n) {
  std::vector<float> y(static_cast<std::size_t>(n * rows));
  for (int t = 0; t < n; ++t)
    for (int r = 0; r < rows; ++r) {
      double s = 0;
      for (int c = 0; c < d_model; ++c)
        s += static_cast<double>(w[static_cast<std::size_t>(r * d_model + c)]) * x[t * d_model + c];
      y[static_cast<std::size_t>(t * rows + r)] = static_cast<float>(s);
    }
  return y;
}

// One query head against n_keys keys and values (float), causal softmax in double.
void attend_head(const float* q, const float* keys, const float* values, int n_keys, int stride,
                 float* out) {
  std::vector<double> score(static_cast<std::size_t>(n_keys));
  double top = -INFINITY;
  for (int i = 0; i < n_keys; ++i) {
    double s = 0;
    for (int d = 0; d < head_dim; ++d) s += static_cast<double>(q[d]) * keys[i * stride + d];
    score[static_cast<std::size_t>(i)] = s / std::sqrt(double{head_dim});
    top = std::fmax(top, score[static_cast<std::size_t>(i)]);
  }
  double total = 0;
  for (double& s : score) total += (s = std::exp(s - top));
  for (int d = 0; d < head_dim; ++d) {
    double o = 0;
    for (int i = 0; i < n_keys; ++i)
      o += score[static_cast<std::size_t>(i)] * values[i * stride + d];
    out[d] = static_cast<float>(o / total);
  }
}

struct kv_cache {
  std::vector<kv_t> k, v;  // [max_tokens][n_kv_heads][head_dim]
  kv_cache()
      : k(static_cast<std::size_t>(max_tokens * n_kv_heads * head_dim)),
        v(static_cast<std::size_t>(max_tokens * n_kv_heads * head_dim)) {}
};

// Runs n new tokens (embeddings x) at positions pos[0..n) through the layer with the cache:
// keys are rotated once into the cache, queries in place, then each token attends to every
// cached key up to its own position. Returns [n][n_q_heads * head_dim] outputs.
// rope_pos is the position each token is rotated at: pos itself, except in the bug demo.
std::vector<float> step(const layer& L, const rope::table<float>& tab, kv_cache& cache,
                        const float* x, int n, const std::int32_t* pos,
                        const std::int32_t* rope_pos) {
  std::vector<float> q = project(L.wq, n_q_heads * head_dim, x, n);
  const std::vector<float> k = project(L.wk, n_kv_heads * head_dim, x, n);
  const std::vector<float> v = project(L.wv, n_kv_heads * head_dim, x, n);
  constexpr std::ptrdiff_t row = n_kv_heads * head_dim;
  // The n new tokens occupy consecutive cache slots from pos[0] (slot = position here).
  kv_t* k_slot = cache.k.data() + pos[0] * row;
  // One call: the queries in place (q_out is q_in's rows), the keys into the cache; both are
  // checked before either is written.
  if (rope::apply_qk<float, head_dim>(
          tab, rope::packed_heads<const float>(q.data(), n, n_q_heads, head_dim),
          rope::packed_heads(q.data(), n, n_q_heads, head_dim),
          rope::packed_heads<const float>(k.data(), n, n_kv_heads, head_dim),
          rope::packed_heads(k_slot, n, n_kv_heads, head_dim), rope_pos) != rope::status::ok)
    std::abort();
  for (std::size_t i = 0; i < v.size(); ++i)
    cache.v[static_cast<std::size_t>(pos[0] * row) + i] = traits::store(v[i]);

  // Attention reads the cache in compute precision.
  const int n_keys = pos[n - 1] + 1;
  std::vector<float> keys(static_cast<std::size_t>(n_keys * row)), values(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    keys[i] = traits::load(cache.k[i]);
    values[i] = traits::load(cache.v[i]);
  }
  std::vector<float> out(q.size());
  for (int t = 0; t < n; ++t)
    for (int h = 0; h < n_q_heads; ++h) {
      const int g = h / group;  // grouped-query: q head h reads kv head g
      attend_head(&q[static_cast<std::size_t>((t * n_q_heads + h) * head_dim)],
                  &keys[static_cast<std::size_t>(g * head_dim)],
                  &values[static_cast<std::size_t>(g * head_dim)], pos[t] + 1,
                  static_cast<int>(row),
                  &out[static_cast<std::size_t>((t * n_q_heads + h) * head_dim)]);
    }
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::fmax(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

}  // namespace

int main() {
  // A Llama-style layer: half-split pairs, base 10000, every head dim rotated.
  const rope::spec spec = rope::make_spec(head_dim, head_dim, 1e4, rope::layout::half_split);
  const auto tab = rope::get_table<float>(spec, max_tokens);
  const layer L(7);

  std::vector<float> x(static_cast<std::size_t>(total_len * d_model));
  std::mt19937_64 gen(11);
  std::normal_distribution<double> dist(0.0, 1.0);
  for (auto& e : x) e = static_cast<float>(dist(gen));
  std::vector<std::int32_t> positions(total_len);
  for (int t = 0; t < total_len; ++t) positions[static_cast<std::size_t>(t)] = t;
  const std::size_t out_row = n_q_heads * head_dim;

  // 1. Prefill the prompt in one call, then decode one token at a time.
  const std::int32_t* pos = positions.data();
  kv_cache cache;
  std::vector<float> decoded = step(L, *tab, cache, x.data(), prompt_len, pos, pos);
  for (int t = prompt_len; t < total_len; ++t) {
    const std::vector<float> o =
        step(L, *tab, cache, &x[static_cast<std::size_t>(t * d_model)], 1, pos + t, pos + t);
    decoded.insert(decoded.end(), o.begin(), o.end());
  }

  // 2. Recompute the whole sequence from scratch in one call (fresh cache).
  kv_cache fresh;
  const std::vector<float> full = step(L, *tab, fresh, x.data(), total_len, pos, pos);

  // 3. The classic decode bug: each new token's q and k rotated at position 0 instead of t
  //    (the offset into the sequence forgotten); the key still goes to slot t.
  kv_cache buggy_cache;
  std::vector<float> buggy = step(L, *tab, buggy_cache, x.data(), prompt_len, pos, pos);
  for (int t = prompt_len; t < total_len; ++t) {
    const std::vector<float> o =
        step(L, *tab, buggy_cache, &x[static_cast<std::size_t>(t * d_model)], 1, pos + t, pos);
    buggy.insert(buggy.end(), o.begin(), o.end());
  }

  std::printf(
      "attention layer: d_model %d, %d query heads sharing %d key/value heads, head_dim %d\n",
      d_model, n_q_heads, n_kv_heads, head_dim);
  std::printf("KV cache: %zu-byte elements, %zu bytes per token\n", sizeof(kv_t),
              2 * n_kv_heads * head_dim * sizeof(kv_t));
  std::printf("prefill %d tokens, then decode %d tokens one at a time\n\n", prompt_len,
              total_len - prompt_len);
  std::printf("%5s %12s %12s %14s %14s\n", "token", "decode[0]", "full[0]", "|decode-full|",
              "|bug-full|");
  double worst = 0, worst_bug_decode = 0;
  for (int t = 0; t < total_len; ++t) {
    const std::size_t b = static_cast<std::size_t>(t) * out_row, e = b + out_row;
    const std::vector<float> d(decoded.begin() + static_cast<std::ptrdiff_t>(b),
                               decoded.begin() + static_cast<std::ptrdiff_t>(e));
    const std::vector<float> f(full.begin() + static_cast<std::ptrdiff_t>(b),
                               full.begin() + static_cast<std::ptrdiff_t>(e));
    const std::vector<float> g(buggy.begin() + static_cast<std::ptrdiff_t>(b),
                               buggy.begin() + static_cast<std::ptrdiff_t>(e));
    const double diff = max_abs_diff(d, f), bug = max_abs_diff(g, f);
    worst = std::fmax(worst, diff);
    if (t >= prompt_len) worst_bug_decode = std::fmax(worst_bug_decode, bug);
    std::printf("%5d %12.7f %12.7f %14.3g %14.3g%s\n", t, static_cast<double>(d[0]),
                static_cast<double>(f[0]), diff, bug, t == prompt_len ? "   <- decode starts" : "");
  }
  const bool bitwise = worst == 0;
  std::printf("\nmax |decode - full recompute| = %.3g (%s)\n", worst,
              bitwise ? "bitwise equal" : "not bitwise equal");
  std::printf("max |buggy decode - full recompute| over decoded tokens = %.3g\n", worst_bug_decode);
  // Decode and recompute perform the same arithmetic on the same cached values, so they agree
  // to the last bit; allow float noise only, and require the position bug to be visible.
  const bool ok = worst <= 1e-6 && worst_bug_decode > 1e-3;
  std::printf(
      ok ? "OK: decoding with keys rotated once into the cache equals recomputing the sequence\n"
         : "FAILED\n");
  return ok ? 0 : 1;
}
