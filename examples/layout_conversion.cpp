// Layout conversion: which pair layout a checkpoint expects, and how the two layouts relate.
//
// Meta's original LLaMA weights (and llama.cpp's GGUF files of Llama-family models) pair
// coordinates (2j, 2j+1): rope::layout::interleaved. HF transformers' Llama-family code pairs
// (j, j + d/2) (`rotate_half`): rope::layout::half_split. HF's conversion script does not change
// the rotation code to match Meta's: it permutes the rows of the q and k projection weights, head
// by head, so that new row j is old row 2j and new row j + d/2 is old row 2j + 1. Then
//
//     half_split(P q) = P interleaved(q)     for every position,
//
// and since P is a permutation (orthogonal), every attention score <q, k> is unchanged: the
// converted model computes exactly what the original did. The same weights with the other
// layout give plausible-looking but wrong scores; nothing crashes, so check.
//
// Printed and checked: the permutation for one 8-dim head; for a 128-dim head, half_split on
// HF-permuted projections equals the permuted interleaved result on Meta's projections
// (bitwise), attention scores equal for both, and different when the layout is wrong; finally,
// how to tell the layout from one reference vector your framework produced.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <rope/rope.hpp>
#include <vector>

namespace {

constexpr int d_model = 256, n_heads = 2, head_dim = 128;
constexpr int rows = n_heads * head_dim;

// HF's permutation of a q/k projection's rows: within each head, new row j <- old row 2j and
// new row j + head_dim/2 <- old row 2j + 1. Returns old_row_of[new_row].
std::vector<int> hf_row_permutation(int heads, int dim) {
  std::vector<int> old_row_of(static_cast<std::size_t>(heads * dim));
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < dim / 2; ++j) {
      old_row_of[static_cast<std::size_t>(h * dim + j)] = h * dim + 2 * j;
      old_row_of[static_cast<std::size_t>(h * dim + j + dim / 2)] = h * dim + 2 * j + 1;
    }
  return old_row_of;
}

std::vector<float> permute_rows(const std::vector<float>& w, const std::vector<int>& old_row_of,
                                int cols) {
  std::vector<float> out(w.size());
  for (std::size_t r = 0; r < old_row_of.size(); ++r)
    for (int c = 0; c < cols; ++c)
      out[r * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c)] =
          w[static_cast<std::size_t>(old_row_of[r] * cols + c)];
  return out;
}

std::vector<float> matvec(const std::vector<float>& w, const std::vector<float>& x) {
  std::vector<float> y(static_cast<std::size_t>(rows));
  for (std::size_t r = 0; r < y.size(); ++r) {
    double s = 0;
    for (std::size_t c = 0; c < x.size(); ++c) s += static_cast<double>(w[r * x.size() + c]) * x[c];
    y[r] = static_cast<float>(s);
  }
  return y;
}

// Rotates every head of v (n_heads x head_dim, packed) at position p with table tab.
std::vector<float> rotated(const rope::table<float>& tab, std::vector<float> v, std::int64_t p) {
  const rope::status st =
      rope::apply<float, head_dim>(tab, rope::packed_heads(v.data(), 1, n_heads, head_dim), &p);
  if (st != rope::status::ok) std::printf("rope::apply: %s\n", rope::message(st));
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

std::vector<float> randn(std::size_t n, std::mt19937_64& gen, double scale) {
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<float> v(n);
  for (auto& e : v) e = static_cast<float>(dist(gen));
  return v;
}

// A stand-in for "your framework's" rotation of one head: HF's formula written out,
// out = x * cat(cos, cos) + rotate_half(x) * cat(sin, sin), in double.
std::vector<double> framework_rope(const std::vector<float>& x, std::int64_t p, double base) {
  const std::size_t half = x.size() / 2;
  std::vector<double> out(x.size());
  for (std::size_t j = 0; j < half; ++j) {
    const double a = static_cast<double>(p) *
                     std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(x.size()));
    out[j] = x[j] * std::cos(a) - x[j + half] * std::sin(a);
    out[j + half] = x[j + half] * std::cos(a) + x[j] * std::sin(a);
  }
  return out;
}

}  // namespace

