// Long context: a model trained on L = 2048 positions, used at 8192 tokens.
//
// During training, pair j only ever saw the angles p * theta_j for 0 <= p < L. A pair that turns
// at least once in L positions (L * theta_j >= 2 pi) has seen every angle; a slower pair has
// only seen [0, L * theta_j). Without scaling, positions up to 8191 push the slow pairs to angles
// they never saw. Linear position interpolation (factor 4) divides every frequency by 4; YaRN
// (factor 4, original length 2048) divides only the slow pairs, keeps the fast ones, blends in
// between and adds an attention factor. This program rotates a unit pair with each table at the
// last position, reads the angle back from the output (atan2), and prints per band of pairs
// how many pairs leave the trained range. It checks that, without scaling, some do, and that
// with linear interpolation and with YaRN none do; it exits non-zero if a check fails.
#include <cmath>
#include <cstdio>
#include <rope/rope.hpp>
#include <rope/scaling.hpp>
#include <string>
#include <vector>

namespace {

constexpr int kHeadDim = 128;
constexpr int kPairs = kHeadDim / 2;
constexpr std::int64_t kTrained = 2048;
constexpr std::int64_t kUsed = 8192;
const double kTwoPi = 2 * 3.141592653589793;

// The angle (in [0, 2 pi)) the library turned pair j by at position p, measured from its output
// for the unit pair (1, 0); the attention factor scales the pair but not its angle.
std::vector<double> measured_angles(const rope::table<float>& tab, std::int64_t p) {
  std::vector<float> x(kHeadDim, 0.0f), y(kHeadDim);
  for (int j = 0; j < kPairs; ++j)
    x[static_cast<std::size_t>(j)] = 1.0f;  // u = 1, v = 0 (half split)
  if (rope::apply<float, kHeadDim>(tab, p, x.data(), y.data(), kHeadDim) != rope::status::ok)
    return {};
  std::vector<double> angle(kPairs);
  for (std::size_t j = 0; j < kPairs; ++j) {
    double a = std::atan2(static_cast<double>(y[j + kPairs]), static_cast<double>(y[j]));
    angle[j] = a < 0 ? a + kTwoPi : a;
  }
  return angle;
}

// Pair j leaves its trained range somewhere in [0, kUsed) iff it never turned fully during
// training and its angle at the last position exceeds what training reached.
bool out_of_range(double theta, double omega) {
  const double trained = static_cast<double>(kTrained) * theta;
  return trained < kTwoPi && static_cast<double>(kUsed - 1) * omega >= trained;
}

}  // namespace

