// Batched decode: several sequences of different lengths decode together, and each new key
// goes to its own sequence's next slot of one shared KV cache.
//
// The cache holds 4 sequences of up to 16 tokens: slot s * 16 + p is sequence s's token at
// position p, every slot [2 KV heads, 64] in fp16. Prefill writes each prompt's keys into its
// sequence's slots (rope::apply_to_slots: consecutive slots, one job). Then each decode step
// is one batch: one token per live sequence at its own position, queries rotated in place and
// keys into their sequences' slots in one call (rope::apply_qk_to_slots); a sequence that has
// finished keeps its row in the batch with slot -1 (vLLM's padding slot), which writes
// nothing. The example checks that every cached key has the bits rope::apply gives when one
// sequence's keys are rotated on their own, that the finished sequence's slots were never
// touched, and that a slot past the cache is refused with nothing written.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <rope/rope.hpp>
#include <vector>

namespace {

constexpr int n_seqs = 4, max_len = 16, n_q_heads = 4, n_kv_heads = 2, head_dim = 64;
constexpr int kv_row = n_kv_heads * head_dim, q_row = n_q_heads * head_dim;
using kv_t = rope::float16;

// A sequence's key at position p: a fixed pseudo-random vector (standing in for x W_k).
std::vector<float> key_of(int seq, int p) {
  std::mt19937 gen(static_cast<unsigned>(1000 * seq + p));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> k(kv_row);
  for (auto& e : k) e = dist(gen);
  return k;
}

}  // namespace

int main() {
  const rope::spec spec = rope::make_spec(head_dim, head_dim, 1e4, rope::layout::half_split);
  auto tab = rope::get_table<float>(spec, max_len);
  const kv_t canary = rope::storage_traits<kv_t>::store(-99.0f);
  std::vector<kv_t> cache(static_cast<std::size_t>(n_seqs * max_len * kv_row), canary);
  const auto cache_view = rope::packed_heads(cache.data(), n_seqs * max_len, n_kv_heads, head_dim);
  auto slot = [](int seq, int p) { return std::int64_t{seq} * max_len + p; };

  // Prefill: prompts of 5, 9, 2 and 3 tokens, each sequence in one call.
  const int prompt[n_seqs] = {5, 9, 2, 3};
  const int finish[n_seqs] = {12, 16, 6, 3};  // length when each sequence stops (3: already done)
  int len[n_seqs] = {0, 0, 0, 0};
  bool ok = true;
  for (int s = 0; s < n_seqs; ++s) {
    std::vector<float> k;
    std::vector<std::int64_t> pos, slots;
    for (int p = 0; p < prompt[s]; ++p) {
      const std::vector<float> kp = key_of(s, p);
      k.insert(k.end(), kp.begin(), kp.end());
      pos.push_back(p);
      slots.push_back(slot(s, p));
    }
    const rope::status st = rope::apply_to_slots(
        *tab, rope::packed_heads(k.data(), prompt[s], n_kv_heads, head_dim), cache_view,
        pos.data(), slots.data());
    ok = ok && st == rope::status::ok;
    len[s] = prompt[s];
  }

  // Decode: one batch row per sequence; a finished sequence's row has slot -1.
  int steps = 0;
  for (;; ++steps) {
    std::vector<float> q(n_seqs * q_row, 0.25f), k(n_seqs * kv_row);
    std::vector<std::int64_t> pos(n_seqs), slots(n_seqs);
    int live = 0;
    for (int s = 0; s < n_seqs; ++s) {
      const bool done = len[s] >= finish[s];
      const std::vector<float> kp = key_of(s, done ? 0 : len[s]);
      std::memcpy(k.data() + s * kv_row, kp.data(), sizeof(float) * kv_row);
      pos[static_cast<std::size_t>(s)] = done ? 0 : len[s];
      slots[static_cast<std::size_t>(s)] = done ? -1 : slot(s, len[s]);
      live += !done;
    }
    if (live == 0) break;
    const auto qv = rope::packed_heads(q.data(), n_seqs, n_q_heads, head_dim);
    const rope::status st = rope::apply_qk_to_slots(
        *tab, qv, qv, rope::packed_heads(k.data(), n_seqs, n_kv_heads, head_dim), cache_view,
        pos.data(), slots.data());
    ok = ok && st == rope::status::ok;
    for (int s = 0; s < n_seqs; ++s) len[s] += len[s] < finish[s];
    // (attention over each sequence's slots 0 .. len - 1 would follow here)
  }
  std::printf("batched decode: %d sequences, prompts 5/9/2/3, %d decode steps, lengths %d/%d/%d/%d\n",
              n_seqs, steps, len[0], len[1], len[2], len[3]);

  // Check: each sequence's keys rotated on their own by rope::apply into a packed fp16 buffer
  // equal its cache slots bit for bit; slots past a sequence's length hold the canary.
  int mismatches = 0, untouched_bad = 0;
  for (int s = 0; s < n_seqs; ++s) {
    std::vector<float> k;
    std::vector<std::int32_t> pos;
    for (int p = 0; p < len[s]; ++p) {
      const std::vector<float> kp = key_of(s, p);
      k.insert(k.end(), kp.begin(), kp.end());
      pos.push_back(p);
    }
    std::vector<kv_t> ref(k.size());
    ok = ok && rope::apply(*tab, rope::packed_heads(k.data(), len[s], n_kv_heads, head_dim),
                           rope::packed_heads(ref.data(), len[s], n_kv_heads, head_dim),
                           pos.data()) == rope::status::ok;
    mismatches += std::memcmp(ref.data(), cache.data() + slot(s, 0) * kv_row,
                              ref.size() * sizeof(kv_t)) != 0;
    for (int p = len[s]; p < max_len; ++p)
      for (int i = 0; i < kv_row; ++i)
        untouched_bad += std::memcmp(&cache[static_cast<std::size_t>(slot(s, p) * kv_row + i)],
                                     &canary, sizeof(kv_t)) != 0;
  }
  std::printf("cached keys equal to one sequence rotated alone: %s\n",
              mismatches == 0 ? "yes, bit for bit" : "NO");
  std::printf("slots past each sequence (and the finished one's -1 rows): %s\n",
              untouched_bad == 0 ? "untouched" : "WRITTEN");

  // A slot past the cache: refused, nothing written.
  const std::vector<kv_t> before = cache;
  std::vector<float> k1 = key_of(0, 0);
  const std::int64_t p1 = 0, bad_slot = n_seqs * max_len;
  const rope::status st =
      rope::apply_to_slots(*tab, rope::packed_heads(k1.data(), 1, n_kv_heads, head_dim),
                           cache_view, &p1, &bad_slot);
  const bool refused = st == rope::status::position_out_of_range &&
                       std::memcmp(before.data(), cache.data(), cache.size() * sizeof(kv_t)) == 0;
  std::printf("slot %lld of a %d-slot cache: %s\n", static_cast<long long>(bad_slot),
              n_seqs * max_len, refused ? rope::message(st) : "NOT REFUSED");

  ok = ok && mismatches == 0 && untouched_bad == 0 && refused;
  std::printf("%s\n", ok ? "batched_decode: ok" : "batched_decode: FAILED");
  return ok ? 0 : 1;
}