int main() {
  bool ok = true;

  // 0. The rules of thumb, then the numbers behind them.
  std::printf(
      "Which layout does a checkpoint expect?\n"
      "  HF transformers checkpoint (modeling code uses rotate_half)   -> half_split\n"
      "  Meta's original consolidated.*.pth, GGUF of Llama-family models -> interleaved\n"
      "  (the same model: HF's conversion permutes q/k rows, llama.cpp's converter undoes it;\n"
      "   GGUF of NeoX-style models, Qwen, Phi, Gemma, ... -> half_split)\n"
      "  unsure: rotate one vector at a position > 0 and compare (step 3 below)\n\n");

  // 1. The permutation, for one 8-dim head.
  const std::vector<int> small = hf_row_permutation(1, 8);
  std::printf("HF conversion, one head of 8: new row <- old row\n  ");
  for (std::size_t r = 0; r < small.size(); ++r) std::printf("%zu<-%d  ", r, small[r]);
  std::printf(
      "\n  (interleaved pair j = rows (2j, 2j+1) becomes half-split pair j = rows (j, j+4))\n\n");

  // 2. Meta-style weights with interleaved rope vs HF-permuted weights with half-split rope.
  std::mt19937_64 gen(2024);
  const std::vector<float> wq = randn(static_cast<std::size_t>(rows * d_model), gen, 0.0625);
  const std::vector<float> wk = randn(static_cast<std::size_t>(rows * d_model), gen, 0.0625);
  const std::vector<int> perm = hf_row_permutation(n_heads, head_dim);
  const std::vector<float> wq_hf = permute_rows(wq, perm, d_model),
                           wk_hf = permute_rows(wk, perm, d_model);
  const double base = 5e5;
  const auto inter = rope::get_table<float>(
      rope::make_spec(head_dim, head_dim, base, rope::layout::interleaved), 10000);
  const auto half = rope::get_table<float>(
      rope::make_spec(head_dim, head_dim, base, rope::layout::half_split), 10000);

  const std::vector<float> x_m = randn(d_model, gen, 1.0), x_n = randn(d_model, gen, 1.0);
  const std::vector<float> q_meta = matvec(wq, x_m), k_meta = matvec(wk, x_n);
  const std::vector<float> q_hf = matvec(wq_hf, x_m), k_hf = matvec(wk_hf, x_n);

  // half_split(P q) == P interleaved(q), bit for bit: the same pairs meet the same cos/sin.
  bool bitwise = true;
  for (std::int64_t p : {0, 1, 17, 4096, 9999}) {
    const std::vector<float> a = rotated(*half, q_hf, p);
    const std::vector<float> b = permute_rows(rotated(*inter, q_meta, p), perm, 1);
    for (std::size_t i = 0; i < a.size(); ++i) bitwise = bitwise && a[i] == b[i];
  }
  std::printf(
      "half_split(HF-permuted q) == permuted interleaved(Meta q) at positions 0..9999: %s\n\n",
      bitwise ? "bitwise equal" : "DIFFERENT");
  ok = ok && bitwise;

  std::printf("attention score of a query at m and a key at n (both heads summed):\n");
  std::printf("%6s %6s %16s %16s %16s\n", "m", "n", "Meta+interleaved", "HF+half_split",
              "Meta+half_split");
  const std::int64_t pairs_mn[][2] = {{5, 5}, {40, 3}, {300, 299}, {9000, 20}};
  for (const auto& mn : pairs_mn) {
    const std::int64_t m = mn[0], n = mn[1];
    const double s_meta = dot(rotated(*inter, q_meta, m), rotated(*inter, k_meta, n));
    const double s_hf = dot(rotated(*half, q_hf, m), rotated(*half, k_hf, n));
    const double s_wrong = dot(rotated(*half, q_meta, m), rotated(*half, k_meta, n));
    std::printf("%6lld %6lld %16.6f %16.6f %16.6f\n", static_cast<long long>(m),
                static_cast<long long>(n), s_meta, s_hf, s_wrong);
    // Same products summed in another order: equal to float rounding of the terms.
    ok = ok && std::fabs(s_meta - s_hf) <= 1e-5 * (1 + std::fabs(s_meta));
    if (m != n) ok = ok && std::fabs(s_wrong - s_meta) > 1e-3;  // the wrong layout is visible
  }
  std::printf(
      "(at m = n the two rotations cancel, so every layout gives the plain <q, k>: a test at\n"
      " equal positions cannot tell layouts apart; use m != n)\n\n");

  // 3. How to tell which layout your framework uses: rotate one vector at a position m > 0
  //    both ways and compare with the framework's own output for the same vector.
  const std::int64_t probe_pos = 1000;
  std::vector<float> probe(head_dim);
  for (std::size_t i = 0; i < probe.size(); ++i)
    probe[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + 0.3));
  const std::vector<double> reference = framework_rope(probe, probe_pos, base);
  const auto one_head = [&](const rope::table<float>& tab) {
    std::vector<float> v = probe;
    if (rope::apply<float, head_dim>(tab, probe_pos, v.data()) != rope::status::ok) return INFINITY;
    double worst = 0;
    for (std::size_t i = 0; i < v.size(); ++i)
      worst = std::fmax(worst, std::fabs(v[i] - reference[i]));
    return static_cast<float>(worst);
  };
  const double diff_half = one_head(*half), diff_inter = one_head(*inter);
  std::printf("probe at position %lld against the framework's output:\n",
              static_cast<long long>(probe_pos));
  std::printf("  half_split  max |diff| = %.3g\n  interleaved max |diff| = %.3g\n", diff_half,
              diff_inter);
  const bool found_half = diff_half <= 1e-6 && diff_inter > 1e-2;
  std::printf("  -> the framework uses %s\n\n",
              found_half ? "rope::layout::half_split" : "(undecided)");
  ok = ok && found_half;

  std::printf(ok ? "OK: permuted rows + half_split reproduce interleaved; scores preserved\n"
                 : "FAILED\n");
  return ok ? 0 : 1;
}
