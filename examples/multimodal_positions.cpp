// Multimodal RoPE (Qwen2-VL, Qwen2.5-VL): positions in time, height and width.
//
// A vision-language model sees text tokens and image patches in one sequence. M-RoPE gives
// each token three positions: text tokens have all three equal (ordinary RoPE: text after the
// image continues from the largest position used so far + 1); an image's patches share one
// temporal position and take their row and column as height and width positions, offset by
// where the image starts. The head's pairs are split into three sections (16, 24, 24 of 64
// pairs in Qwen2-VL), each rotated by one of the three positions, so a query-key score depends
// on the distance in time, in rows and in columns separately.
//
// Printed: the (t, h, w) positions of a sequence [3 text tokens][a 2 x 3 image][2 text tokens]
// built as HF's get_rope_index does, and attention scores between patches. Checked: text
// tokens are rotated exactly as rope::apply rotates them (bit for bit); two patch pairs the
// same number of columns apart (same row) score the same, and so do two pairs the same number
// of rows apart (same column), within 1e-5; patches one column apart and one row apart score
// differently (the two directions are not confused).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <rope/mrope.hpp>
#include <rope/rope.hpp>
#include <vector>

namespace {

constexpr int head_dim = 128;
const rope::mrope_sections sections{16, 24, 24, false};  // Qwen2-VL's mrope_section

struct token {
  const char* kind;
  std::int64_t t, h, w;
};

// HF's get_rope_index for one image of rows x cols patches (after the 2x2 merge) between text:
// text positions count up; the image starts at the next position, its patches at (start,
// start + row, start + col); the text after it resumes at the largest position + 1.
std::vector<token> sequence(int text_before, int rows, int cols, int text_after) {
  std::vector<token> s;
  std::int64_t next = 0;
  for (int i = 0; i < text_before; ++i, ++next) s.push_back({"text", next, next, next});
  const std::int64_t start = next;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) s.push_back({"patch", start, start + r, start + c});
  next = start + (rows > cols ? rows : cols);
  for (int i = 0; i < text_after; ++i, ++next) s.push_back({"text", next, next, next});
  return s;
}

// The score <q, k> of one head.
double dot(const float* q, const float* k) {
  double s = 0;
  for (int i = 0; i < head_dim; ++i) s += static_cast<double>(q[i]) * k[i];
  return s;
}

}  // namespace

int main() {
  const rope::spec spec = rope::make_spec(head_dim, head_dim, 1e6, rope::layout::half_split);
  const auto table = rope::get_table<float>(spec, 4096);
  const std::vector<token> seq = sequence(3, 2, 3, 2);
  const auto n = static_cast<std::ptrdiff_t>(seq.size());
  std::vector<std::int64_t> ids(static_cast<std::size_t>(3 * n));  // [3, n]: t, h, w rows
  std::printf("token  kind    t  h  w\n");
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const token& k = seq[static_cast<std::size_t>(i)];
    ids[static_cast<std::size_t>(i)] = k.t;
    ids[static_cast<std::size_t>(n + i)] = k.h;
    ids[static_cast<std::size_t>(2 * n + i)] = k.w;
    std::printf("%5td  %-5s  %2lld %2lld %2lld\n", i, k.kind, static_cast<long long>(k.t),
                static_cast<long long>(k.h), static_cast<long long>(k.w));
  }
  // The same query and key content at every token, so scores differ by position only.
  std::vector<float> q(static_cast<std::size_t>(n * head_dim)), k(q.size());
  for (std::ptrdiff_t t = 0; t < n; ++t)
    for (int i = 0; i < head_dim; ++i) {
      q[static_cast<std::size_t>(t * head_dim + i)] = std::cos(0.37f * static_cast<float>(i));
      k[static_cast<std::size_t>(t * head_dim + i)] = std::sin(0.11f * static_cast<float>(i) + 1);
    }
  const std::vector<float> q0 = q;
  const std::int64_t* p = ids.data();
  if (rope::apply_mrope<float>(*table, sections, rope::packed_heads(q.data(), n, 1, head_dim), p,
                               p + n, p + 2 * n) != rope::status::ok ||
      rope::apply_mrope<float>(*table, sections, rope::packed_heads(k.data(), n, 1, head_dim), p,
                               p + n, p + 2 * n) != rope::status::ok) {
    std::printf("FAILED: apply_mrope refused the call\n");
    return 1;
  }
  bool ok = true;
  // Text tokens: exactly rope::apply at their position.
  for (std::ptrdiff_t t = 0; t < n; ++t) {
    const token& tk = seq[static_cast<std::size_t>(t)];
    if (std::strcmp(tk.kind, "text") != 0) continue;
    std::vector<float> x(q0.begin() + t * head_dim, q0.begin() + (t + 1) * head_dim);
    if (rope::apply<float>(*table, tk.t, x.data()) != rope::status::ok ||
        std::memcmp(x.data(), q.data() + t * head_dim, sizeof(float) * head_dim) != 0) {
      std::printf("FAILED: text token %td differs from rope::apply\n", t);
      ok = false;
    }
  }
  // Patches: token 3 + r * 3 + c is row r, column c.
  auto score = [&](int rq, int cq, int rk, int ck) {
    return dot(q.data() + (3 + rq * 3 + cq) * head_dim, k.data() + (3 + rk * 3 + ck) * head_dim);
  };
  const double right1_a = score(0, 1, 0, 0), right1_b = score(1, 2, 1, 1);  // one column apart
  const double down1_a = score(1, 0, 0, 0), down1_b = score(1, 2, 0, 2);    // one row apart
  std::printf("\nscores between patches (query patch, key patch):\n");
  std::printf("  (r0 c1, r0 c0) %.6f   (r1 c2, r1 c1) %.6f   one column apart\n", right1_a,
              right1_b);
  std::printf("  (r1 c0, r0 c0) %.6f   (r1 c2, r0 c2) %.6f   one row apart\n", down1_a, down1_b);
  if (std::fabs(right1_a - right1_b) > 1e-5 || std::fabs(down1_a - down1_b) > 1e-5) {
    std::printf("FAILED: equal distances in one direction should score the same\n");
    ok = false;
  }
  if (std::fabs(right1_a - down1_a) < 1e-3) {
    std::printf("FAILED: a column step and a row step should score differently\n");
    ok = false;
  }
  std::printf(ok ? "OK: text tokens as rope::apply; scores depend on the row and column "
                   "distances separately\n"
                 : "FAILED\n");
  return ok ? 0 : 1;
}