int main() {
  const rope::layout layout = rope::layout::half_split;
  // What an engine reads from config.json: rope_theta, head_dim and rope_scaling.
  rope::model_config cfg;
  cfg.rope_theta = 1e4;
  cfg.head_dim = kHeadDim;
  cfg.max_position_embeddings = kUsed;
  cfg.rope_scaling = {
      {"rope_type", "yarn"}, {"factor", 4}, {"original_max_position_embeddings", kTrained}};
  const rope::scaled_spec yarn = rope::from_config(cfg, layout);
  const rope::spec& spec = yarn.spec;
  const rope::scaling linear = rope::scaling::linear_interpolation(4);

  struct method {
    const char* name;
    rope::frequencies f;
    std::shared_ptr<const rope::table<float>> tab;
  };
  std::vector<method> methods;
  for (auto [name, sc] : {std::pair<const char*, rope::scaling>{"none", rope::scaling{}},
                          {"linear x4", linear},
                          {"yarn x4", yarn.scaling}}) {
    method m{name, rope::compute_frequencies(spec, sc).frequencies,
             rope::get_table<float>(spec, sc, /*seq_len=*/kUsed, /*positions=*/kUsed)};
    methods.push_back(m);
  }
  const std::vector<double>& theta = methods[0].f.inv_freq;

  bool ok = true;
  std::vector<std::vector<double>> angle;
  for (const method& m : methods) {
    angle.push_back(measured_angles(*m.tab, kUsed - 1));
    if (angle.back().size() != static_cast<std::size_t>(kPairs)) {
      std::printf("FAILED: rope::apply refused position %lld\n", static_cast<long long>(kUsed - 1));
      return 1;
    }
    // The measured angle is the expected one (reduced mod 2 pi), to float accuracy.
    for (std::size_t j = 0; j < kPairs; ++j) {
      const double want = std::fmod(static_cast<double>(kUsed - 1) * m.f.inv_freq[j], kTwoPi);
      double diff = std::fabs(angle.back()[j] - want);
      diff = std::fmin(diff, kTwoPi - diff);
      if (diff > 1e-5) {
        std::printf("FAILED: %s pair %zu: measured angle %.7f, expected %.7f\n", m.name, j,
                    angle.back()[j], want);
        ok = false;
      }
    }
  }

  std::printf(
      "Model trained on L = %lld positions (head_dim %d, base %.0f, %s), used at %lld tokens.\n",
      static_cast<long long>(kTrained), kHeadDim, spec.base, rope::to_string(layout),
      static_cast<long long>(kUsed));
  std::printf("YaRN: %s, attention factor %.6f (multiplies cos and sin of the rotated dims)\n",
              methods[2].f.description.c_str(), methods[2].f.attention_factor);
  std::printf(
      "\nPer band of 8 pairs: wavelength 2 pi / theta_j (positions); angle of the slowest pair of\n"
      "the band at position %lld as rope turned it (rad, mod 2 pi), vs the largest angle it saw\n"
      "in training (\"all\" if it turned fully); and how many pairs of the band leave the\n"
      "trained range anywhere in [0, %lld).\n\n",
      static_cast<long long>(kUsed - 1), static_cast<long long>(kUsed));
  std::printf("%7s %21s %9s | %8s %4s | %8s %4s | %8s %4s\n", "pairs", "wavelength", "trained",
              "none", "out", "linear", "out", "yarn", "out");
  int total_out[3] = {0, 0, 0};
  for (int band = 0; band < kPairs / 8; ++band) {
    const std::size_t j0 = static_cast<std::size_t>(band * 8), j1 = j0 + 7;
    const double trained = static_cast<double>(kTrained) * theta[j1];
    char trained_text[32];
    if (trained >= kTwoPi)
      std::snprintf(trained_text, sizeof trained_text, "all");
    else
      std::snprintf(trained_text, sizeof trained_text, "%.4f", trained);
    std::printf("%3zu-%-3zu %10.1f-%-10.1f %9s", j0, j1, kTwoPi / theta[j0], kTwoPi / theta[j1],
                trained_text);
    for (std::size_t k = 0; k < methods.size(); ++k) {
      int out = 0;
      for (std::size_t j = j0; j <= j1; ++j)
        out += out_of_range(theta[j], methods[k].f.inv_freq[j]) ? 1 : 0;
      total_out[k] += out;
      std::printf(" | %8.4f %4d", angle[k][j1], out);
    }
    std::printf("\n");
  }
  std::printf("\npairs outside the trained range: none %d, linear %d, yarn %d (of %d)\n",
              total_out[0], total_out[1], total_out[2], kPairs);

  // YaRN keeps the fast pairs exactly (local order intact), unlike linear interpolation.
  int kept = 0;
  for (std::size_t j = 0; j < kPairs; ++j) kept += methods[2].f.inv_freq[j] == theta[j] ? 1 : 0;
  std::printf("yarn keeps %d fast pairs unchanged; linear interpolation slows all %d by 4\n", kept,
              kPairs);

  ok = ok && total_out[0] > 0 && total_out[1] == 0 && total_out[2] == 0 && kept > 0;
  std::printf(
      ok ? "OK: without scaling %d pairs see unseen angles; linear and YaRN bring them back\n"
         : "FAILED\n",
      total_out[0]);
  return ok ? 0 : 1;
}
