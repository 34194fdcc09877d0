// The fuzz target's checks (tests/fuzz/apply_fuzz.cpp describes them), shared by its two
// translation units: apply_fuzz.cpp (the entry point, the scaling decoders, float and double
// storage) and apply_fuzz_16bit.cpp (fp16 and bf16 storage). Two, so that the fuzz preset,
// which builds this target alone, compiles them on two cores.
#ifndef ROPE_TESTS_FUZZ_APPLY_FUZZ_HPP
#define ROPE_TESTS_FUZZ_APPLY_FUZZ_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <rope/rope.hpp>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// Outcome counts (for the replay driver's summary): [0] spec refused, [1 + status] per hot-path
// status, [8] success with rows rotated. Defined in apply_fuzz.cpp.
extern "C" long rope_fuzz_outcomes[9];

namespace rope_fuzz {

// The storage types under test. A new storage type (e.g. rope::float16, rope::bfloat16 when
// they land) is one more entry here; everything below is generic over it.
using storage_types = std::tuple<float, double, rope::float16, rope::bfloat16>;

[[noreturn]] inline void fail(const char* what, long long a, long long b = 0) {
  std::fprintf(stderr, "apply_fuzz: FINDING: %s (%lld, %lld)\n", what, a, b);
  std::fflush(stderr);
  std::abort();
}
// FUZZ_CHECK(condition, value [, value]): the values are printed with a finding.
#define FUZZ_CHECK(cond, ...)              \
  do {                                     \
    if (!(cond)) fail(#cond, __VA_ARGS__); \
  } while (0)

// Reads the input front to back; past its end every read gives zeros.
struct reader {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  // The next sizeof(U) bytes (zeros past the end) as a U. Assembled in an integer, not a byte
  // array: GCC 12's -Wstringop-overflow misjudges the array form once inlined deep enough.
  template <class U>
  U raw() {
    static_assert(sizeof(U) <= sizeof(std::uint64_t), "raw() reads at most 8 bytes");
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < sizeof(U); ++i) bits |= static_cast<std::uint64_t>(u8()) << (8 * i);
    U v;
    std::memcpy(&v, &bits, sizeof v);  // little-endian hosts: the same value as the byte form
    return v;
  }
};

// ---------------------------------------------------------------------------------------------
// Decoding of the spec.

inline int decode_rotary_dim(reader& in, int head_dim) {
  switch (in.u8() % 8) {
    case 0:
    case 1:
      return head_dim;
    case 2:
      return head_dim / 2 - (head_dim / 2) % 2;
    case 3:
      return head_dim / 4 - (head_dim / 4) % 2;
    case 4:
      return 2;
    case 5:
      return head_dim - 2;
    case 6:
      return head_dim + 1 - 2 * (in.u8() % 2);  // odd, or just past head_dim
    default:
      return static_cast<int>(in.raw<std::int16_t>());  // anything, mostly invalid
  }
}

inline double decode_base(reader& in) {
  switch (in.u8() % 12) {
    case 0:
    case 1:
    case 2:
    case 10:
      return 1e4;
    case 3:
      return 5e5;
    case 4:
      return 1e6;
    case 5:
      return 1e7;
    case 6:
      return 1.0;
    case 7:
      return std::numeric_limits<double>::quiet_NaN();
    case 8:
      return std::numeric_limits<double>::infinity();
    case 9:
      return -2.0;
    default:
      return in.raw<double>();
  }
}

inline bool spec_is_valid(const rope::spec& s) {
  return s.head_dim > 0 && s.rotary_dim >= 2 && s.rotary_dim % 2 == 0 &&
         s.rotary_dim <= s.head_dim && s.rotary_dim <= rope::max_rotary_dim && s.base > 1.0 &&
         std::isfinite(s.base) &&
         (s.layout == rope::layout::interleaved || s.layout == rope::layout::half_split);
}

// ---------------------------------------------------------------------------------------------
// Tables, kept between inputs (building one is the slow part), dropped when too large.

struct table_key {
  int type_index, rotary_dim;
  rope::layout layout;
  double base;
  std::int64_t length;
  rope::table_mode mode;
  std::vector<double> identity;  // the scaling method and all its parameters
  bool operator<(const table_key& o) const {
    return std::tie(type_index, rotary_dim, layout, base, length, mode, identity) <
           std::tie(o.type_index, o.rotary_dim, o.layout, o.base, o.length, o.mode, o.identity);
  }
};

inline std::map<table_key, std::shared_ptr<const void>>& table_store() {
  static std::map<table_key, std::shared_ptr<const void>> store;
  return store;
}
inline std::size_t& table_store_bytes() {
  static std::size_t bytes = 0;
  return bytes;
}

template <class Real>
std::shared_ptr<const rope::table<Real>> get_table(int type_index, const rope::frequencies& f,
                                                   const rope::spec& s, std::int64_t length,
                                                   rope::table_mode mode) {
  const table_key key{type_index, s.rotary_dim, s.layout, s.base, length, mode, f.identity};
  auto& store = table_store();
  auto it = store.find(key);
  if (it != store.end()) return std::static_pointer_cast<const rope::table<Real>>(it->second);
  if (table_store_bytes() > (std::size_t{384} << 20)) {
    store.clear();
    table_store_bytes() = 0;
  }
  auto t = rope::table<Real>::build(f, s.layout, length, mode);
  table_store_bytes() += t->bytes();
  store.emplace(key, t);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Views and buffers.

struct geometry {
  std::ptrdiff_t n_tokens = 0, n_heads = 0, head_dim = 0, token_stride = 0, head_stride = 0;
};

inline geometry decode_geometry(reader& in, std::ptrdiff_t n_tokens, std::ptrdiff_t n_heads,
                                std::ptrdiff_t head_dim) {
  geometry g{n_tokens, n_heads, head_dim, 0, 0};
  const std::ptrdiff_t pad = in.u8() % 5;
  switch (in.u8() % 8) {
    case 0:
    case 1:
    case 2:  // [T, H, D] packed
      g.head_stride = head_dim;
      g.token_stride = n_heads * head_dim;
      break;
    case 3:
    case 4:  // [T, H, D] with padding after each head and each token
      g.head_stride = head_dim + pad;
      g.token_stride = n_heads * (head_dim + pad) + pad;
      break;
    case 5:  // [H, T, D]
      g.token_stride = head_dim + pad;
      g.head_stride = n_tokens * (head_dim + pad) + pad;
      break;
    case 6:  // zero and overlapping strides
      g.head_stride = in.u8() % 2 ? 0 : head_dim - 1;
      g.token_stride = in.u8() % 2 ? 0 : head_dim;
      break;
    default:  // anything
      g.head_stride = in.raw<std::int16_t>();
      g.token_stride = in.raw<std::int16_t>();
      break;
  }
  return g;
}

// Element range [lo, hi) the rows of g span, relative to its data pointer (empty for negative
// counts: such views own no memory and must be refused); false when the span is absurdly large.
inline bool span_of(const geometry& g, std::ptrdiff_t& lo, std::ptrdiff_t& hi) {
  lo = hi = 0;
  if (g.n_tokens <= 0 || g.n_heads <= 0 || g.head_dim < 0) return true;
  for (std::ptrdiff_t t = 0; t < g.n_tokens; t += std::max<std::ptrdiff_t>(g.n_tokens - 1, 1))
    for (std::ptrdiff_t h = 0; h < g.n_heads; h += std::max<std::ptrdiff_t>(g.n_heads - 1, 1)) {
      const std::ptrdiff_t r = t * g.token_stride + h * g.head_stride;
      lo = std::min(lo, r);
      hi = std::max(hi, r + g.head_dim);
    }
  return hi - lo <= (std::ptrdiff_t{1} << 20);
}

// An exactly sized allocation: `offset` leading elements, then the span of the view.
template <class T>
struct buffer {
  std::unique_ptr<T[]> mem;
  std::size_t size = 0;
  T* data = nullptr;  // the view's data pointer (may be past mem when strides are negative)
  void allocate(const geometry& g, std::ptrdiff_t offset) {
    std::ptrdiff_t lo, hi;
    span_of(g, lo, hi);
    // At least one element, so an empty view still has a non-null pointer.
    size = std::max<std::size_t>(1, static_cast<std::size_t>(offset + (hi - lo)));
    mem.reset(new T[size]);
    data = mem.get() + offset - lo;
  }
  std::vector<unsigned char> bytes() const {
    std::vector<unsigned char> b(size * sizeof(T));
    if (size) std::memcpy(b.data(), mem.get(), b.size());
    return b;
  }
  bool unchanged(const std::vector<unsigned char>& b) const {
    return b.size() == size * sizeof(T) &&
           (size == 0 || std::memcmp(b.data(), mem.get(), b.size()) == 0);
  }
  T* begin() const { return mem.get(); }
};

template <class T>
void fill_payload(buffer<T>& b, reader& in) {
  const std::uint8_t mode = in.u8();
  for (std::size_t i = 0; i < b.size; ++i) {
    if (mode % 4 == 0) {  // raw bytes: every bit pattern, NaN, Inf and denormals included
      unsigned char bytes[sizeof(T)];
      for (auto& c : bytes) c = in.u8();
      std::memcpy(&b.mem[i], bytes, sizeof(T));
    } else {  // ordinary values in [-2, 2) with a special value now and then
      using R = rope::compute_type_t<T>;
      const std::uint8_t k = in.u8();
      R v = static_cast<R>(static_cast<int>(k) - 128) / static_cast<R>(64);
      if (mode % 4 == 1 && k % 16 == 0) {
        const R specials[] = {std::numeric_limits<R>::quiet_NaN(),
                              std::numeric_limits<R>::infinity(),
                              -std::numeric_limits<R>::infinity(),
                              std::numeric_limits<R>::denorm_min(),
                              std::numeric_limits<R>::min(),
                              std::numeric_limits<R>::max(),
                              R(-0.0)};
        v = specials[(k / 16) % 7];
      }
      b.mem[i] = rope::storage_traits<T>::store(v);
    }
  }
}

template <class T>
void fill_canary(buffer<T>& b) {
  if (b.size) std::memset(static_cast<void*>(b.mem.get()), 0xA5, b.size * sizeof(T));
}

template <class T>
rope::heads_view<T> view_of(T* data, const geometry& g) {
  return {data, g.n_tokens, g.n_heads, g.head_dim, g.token_stride, g.head_stride};
}

// Runs call() on the scalar path and goes back to the path that was active (with runtime
// dispatch; otherwise there is one path and call() runs on it): the bit-for-bit references.
template <class F>
rope::status on_scalar_path(F call) {
#if defined(ROPE_RUNTIME_DISPATCH)
  const rope::isa path = rope::active_isa();
  FUZZ_CHECK(rope::force_isa(rope::isa::scalar), static_cast<int>(path));
  const rope::status st = call();
  FUZZ_CHECK(rope::force_isa(path), static_cast<int>(path));
  return st;
#else
  return call();
#endif
}

// Rotated elements against their reference: the same bits, or both NaN. IEEE 754 leaves the
// sign and payload of a NaN result open; the paths (and a vector path's in-place and
// out-of-place kernels) multiply and add in the same order but do not always pass on the same
// NaN operand (Inf * 0 gives the default NaN, -nan on x86, where another order passes a +nan
// on), so NaN-ness is the contract for a NaN result and the bits are for every other result.
template <class T>
bool same_results(const T* a, const T* b, std::size_t n) {
  if (n == 0 || std::memcmp(a, b, n * sizeof(T)) == 0) return true;
  using traits = rope::storage_traits<T>;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) == 0) continue;
    if (!std::isnan(static_cast<double>(traits::load(a[i]))) ||
        !std::isnan(static_cast<double>(traits::load(b[i]))))
      return false;
  }
  return true;
}

// Marks which elements of [mem, mem + size) the rows of g (at data) cover; false when two rows
// share an element. Every row must lie inside the allocation.
template <class T>
bool cover(const T* mem, std::size_t size, const T* data, const geometry& g,
           std::vector<unsigned char>& mark) {
  mark.assign(size, 0);
  if (g.n_tokens <= 0 || g.n_heads <= 0) return true;
  for (std::ptrdiff_t t = 0; t < g.n_tokens; ++t)
    for (std::ptrdiff_t h = 0; h < g.n_heads; ++h)
      for (std::ptrdiff_t i = 0; i < g.head_dim; ++i) {
        const std::ptrdiff_t e = (data - mem) + t * g.token_stride + h * g.head_stride + i;
        FUZZ_CHECK(e >= 0 && static_cast<std::size_t>(e) < size, e, static_cast<long long>(size));
        auto& m = mark[static_cast<std::size_t>(e)];
        if (m) return false;
        m = 1;
      }
  return true;
}

// Marks the rotary block [0, d) of every row of g, whose first row starts `at` elements into
// its buffer, in `rotated` (one entry per element of that buffer; marks accumulate).
inline void mark_rotary(std::vector<unsigned char>& rotated, std::ptrdiff_t at, const geometry& g,
                        std::ptrdiff_t d) {
  for (std::ptrdiff_t t = 0; t < g.n_tokens; ++t)
    for (std::ptrdiff_t h = 0; h < g.n_heads; ++h)
      for (std::ptrdiff_t i = 0; i < d; ++i)
        rotated[static_cast<std::size_t>(at + t * g.token_stride + h * g.head_stride + i)] = 1;
}

// A view of geometry g placed in a buffer of `size` elements with its lowest element `lowest`
// elements in: its data pointer's offset there (>= 0, as span_of's lo <= 0), or -1 when the
// rows do not fit.
inline std::ptrdiff_t place_in(const geometry& g, std::size_t size, std::ptrdiff_t lowest) {
  std::ptrdiff_t lo, hi;
  span_of(g, lo, hi);
  return lowest >= 0 && lowest + (hi - lo) <= static_cast<std::ptrdiff_t>(size) ? lowest - lo : -1;
}

// Where two views share one buffer (each first row `at` elements in): whether their rows' element
// ranges meet (what a refusal needs: rope's overlap test is conservative), and whether no
// element of one's rows is an element of the other's (what an accepted call needs).
inline bool extents_meet(std::ptrdiff_t at_a, const geometry& ga, std::ptrdiff_t at_b,
                         const geometry& gb) {
  std::ptrdiff_t lo_a, hi_a, lo_b, hi_b;
  span_of(ga, lo_a, hi_a);
  span_of(gb, lo_b, hi_b);
  return lo_a < hi_a && lo_b < hi_b && at_a + lo_a < at_b + hi_b && at_b + lo_b < at_a + hi_a;
}
inline bool rows_apart(std::size_t n, std::ptrdiff_t at_a, const geometry& ga, std::ptrdiff_t at_b,
                       const geometry& gb) {
  std::vector<unsigned char> a(n), b(n);
  mark_rotary(a, at_a, ga, ga.head_dim);
  mark_rotary(b, at_b, gb, gb.head_dim);
  for (std::size_t e = 0; e < n; ++e)
    if (a[e] && b[e]) return false;
  return true;
}

// A buffer of n elements against its reference: the marked (rotated) elements as
// same_results, every other one byte for byte.
template <class T>
void check_like_reference(const T* mem, const T* ref, const std::vector<unsigned char>& rotated,
                          std::size_t n) {
  for (std::size_t e = 0; e < n; ++e)
    FUZZ_CHECK(rotated[e] ? same_results(&mem[e], &ref[e], 1)
                          : std::memcmp(&mem[e], &ref[e], sizeof(T)) == 0,
               static_cast<long long>(e));
}

// A count from 0 to max, or -1 (byte 255).
inline std::ptrdiff_t decode_count(reader& in, std::uint8_t max) {
  const std::uint8_t b = in.u8();
  return b == 255 ? -1 : static_cast<std::ptrdiff_t>(b % (max + 1));
}

// The views' head dim: head_dim, now and then shorter than the rotary block d, or 0.
inline std::ptrdiff_t decode_view_dim(reader& in, std::ptrdiff_t head_dim, std::ptrdiff_t d) {
  const std::uint8_t b = in.u8();
  return b == 250 ? d - 1 : (b == 251 ? 0 : head_dim);
}

// ---------------------------------------------------------------------------------------------
// Positions.

// Appends v as an int32 (wrapped: the value the call uses is what counts) and as the int64 the
// call sees: v itself, or with int32 positions (or slots) the wrapped value.
inline void push_position(std::int64_t v, bool as_int32, std::vector<std::int64_t>& v64,
                          std::vector<std::int32_t>& v32) {
  v32.push_back(static_cast<std::int32_t>(v));
  v64.push_back(as_int32 ? v32.back() : v);
}

inline std::int64_t decode_position(reader& in, std::int64_t length) {
  const std::uint8_t k = in.u8();
  const std::int64_t near = (k >> 5) % 3 - 1;  // -1, 0, +1
  switch (k % 32) {
    case 0:
      return length - 1;
    case 1:
      return length;
    case 2:
      return -1;
    case 3:
      return std::numeric_limits<std::int32_t>::min();
    case 4:
      return (std::int64_t{1} << 24) + near;
    case 5:
      return (std::int64_t{1} << 31) + near;
    case 6:
      return (std::int64_t{1} << 32) + near;
    case 7:
      return std::numeric_limits<std::int64_t>::max();
    case 8:
      return std::numeric_limits<std::int64_t>::min();
    case 9:
      return in.raw<std::int64_t>();
    default:  // in range, mostly
      return static_cast<std::int64_t>(in.raw<std::uint32_t>() %
                                       static_cast<std::uint64_t>(length));
  }
}

// M-RoPE sections (rope/mrope.hpp) for P pairs, consecutive, interleaved, alternating or
// balanced, and stream_of[j], pair j's stream (0 temporal, 1 height, 2 width), built from them
// as Qwen2-VL (consecutive runs), Qwen3-VL (height at pairs 1, 4, 7, ..., width at 2, 5, 8, ...,
// the rest temporal) and ERNIE-4.5-VL / Bailing (height at the even and width at the odd pairs
// below height + width, equal counts; the rest temporal) assign pairs; openPangu's balanced
// order is the library's own list here (mrope_test checks it against Huawei's listing; this
// checks the gathered rows against it). Three inputs in eight give sections that may not
// assign exactly the P pairs: one pair too many, a count lowered by one (negative from 0), or
// more interleaved height pairs than there are pairs j % 3 == 1 (alternating: a height that
// is not the width; balanced: no temporal pair). Returns whether they assign them.
inline bool decode_sections(reader& in, std::ptrdiff_t P, rope::mrope_sections& sec,
                            std::vector<int>& stream_of) {
  const std::uint8_t b = in.u8();
  sec.interleaved = b % 2 == 1;
  sec.hw_alternating = !sec.interleaved && (b >> 4) % 2 == 1;  // ERNIE-4.5-VL, Bailing
  sec.balanced = !sec.interleaved && !sec.hw_alternating && (b >> 5) % 2 == 1;  // openPangu
  std::ptrdiff_t most_h = 0, most_w = 0;  // pairs j % 3 == 1 and j % 3 == 2
  for (std::ptrdiff_t j = 0; j < P; ++j) {
    most_h += j % 3 == 1;
    most_w += j % 3 == 2;
  }
  const std::ptrdiff_t h =
      in.u8() % ((sec.interleaved ? most_h : sec.hw_alternating ? P / 2 : P) + 1);
  const std::ptrdiff_t w_byte = in.u8() % ((sec.interleaved ? most_w : P - h) + 1);
  const std::ptrdiff_t w = sec.hw_alternating ? h : w_byte;
  sec.height = static_cast<int>(h);
  sec.width = static_cast<int>(w);
  sec.temporal = static_cast<int>(P - h - w);
  switch ((b >> 1) % 8) {
    case 5:
      ++sec.temporal;
      break;
    case 6:
      --sec.height;
      ++sec.temporal;
      break;
    case 7:
      sec.height = static_cast<int>(most_h + 1);
      sec.temporal = static_cast<int>(P - most_h - 1 - w);
      break;
    default:
      break;
  }
  if (sec.temporal < 0 || sec.height < 0 || sec.width < 0 ||
      std::ptrdiff_t{sec.temporal} + sec.height + sec.width != P)
    return false;
  stream_of.assign(static_cast<std::size_t>(P), 0);
  if (sec.hw_alternating) {  // pairs below height + width alternate height, width
    if (sec.height != sec.width) return false;
    for (int j = 0; j < sec.height + sec.width; ++j)
      stream_of[static_cast<std::size_t>(j)] = j % 2 == 0 ? 1 : 2;
    return true;
  }
  if (sec.balanced) {
    if (sec.temporal < 1) return false;
    std::vector<unsigned char> list(static_cast<std::size_t>(P));
    rope::detail::mrope_streams(sec, list.size(), list.data());
    for (std::size_t j = 0; j < list.size(); ++j) stream_of[j] = list[j];
    return true;
  }
  for (int i = 0; i < sec.height; ++i) {
    const std::ptrdiff_t j = sec.interleaved ? 3 * i + 1 : sec.temporal + i;
    if (j >= P) return false;
    stream_of[static_cast<std::size_t>(j)] = 1;
  }
  for (int i = 0; i < sec.width; ++i) {
    const std::ptrdiff_t j = sec.interleaved ? 3 * i + 2 : sec.temporal + sec.height + i;
    if (j >= P) return false;
    stream_of[static_cast<std::size_t>(j)] = 2;
  }
  return true;
}

// XD-RoPE sections (rope::xdrope_sections: HunyuanOCR, Hunyuan-VL) for P pairs: four
// consecutive runs (0 sequence position, 1 column, 2 row, 3 image index), stream_of[j] pair
// j's stream. Two inputs in eight give counts that may be refused: one pair too many, or the
// column count lowered by one and the position count raised (refused where it goes negative). Returns whether they assign the P pairs.
inline bool decode_xd_sections(reader& in, std::ptrdiff_t P, rope::xdrope_sections& sec,
                               std::vector<int>& stream_of) {
  const std::uint8_t b = in.u8();
  std::ptrdiff_t left = P;
  std::ptrdiff_t c[4];
  for (int k = 0; k < 3; ++k) {
    c[k] = in.u8() % (left + 1);
    left -= c[k];
  }
  c[3] = left;
  if (b % 8 == 5) ++c[0];
  if (b % 8 == 6) {
    --c[1];
    ++c[0];
  }
  sec.position = static_cast<int>(c[0]);
  sec.width = static_cast<int>(c[1]);
  sec.height = static_cast<int>(c[2]);
  sec.image = static_cast<int>(c[3]);
  if (c[0] < 0 || c[1] < 0 || c[0] + c[1] + c[2] + c[3] != P) return false;
  stream_of.assign(static_cast<std::size_t>(P), 0);
  std::size_t j = 0;
  for (int k = 0; k < 4; ++k)
    for (std::ptrdiff_t i = 0; i < c[k]; ++i) stream_of[j++] = k;
  return true;
}

// Whether `bytes` bytes at p lie outside the extent (lowest to highest element) of g's rows at
// data; a view without rows has none.
template <class T>
bool outside_rows(const void* p, std::size_t bytes, const T* data, const geometry& g) {
  std::ptrdiff_t lo, hi;
  span_of(g, lo, hi);
  if (g.n_tokens <= 0 || g.n_heads <= 0 || hi == lo) return true;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a + bytes <= reinterpret_cast<std::uintptr_t>(data + lo) ||
         reinterpret_cast<std::uintptr_t>(data + hi) <= a;
}

// ---------------------------------------------------------------------------------------------
// KV-cache slots (rope/slots.hpp).

// A slot for the next token (after `prev`) of a cache of n_slots tokens: the previous slot + 1
// (a run, also past the cache's end), -1 (skipped), an earlier token's slot (a repeat), the
// first slot past the cache, below -1 or past int32's range; else one in range.
inline std::int64_t decode_slot(reader& in, const std::vector<std::int64_t>& prev,
                                std::int64_t n_slots) {
  const std::uint8_t k = in.u8();
  const std::size_t t = prev.size();
  switch (k % 16) {
    case 0: case 1: case 2: case 3:
      if (t > 0 && prev.back() >= 0) return prev.back() + 1;
      break;
    case 4: case 5:
      return -1;
    case 6: case 7:
      if (t > 0) return prev[t - 1 - static_cast<std::size_t>(k >> 4) % t];
      break;
    case 8:
      return n_slots;
    case 9: {
      const std::int64_t far[4] = {-2, std::numeric_limits<std::int32_t>::min(),
                                   (std::int64_t{1} << 32) + (k >> 6),  // int32: 0-3
                                   std::numeric_limits<std::int64_t>::min()};
      return far[(k >> 4) % 4];
    }
    default:
      break;
  }
  return n_slots > 0 ? (k >> 4) % n_slots : -1;
}

// Outcomes of the entry points added after the first seeds (apply_to_slots, apply_qk_to_slots,
// apply_mrope, apply_qk_mrope, shift_positions, rerotate, apply_xdrope and apply_qk_xdrope),
// indexed as rope_fuzz_outcomes
// (which counts them too), printed at exit: after the replay driver's summary, at libFuzzer's end.
enum entry_index {
  e_slots,
  e_qk_slots,
  e_mrope,
  e_qk_mrope,
  e_shift,
  e_rerotate,
  e_xdrope,
  e_qk_xdrope,
  n_entries
};
inline long entry_outcomes[n_entries][9] = {};
struct entry_summary {
  ~entry_summary() {
    const char* entries[n_entries] = {"apply_to_slots",  "apply_qk_to_slots", "apply_mrope",
                                      "apply_qk_mrope",  "shift_positions",   "rerotate",
                                      "apply_xdrope",    "apply_qk_xdrope"};
    const char* names[9] = {"", "ok, nothing to do", "null_pointer", "bad_dimension",
                            "bad_stride", "overlapping_buffers", "position_out_of_range",
                            "bad_option", "ok, rows rotated"};
    for (int f = 0; f < n_entries; ++f)
      for (int i = 1; i < 9; ++i)
        if (entry_outcomes[f][i])
          std::printf("  %-17s %-22s %ld\n", entries[f], names[i], entry_outcomes[f][i]);
  }
};

// One more outcome (index as rope_fuzz_outcomes) of entry point e.
inline void count_outcome(int e, int index) {
  ++rope_fuzz_outcomes[index];
  ++entry_outcomes[e][index];
}

template <class U>
struct type_tag {
  using type = U;
};

template <class U>
std::unique_ptr<U[]> copy_of(const std::vector<unsigned char>& bytes) {
  std::unique_ptr<U[]> r(new U[std::max<std::size_t>(1, bytes.size() / sizeof(U))]);
  if (!bytes.empty()) std::memcpy(static_cast<void*>(r.get()), bytes.data(), bytes.size());
  return r;
}

// ---------------------------------------------------------------------------------------------
// The accuracy check of a successful out-of-place call (float and double storage).

// The elements of pair j of a row with P pairs: (2j, 2j + 1) interleaved, (j, j + P) half-split.
inline std::pair<std::size_t, std::size_t> pair_elements(bool interleaved, std::size_t j,
                                                         std::size_t P) {
  return interleaved ? std::make_pair(2 * j, 2 * j + 1) : std::make_pair(j, j + P);
}

// Whether (y0, y1) lies within `bound` of (x0, x1) rotated by phi and scaled by a.
inline bool near_rotation(long double x0, long double x1, long double y0, long double y1,
                          long double phi, long double a, long double bound) {
  const long double c = a * std::cos(phi), s = a * std::sin(phi);
  return std::fabs(y0 - (c * x0 - s * x1)) <= bound && std::fabs(y1 - (s * x0 + c * x1)) <= bound;
}

// pos_of(j): the position pair j was rotated by (one per token; M-RoPE: its stream's).
template <class T, class PosOf>
void check_accuracy_pairs(const rope::table<rope::compute_type_t<T>>& tab, const T* in,
                          const T* out, PosOf pos_of, std::ptrdiff_t rotary_dim, bool inverse) {
  using R = rope::compute_type_t<T>;
  if constexpr (std::is_same<T, R>::value) {
    using ld = long double;
    const ld u = std::numeric_limits<R>::epsilon() / 2;
    const std::size_t P = static_cast<std::size_t>(rotary_dim / 2);
    const bool inter = tab.layout() == rope::layout::interleaved;
    for (std::size_t j = 0; j < P; ++j) {
      const auto [i0, i1] = pair_elements(inter, j, P);
      const ld x0 = in[i0], x1 = in[i1];
      if (!std::isfinite(x0) || !std::isfinite(x1)) continue;
      const ld r = std::hypot(x0, x1);
      // Products may overflow (IEEE says inf): the inputs' and the table's, whose entries carry
      // the attention factor (a fuzzed scaling can make it 1e304: a float table of infinities).
      const ld a = tab.attention_factor();
      if (r > std::numeric_limits<R>::max() / 16 || std::fabs(a) * r > std::numeric_limits<R>::max() / 16 ||
          std::fabs(a) > std::numeric_limits<R>::max() / 16)
        continue;
      const std::int64_t p = pos_of(j);
      const ld phi =
          (inverse ? -1.0L : 1.0L) * static_cast<ld>(p) * static_cast<ld>(tab.inv_freq()[j]);
      // The reference angle is a long double product, off by up to |phi| * 2^-64: past 2^32 rad
      // (only absurd scaled frequencies get there; positions stay below 2^32 and real w_j <= 1)
      // that exceeds what the bound can tell apart, so such pairs are not checked here.
      if (std::fabs(phi) > 0x1p32L) continue;
      const ld theta = std::fabs(phi);
      // float: 3u r; double: (3 + |theta|) u r (rope/apply.hpp); plus the absolute error of
      // products that land among the denormals.
      // And a factor so small that the table's entries are subnormal (fuzzed: 2.7e-312) leaves
      // each entry off by up to half a subnormal step, times |x0| + |x1| <= 2 r.
      const ld dmin = static_cast<ld>(std::numeric_limits<R>::denorm_min());
      const ld bound = (std::is_same<R, float>::value ? 3 : 3 + theta) * u * r * a + 4 * dmin +
                       2 * r * dmin;
      if (!near_rotation(x0, x1, out[i0], out[i1], phi, a, bound))
        fail("rotated pair outside the accuracy bound", p, static_cast<long long>(j));
    }
  }
}

template <class T>
void check_accuracy(const rope::table<rope::compute_type_t<T>>& tab, const T* in, const T* out,
                    std::int64_t p, std::ptrdiff_t rotary_dim, bool inverse) {
  check_accuracy_pairs<T>(tab, in, out, [p](std::size_t) { return p; }, rotary_dim, inverse);
}

// ---------------------------------------------------------------------------------------------
// shift_positions and rerotate (rope/scaling.hpp): cached keys rotated again, no table.

double decode_scaling_number(reader& in);

// Frequencies rerotate and shift_positions must take (their documented contract): an even
// rotary dim in [2, max_rotary_dim] with one w_j per pair, each w_j >= 0 and below 2^990, and a
// positive finite attention factor.
inline bool frequencies_valid(const rope::frequencies& fr) {
  if (fr.rotary_dim < 2 || fr.rotary_dim % 2 != 0 || fr.rotary_dim > rope::max_rotary_dim ||
      fr.inv_freq.size() != static_cast<std::size_t>(fr.rotary_dim / 2))
    return false;
  for (double w : fr.inv_freq)
    if (!(w >= 0.0 && w < 0x1p990)) return false;
  return fr.attention_factor > 0.0 && std::isfinite(fr.attention_factor);
}

// A shift: small either way, 0, about +-2^32 (the position limit), or any 64-bit value.
inline std::int64_t decode_delta(reader& in) {
  const std::uint8_t b = in.u8();
  const std::int64_t near = (b >> 3) % 3 - 1;
  switch (b % 8) {
    case 0:
      return 0;
    case 4:
      return (std::int64_t{1} << 32) + near;
    case 5:
      return -(std::int64_t{1} << 32) + near;
    case 6:
      return in.raw<std::int64_t>();
    default:
      return (b >> 3) % 17 - 8;
  }
}

// One input for shift_positions (keys at p move to p + delta) or rerotate (from f to `to`, a
// copy of f now and then changed: another attention factor, the unscaled frequencies, one w_j
// scaled or made invalid, another rotary dim or list length). Keys in place, out of place into
// their own buffer, or moved within one buffer by 1-3 whole tokens either way (a cache that
// dropped or opens tokens: accepted for some layouts, refused as overlapping for others).
// Errors: nothing written, and a cause in the input. Success: the call was valid; the result
// equals the same call from a copy of the keys into a separate buffer (for a move: the buffer
// is its original bytes with the output rows replaced, whatever the order the rows were
// visited in), in place equals out of place, every byte outside the output rows unchanged, and
// (float, double) each pair within its bound of a long double rotation by
// (p + delta) w_to - p w_from, scaled by A_to / A_from.
template <class T>
void run_shift(reader& in, const rope::spec& s, const rope::frequencies& f) {
  using R = rope::compute_type_t<T>;
  const std::uint8_t opt = in.u8();
  const bool pos32 = opt % 2 == 0;
  const int how = (opt >> 1) % 4;  // 0 in place, 1 and 3 out of place, 2 moved in one buffer
  const bool rerot = (opt & 0x08) != 0;
  const bool bad_layout = (opt & 0xF0) == 0xF0;
  const rope::layout l =
      bad_layout ? static_cast<rope::layout>((opt >> 2) % 2 ? 3 : 0) : s.layout;
  const int e = rerot ? e_rerotate : e_shift;

  rope::frequencies to = f;
  if (rerot) {
    const std::uint8_t tb = in.u8();
    const std::size_t pick = (tb >> 3) % to.inv_freq.size();
    switch (tb % 8) {
      case 0:
        to.attention_factor *= decode_scaling_number(in);
        break;
      case 1:
        to = rope::default_frequencies(s);
        break;
      case 2:
        to.inv_freq[pick] *= 0.5 + in.u8() % 8;
        break;
      case 3: {
        const double odd[6] = {0x1p990, 0x1p989, -1.0, std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity(), 0.0};
        to.inv_freq[pick] = odd[in.u8() % 6];
        break;
      }
      case 4:
        to.rotary_dim += 2;
        to.inv_freq.push_back(1e-4);
        break;
      case 5:
        to.inv_freq.pop_back();
        break;
      default:
        break;
    }
  }
  const bool freqs_ok = frequencies_valid(f) && frequencies_valid(to) &&
                        f.rotary_dim == to.rotary_dim &&
                        std::isfinite(to.attention_factor / f.attention_factor);
  const std::int64_t delta = rerot ? 0 : decode_delta(in);

  const std::ptrdiff_t n_tokens = decode_count(in, 6), n_heads = decode_count(in, 3);
  const std::ptrdiff_t d = s.rotary_dim, view_dim = decode_view_dim(in, s.head_dim, d);
  const geometry g = decode_geometry(in, n_tokens, n_heads, view_dim);
  const geometry go = how % 2 == 1 && in.u8() % 4 == 0
                          ? decode_geometry(in, n_tokens, n_heads, view_dim)
                          : g;
  // A move by k tokens: the buffer holds |k| tokens more; in's rows k tokens above out's.
  const std::uint8_t move = how == 2 ? in.u8() : 0;
  const std::ptrdiff_t k = how == 2 ? (1 + move % 3) * ((move >> 2) % 2 ? 1 : -1) : 0;
  geometry galloc = g;
  if (how == 2 && n_tokens >= 0) galloc.n_tokens = n_tokens + (k > 0 ? k : -k);
  std::ptrdiff_t lo, hi;
  for (const geometry& x : {g, go, galloc})
    if (!span_of(x, lo, hi)) return;
  const std::ptrdiff_t offset = in.u8() % 8;

  constexpr std::int64_t limit = std::int64_t{1} << 32;
  const std::size_t n_pos = static_cast<std::size_t>(std::max<std::ptrdiff_t>(n_tokens, 1));
  std::vector<std::int64_t> pos64;
  std::vector<std::int32_t> pos32v;
  bool positions_ok = delta > -limit && delta < limit;
  for (std::size_t t = 0; t < n_pos; ++t) {
    push_position(decode_position(in, limit), pos32, pos64, pos32v);
    if (static_cast<std::ptrdiff_t>(t) < n_tokens)
      positions_ok = positions_ok && pos64[t] >= 0 && pos64[t] < limit &&
                     pos64[t] + delta >= 0 && pos64[t] + delta < limit;
  }
  const bool null_positions = in.u8() == 254;

  buffer<T> b, o;
  b.allocate(how == 2 ? galloc : g, offset);
  fill_payload(b, in);
  const bool null_data = in.u8() == 253;
  const std::ptrdiff_t ts = g.token_stride;
  T* in_data = b.data + (k > 0 ? k * ts : 0);
  T* out_data = in_data - k * ts;  // in place: in_data
  if (how % 2 == 1) {
    o.allocate(go, offset);
    fill_canary(o);
    out_data = o.data;
  }
  const geometry& gout = how % 2 == 1 ? go : g;
  const auto b_before = b.bytes(), o_before = o.bytes();

  // The call, and the same call from and into the buffers given (the reference below: into
  // rows of geometry g).
  auto call = [&](const T* from, T* into, const geometry& g_into, bool in_place) {
    auto with = [&](const auto* positions) {
      const auto vi = view_of<const T>(from, g);
      const auto vo = view_of<T>(into, g_into);
      if (rerot)
        return in_place ? rope::rerotate<T>(f, to, l, vo, positions)
                        : rope::rerotate<T>(f, to, l, vi, vo, positions);
      return in_place ? rope::shift_positions<T>(f, l, vo, positions, delta)
                      : rope::shift_positions<T>(f, l, vi, vo, positions, delta);
    };
    if (null_positions) return with(static_cast<const std::int64_t*>(nullptr));
    return pos32 ? with(pos32v.data()) : with(pos64.data());
  };
  const rope::status st = call(null_data ? nullptr : in_data,
                               null_data && how == 0 ? nullptr : out_data, gout, how == 0);
  const int sti = static_cast<int>(st);
  if (st != rope::status::ok) {
    FUZZ_CHECK(b.unchanged(b_before) && o.unchanged(o_before), sti);
    FUZZ_CHECK((st == rope::status::bad_option) == bad_layout, sti);
    if (st == rope::status::position_out_of_range) FUZZ_CHECK(!positions_ok, sti, delta);
    if (st == rope::status::null_pointer) FUZZ_CHECK(null_data || null_positions, sti);
    if (st == rope::status::bad_dimension)
      FUZZ_CHECK(!freqs_ok || n_tokens < 0 || n_heads < 0 || view_dim < d, sti, view_dim);
    if (st == rope::status::overlapping_buffers) FUZZ_CHECK(how == 2, sti, how);
    count_outcome(e, 1 + sti);
    return;
  }

  const bool work = n_tokens > 0 && n_heads > 0;
  FUZZ_CHECK(!bad_layout && freqs_ok && n_tokens >= 0 && n_heads >= 0, n_tokens, n_heads);
  count_outcome(e, work ? 8 : 1);
  if (!work) {
    FUZZ_CHECK(b.unchanged(b_before) && o.unchanged(o_before), 0);
    return;
  }
  FUZZ_CHECK(positions_ok && !null_positions && !null_data && view_dim >= d, n_tokens, delta);

  buffer<T>& host = how % 2 == 1 ? o : b;
  std::vector<unsigned char> mark;
  FUZZ_CHECK(cover(host.mem.get(), host.size, out_data, gout, mark), how);

  // The reference: the same call from a copy of the keys into a buffer of their own.
  const auto keys = copy_of<T>(b_before);
  const T* keys_in = keys.get() + (in_data - b.mem.get());
  buffer<T> sep;
  sep.allocate(g, 0);
  fill_canary(sep);
  const rope::status s2 = call(keys_in, sep.data, g, false);
  FUZZ_CHECK(s2 == rope::status::ok, static_cast<int>(s2));
  // What the output's buffer must hold: its bytes before, with each output row (the rotary
  // block, and out of place the pass-through block too) replaced by the reference's row.
  const auto expect = copy_of<T>(how % 2 == 1 ? o_before : b_before);
  std::vector<unsigned char> rotated(host.size, 0);
  const std::ptrdiff_t at = out_data - host.mem.get();
  const std::ptrdiff_t copied = how == 0 ? d : view_dim;
  for (std::ptrdiff_t t = 0; t < n_tokens; ++t)
    for (std::ptrdiff_t h = 0; h < n_heads; ++h) {
      const std::ptrdiff_t r = at + t * gout.token_stride + h * gout.head_stride;
      std::memcpy(static_cast<void*>(expect.get() + r),
                  sep.data + t * g.token_stride + h * g.head_stride,
                  static_cast<std::size_t>(copied) * sizeof(T));
    }
  mark_rotary(rotated, at, gout, d);
  check_like_reference(host.mem.get(), expect.get(), rotated, host.size);
  if (how % 2 == 1) FUZZ_CHECK(b.unchanged(b_before), 1);

  if constexpr (std::is_same<T, R>::value) {  // float and double: against a long double rotation
    using ld = long double;
    const ld u = std::numeric_limits<R>::epsilon() / 2;
    const ld ratio = static_cast<ld>(to.attention_factor) / static_cast<ld>(f.attention_factor);
    const std::size_t P = static_cast<std::size_t>(d / 2);
    const bool inter = s.layout == rope::layout::interleaved;
    for (std::ptrdiff_t t = 0; t < n_tokens; ++t) {
      const ld pa = static_cast<ld>(pos64[static_cast<std::size_t>(t)]), pb = pa + delta;
      for (std::ptrdiff_t h = 0; h < n_heads; ++h) {
        const T* x = keys_in + t * g.token_stride + h * g.head_stride;
        const T* y = out_data + t * gout.token_stride + h * gout.head_stride;
        for (std::size_t j = 0; j < P; ++j) {
          const auto [i0, i1] = pair_elements(inter, j, P);
          const ld x0 = x[i0], x1 = x[i1];
          const ld r = ratio * std::hypot(x0, x1);
          if (!std::isfinite(x0) || !std::isfinite(x1) ||
              !(r < static_cast<ld>(std::numeric_limits<R>::max()) / 16))
            continue;
          const ld wa = f.inv_freq[j], wb = to.inv_freq[j];
          const ld phi = pb * wb - pa * wa;
          if (std::fabs(phi) > 0x1p40L) continue;  // the bound below says little there
          // The result's rounding, the double rotation's (a few 2^-53 r), the double-double
          // angle's 2^-53 |phi| and the long double products' 2^-64 of each.
          const ld bound =
              (u + 8 * 0x1p-53L + 0x1p-52L * std::fabs(phi) + 0x1p-62L * (pb * wb + pa * wa)) * r +
              4 * static_cast<ld>(std::numeric_limits<R>::denorm_min());
          if (!near_rotation(x0, x1, y[i0], y[i1], phi, ratio, bound))
            fail("shifted pair outside the accuracy bound", pos64[static_cast<std::size_t>(t)],
                 static_cast<long long>(j));
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// One input for storage type T.

template <class T>
void run_typed(reader& in, int type_index, const rope::spec& s, const rope::frequencies& f) {
  using R = rope::compute_type_t<T>;
  // Table length and mode. Long tables only for small rotary dims: they are compact and their
  // size grows with rotary_dim * sqrt(length).
  // A few lengths (positions are arbitrary within them): new tables are the slow part of an
  // input, so the fuzzer should mostly meet tables it has built before.
  constexpr std::int64_t kLengths[] = {1, 2, 3, 16, 17, 100, 1000, 4096, 4097};
  std::int64_t length = kLengths[in.u8() % (sizeof kLengths / sizeof kLengths[0])];
  rope::table_mode mode = static_cast<rope::table_mode>(in.u8() % 3);
  const std::uint8_t long_table = in.u8() % 8;
  if (long_table == 1 && s.rotary_dim <= 256) length = (std::int64_t{1} << 24) + 2;
  if (long_table == 2 && s.rotary_dim <= 64) length = (std::int64_t{1} << 31) + 2;
  if (length > 4200) mode = rope::table_mode::compact;
#if ROPE_HAS_EXCEPTIONS
  // Requests the table build must refuse, with a message containing `needle`: an attention
  // factor past R's range (a fuzzed scaling reaches 1e304) or below the smallest its entries
  // hold to their bound (a float table would hold infinities, or subnormal low parts); a
  // frequency so large that (length - 1) * w_j passes double's range (a fuzzed factor divides
  // w_j up to 1e308: the table's cos and sin would be NaN).
  bool angles_finite = true;
  for (double w : f.inv_freq)
    angles_finite = angles_finite && std::isfinite(static_cast<double>(length - 1) * w);
  const char* needle =
      f.attention_factor > static_cast<double>(std::numeric_limits<R>::max()) ||
              f.attention_factor < rope::detail::min_attention_factor<R>()
          ? "attention_factor="
          : (angles_finite ? nullptr : "passes double's range");
  if (needle != nullptr) {
    bool refused = false;
    try {
      (void)rope::table<R>::build(f, s.layout, length, mode);
    } catch (const std::invalid_argument& e) {
      refused = std::strstr(e.what(), needle) != nullptr;
    }
    FUZZ_CHECK(refused, s.rotary_dim, angles_finite ? 0 : 1);
    ++rope_fuzz_outcomes[0];
    return;
  }
#endif
  const auto tab = get_table<R>(type_index, f, s, length, mode);
  const std::ptrdiff_t d = s.rotary_dim;

  // Entry point: 0-2 out of place, 3-4 in place, 5-6 apply_qk, 7 one vector, 8-9
  // apply_to_slots, 10 apply_qk_to_slots, 11 M-RoPE (apply_mrope and apply_qk_mrope, as entries
  // 0, 3, 5 or 6 by bits 0-1 of the byte after the direction's; XD-RoPE's apply_xdrope and
  // apply_qk_xdrope where its bit 2 is set), 12 shift_positions and rerotate (run_shift),
  // 13-15 as 5-7 (codes 8-12 were out of place or in place before the entry points they now
  // select; the seeds written before them use codes 0-10 and decode as they did).
  const std::uint8_t entry_code = in.u8() % 16;
  if (entry_code == 12) return run_shift<T>(in, s, f);
  const int slots_entry = entry_code == 10 ? 2 : (entry_code == 8 || entry_code == 9 ? 1 : 0);
  const bool mrope = entry_code == 11;
  auto entry = static_cast<std::uint8_t>(slots_entry ? 0 : entry_code % 8);
  const std::uint8_t dir_byte = in.u8();
  bool xd = false;  // XD-RoPE: four streams (mrope stays true)
  if (mrope) {
    constexpr std::uint8_t as_entry[4] = {0, 3, 5, 6};
    const std::uint8_t as_byte = in.u8();
    entry = as_entry[as_byte % 4];
    xd = (as_byte & 4) != 0;
  }
  const int n_streams = xd ? 4 : mrope ? 3 : 1;
  // apply_qk in place now and then (entry 6), where q and k may share one fused buffer below.
  const bool qk_in_place = entry == 6 && (dir_byte & 0x20) != 0;
  const bool inverse = dir_byte % 4 == 0;
  rope::direction dir = inverse ? rope::direction::inverse : rope::direction::forward;
  // The 16-bit rounding (fp16/bf16 storage only; the reference below uses the same).
  rope::rounding rnd = (dir_byte & 0x10) ? rope::rounding::fast : rope::rounding::accurate;
  // A direction or rounding outside its enumeration in 1 input of 16 (bits 2, 3, 6 and 7 all
  // set; of the seeds only float_qk_bad_direction and float_in_place_bad_rounding set them):
  // the direction where bit 0 is set, the rounding where bit 0 is clear or bit 1 is set (both
  // where bits 0 and 1 are); the value 2, or 226 where bit 5 is set. Every entry point must
  // answer status::bad_option before any other check and write nothing.
  const bool bad_option = (dir_byte & 0xCC) == 0xCC;
  if (bad_option) {
    const auto v = static_cast<unsigned char>(2 + 224 * ((dir_byte >> 5) & 1));
    if (dir_byte & 0x01) dir = static_cast<rope::direction>(v);
    if (!(dir_byte & 0x01) || (dir_byte & 0x02)) rnd = static_cast<rope::rounding>(v);
  }
  const bool pos32 = in.u8() % 2 == 0;

  const std::ptrdiff_t n_tokens = decode_count(in, 6);
  const std::ptrdiff_t q_heads = decode_count(in, 4);
  const std::ptrdiff_t k_heads = decode_count(in, 3);
  const std::ptrdiff_t view_dim = decode_view_dim(in, s.head_dim, d);

  geometry gq = decode_geometry(in, n_tokens, q_heads, view_dim);
  geometry gk = decode_geometry(in, n_tokens, k_heads, view_dim);
  // A fused per-head q|k|v buffer ([T, H, 3, D], GPT-NeoX's) now and then for entry 6: q and k
  // get head stride 3D and token stride 3HD, q's buffer holds the whole [T, H, 3, D], and k's
  // rows are placed inside it below (after q's rows: disjoint; half a row in: shared).
  const std::uint8_t fused_byte = in.u8();
  const bool fused =
      entry == 6 && fused_byte % 4 == 0 && n_tokens > 0 && q_heads > 0 && view_dim > 0;
  geometry q_alloc = gq;
  if (fused) {
    gq.head_stride = gk.head_stride = 3 * view_dim;
    gq.token_stride = gk.token_stride = q_heads * 3 * view_dim;
    q_alloc = gq;
    q_alloc.head_dim = 3 * view_dim;
  }
  geometry gq_out = gq, gk_out = gk;
  if (in.u8() % 4 == 0) gq_out = decode_geometry(in, n_tokens, q_heads, view_dim);
  if (in.u8() % 4 == 0) gk_out = decode_geometry(in, n_tokens, k_heads, view_dim);
  std::ptrdiff_t lo, hi;
  for (const geometry& g : {gq, gk, gq_out, gk_out, q_alloc})
    if (!span_of(g, lo, hi)) return;  // spans over 2^20 elements: not interesting, too slow
  const std::ptrdiff_t offset = in.u8() % 8;

  // Positions: one per token (at least one, for the single-vector form). ps64[k] / ps32[k]:
  // stream k's positions (M-RoPE's temporal, height, width; XD-RoPE's sequence position,
  // column, row, image index); stream 0 is every entry point's.
  const std::size_t n_pos = static_cast<std::size_t>(std::max<std::ptrdiff_t>(n_tokens, 1));
  std::vector<std::int64_t> ps64[4];
  std::vector<std::int32_t> ps32[4];
  std::vector<std::int64_t>& pos64 = ps64[0];
  std::vector<std::int32_t>& pos32v = ps32[0];
  for (std::size_t t = 0; t < n_pos; ++t)
    push_position(decode_position(in, length), pos32, pos64, pos32v);
  const bool null_positions = in.u8() == 254;
  // M-RoPE: sections of the d / 2 pairs (now and then invalid), stream_of[j] pair j's stream,
  // and each token's height and width positions, each its temporal one three times in four
  // (all three equal: a text token). XD-RoPE: its four sections and three more streams so.
  rope::mrope_sections sec;
  rope::xdrope_sections xsec;
  std::vector<int> stream_of;
  bool sections_ok = true, null_stream = false;
  std::uint8_t stream_place = 1;
  if (mrope) {
    sections_ok = xd ? decode_xd_sections(in, d / 2, xsec, stream_of)
                     : decode_sections(in, d / 2, sec, stream_of);
    for (int sx = 1; sx < n_streams; ++sx)
      for (std::size_t t = 0; t < n_pos; ++t)
        push_position(in.u8() % 4 ? pos64[t] : decode_position(in, length), pos32, ps64[sx],
                      ps32[sx]);
    null_stream = in.u8() == 254;
    stream_place = in.u8();
  }
  bool positions_ok = true;
  for (int sx = 0; sx < n_streams; ++sx)
    for (std::size_t t = 0; t < static_cast<std::size_t>(std::max<std::ptrdiff_t>(n_tokens, 0));
         ++t)
      positions_ok = positions_ok && ps64[sx][t] >= 0 && ps64[sx][t] < length;

  buffer<T> q, k, q_out, k_out;
  q.allocate(q_alloc, offset);
  k.allocate(gk, offset);
  fill_payload(q, in);
  fill_payload(k, in);
  const bool null_data = in.u8() == 253;
  const bool qk = entry == 5 || entry == 6;
  const bool in_place = entry == 3 || entry == 4 || qk_in_place;
  // The position streams (M-RoPE: three, XD-RoPE: four; else the first only), then now and
  // then (M-RoPE, XD-RoPE) a null second or third stream, or one of them copied 0-56 bytes into
  // the output's buffer (q's in place, here; q_out's out of place, below): refused where it
  // lies in the extent of an output's rows (status::overlapping_buffers), else read from there.
  const void* streams[4] = {nullptr, nullptr, nullptr, nullptr};
  for (int sx = 0; sx < n_streams; ++sx)
    streams[sx] = pos32 ? static_cast<const void*>(ps32[sx].data()) : ps64[sx].data();
  if (null_positions) streams[0] = nullptr;
  // M-RoPE: the second or third stream by bit 7; XD-RoPE: the second, third or fourth.
  if (null_stream) streams[xd ? 1 + (stream_place >> 6) % 3 : 1 + (stream_place >> 7)] = nullptr;
  const std::size_t stream_bytes = n_pos * (pos32 ? 4u : 8u);
  int placed = 0;  // the stream copied into an output's buffer (0: none)
  auto place_stream = [&](buffer<T>& b) {
    const std::size_t at = 8 * std::size_t{(stream_place >> 4) % 8u};
    const int sx = 1 + (stream_place >> 3) % 2 + (xd ? stream_place >> 7 : 0);
    if (!mrope || stream_place % 8 != 0 || !streams[sx] || at + stream_bytes > b.size * sizeof(T))
      return;
    unsigned char* dst = reinterpret_cast<unsigned char*>(b.mem.get()) + at;
    std::memcpy(dst, streams[sx], stream_bytes);
    streams[sx] = dst;
    placed = sx;
  };
  if (in_place) place_stream(q);
  const auto q_before = q.bytes(), k_before = k.bytes();

  if (slots_entry) {
    // apply_to_slots: k's rows into a cache of its own geometry, token count and storage type
    // (float keys also into fp16 and bf16 caches); apply_qk_to_slots: q in place or into q_out
    // too. Bits of `opt`: 0 int32 slots, 1 q in place, 2-4 the cache inside k's buffer (0), the
    // slots (1) or positions (2) inside the cache's, for apply_qk_to_slots the cache inside q's
    // buffer (4) or q_out inside the cache's (5) or k's (6), 5-6 an fp16 (1) or bf16 (2) cache
    // (float keys, int32 or int64 positions, as the input's byte chose).
    const bool qk_slots = slots_entry == 2;
    const std::uint8_t opt = in.u8(), shape = in.u8();
    const bool slot32 = opt % 2 == 0, q_in_place = (opt & 2) != 0, null_slots = shape % 16 == 13;
    const int place = (opt >> 2) % 8;
    const std::ptrdiff_t n_slots = decode_count(in, 12);
    const bool shapes_differ = shape % 16 == 14 || shape % 16 == 15;  // one head, 2 dims more
    const geometry gc = decode_geometry(in, n_slots, k_heads + (shape % 16 == 15),
                                        view_dim + 2 * (shape % 16 == 14));
    if (!span_of(gc, lo, hi)) return;
    const std::uint8_t place_byte = in.u8();
    std::vector<std::int64_t> s64;
    std::vector<std::int32_t> s32;
    bool slots_ok = true;
    for (std::size_t t = 0; t < n_pos; ++t) {
      push_position(decode_slot(in, s64, n_slots), slot32, s64, s32);
      if (static_cast<std::ptrdiff_t>(t) < n_tokens)
        slots_ok = slots_ok && s64.back() >= -1 && s64.back() < n_slots;
    }
    const std::vector<std::int32_t> s32_0 = s32, p32_0 = pos32v;
    const std::vector<std::int64_t> s64_0 = s64, p64_0 = pos64;
    const int fi = qk_slots ? e_qk_slots : e_slots;
    auto with_cache = [&](auto ctag, auto ptag) {
      using TC = typename decltype(ctag)::type;
      using Pos = typename decltype(ptag)::type;
      const Pos* positions;
      if constexpr (std::is_same<Pos, std::int32_t>::value)
        positions = pos32v.data();
      else
        positions = pos64.data();
      buffer<TC> c;
      buffer<T> qo;
      c.allocate(gc, offset);
      fill_canary(c);
      if (qk_slots && !q_in_place) {
        qo.allocate(gq_out, offset);
        fill_canary(qo);
      }
      // Views placed in another view's buffer, their lowest element `lowest` elements in (when
      // they fit; else their own buffer): the cache in k's buffer (0..7 elements in) and, for
      // apply_qk_to_slots, the cache in q's or q_out in the cache's or k's (place_byte elements
      // in): rows in another view's gaps (fused, strided) are accepted, shared ones refused.
      // Below, an array in the cache's buffer at byte 0, 8, ..., 56 (aligned for int64).
      const bool same_type = std::is_same<T, TC>::value, q_out_apart = qk_slots && !q_in_place;
      const std::ptrdiff_t c_in_k =
          same_type && place == 0 ? place_in(gc, k.size, place_byte % 8) : -1;
      const std::ptrdiff_t c_in_q =
          same_type && qk_slots && place == 4 ? place_in(gc, q.size, place_byte) : -1;
      const std::ptrdiff_t qo_in_c_at =
          same_type && q_out_apart && place == 5 ? place_in(gq_out, c.size, place_byte) : -1;
      const std::ptrdiff_t qo_in_k_at =
          q_out_apart && place == 6 ? place_in(gq_out, k.size, place_byte) : -1;
      const bool cache_in_k = c_in_k >= 0, cache_in_q = c_in_q >= 0;
      const bool qo_in_c = qo_in_c_at >= 0, qo_in_k = qo_in_k_at >= 0;
      TC* host = cache_in_k   ? reinterpret_cast<TC*>(k.mem.get())
                 : cache_in_q ? reinterpret_cast<TC*>(q.mem.get())
                              : c.mem.get();
      const std::size_t host_size = cache_in_k ? k.size : cache_in_q ? q.size : c.size;
      TC* const c_data = cache_in_k ? host + c_in_k : cache_in_q ? host + c_in_q : c.data;
      T* qo_host = qo_in_c   ? reinterpret_cast<T*>(c.mem.get())
                   : qo_in_k ? k.mem.get()
                             : qo.mem.get();
      const std::size_t qo_host_size = qo_in_c ? c.size : qo_in_k ? k.size : qo.size;
      T* const qo_data = qo_in_c ? qo_host + qo_in_c_at : qo_in_k ? qo_host + qo_in_k_at : qo.data;
      const std::ptrdiff_t q_at = q.data - q.mem.get(), qo_at = qo_data - qo_host;
      const std::ptrdiff_t c_at = c_data - host, k_at = k.data - k.mem.get();
      // The two views that share a buffer under places 4-6 (at most one pair: `place` is one
      // value): the buffer's element count and each view's first-row offset and geometry.
      const bool shared = cache_in_q || qo_in_c || qo_in_k;
      const std::size_t shared_size = cache_in_q ? q.size : qo_host_size;
      const std::ptrdiff_t at_a = cache_in_q ? q_at : qo_at, at_b = qo_in_k ? k_at : c_at;
      const geometry& ga = cache_in_q ? gq : gq_out;
      const geometry& gb = qo_in_k ? gk : gc;
      const void* slots_p = slot32 ? static_cast<const void*>(s32.data()) : s64.data();
      const Pos* pos_p = null_positions ? nullptr : positions;
      const std::size_t slot_bytes = n_pos * (slot32 ? 4u : 8u), pos_bytes = n_pos * sizeof(Pos);
      const std::size_t at = 8 * std::size_t{place_byte % 8u};
      const bool slots_in_c = place == 1 && at + slot_bytes <= c.size * sizeof(TC);
      const bool pos_in_c = place == 2 && pos_p && at + pos_bytes <= c.size * sizeof(TC);
      if (slots_in_c || pos_in_c) {
        unsigned char* dst = reinterpret_cast<unsigned char*>(c.mem.get()) + at;
        std::memcpy(dst, slots_in_c ? slots_p : static_cast<const void*>(pos_p),
                    slots_in_c ? slot_bytes : pos_bytes);
        if (slots_in_c) slots_p = dst;
        if (pos_in_c) pos_p = reinterpret_cast<const Pos*>(dst);
      }
      if (null_slots) slots_p = nullptr;
      const auto c_before = c.bytes(), qo_before = qo.bytes();

      const auto vq = view_of<const T>(q.data, gq);
      const auto vk = view_of<const T>(null_data ? nullptr : k.data, gk);
      const auto vqo = q_in_place ? view_of<T>(q.data, gq) : view_of<T>(qo_data, gq_out);
      const auto vc = view_of<TC>(c_data, gc);
      auto call = [&](auto sl) {
        return qk_slots ? rope::apply_qk_to_slots<T>(*tab, vq, vqo, vk, vc, pos_p, sl, dir, rnd)
                        : rope::apply_to_slots<T>(*tab, vk, vc, pos_p, sl, dir, rnd);
      };
      const rope::status st = slot32 ? call(static_cast<const std::int32_t*>(slots_p))
                                     : call(static_cast<const std::int64_t*>(slots_p));
      FUZZ_CHECK(s32 == s32_0 && s64 == s64_0 && pos32v == p32_0 && pos64 == p64_0, 0);
      const int sti = static_cast<int>(st);
      if (st != rope::status::ok) {
        // Nothing written, and the status has a cause.
        FUZZ_CHECK(q.unchanged(q_before) && k.unchanged(k_before), sti);
        FUZZ_CHECK(c.unchanged(c_before) && qo.unchanged(qo_before), sti);
        FUZZ_CHECK((st == rope::status::bad_option) == bad_option, sti);
        if (st == rope::status::position_out_of_range) FUZZ_CHECK(!positions_ok || !slots_ok, sti);
        if (st == rope::status::null_pointer)
          FUZZ_CHECK(null_data || null_positions || null_slots, sti);
        if (st == rope::status::bad_dimension)
          FUZZ_CHECK(n_tokens < 0 || k_heads < 0 || n_slots < 0 || view_dim < d || shapes_differ ||
                         (qk_slots && q_heads < 0),
                     n_tokens, n_slots);
        if (st == rope::status::overlapping_buffers)
          FUZZ_CHECK(cache_in_k || slots_in_c || pos_in_c ||
                         (shared && extents_meet(at_a, ga, at_b, gb)),
                     place, place_byte);
        count_outcome(fi, 1 + sti);
        return;
      }

      // Success: the call must have been valid.
      const bool key_work = n_tokens > 0 && k_heads > 0;
      const bool q_work = qk_slots && n_tokens > 0 && q_heads > 0;
      FUZZ_CHECK(!bad_option && !shapes_differ && n_slots >= 0, n_slots, 0);
      FUZZ_CHECK(n_tokens >= 0 && k_heads >= 0 && (!qk_slots || q_heads >= 0), n_tokens, k_heads);
      if (key_work || q_work)
        FUZZ_CHECK(positions_ok && !null_positions && view_dim >= d, n_tokens, view_dim);
      std::vector<unsigned char> mk, mc;
      if (key_work) {
        FUZZ_CHECK(slots_ok && !null_slots && !null_data, n_tokens, 1);
        FUZZ_CHECK(cover(k.mem.get(), k.size, k.data, gk, mk), 2);
        FUZZ_CHECK(cover(host, host_size, c_data, gc, mc), 3);
        for (std::size_t e = 0; cache_in_k && e < k.size; ++e)
          FUZZ_CHECK(!(mk[e] && mc[e]), static_cast<long long>(e));
        // The positions and slots lie outside the cache's extent (the span of its rows).
        FUZZ_CHECK(outside_rows(pos_p, pos_bytes, c_data, gc) &&
                       outside_rows(slots_p, slot_bytes, c_data, gc),
                   place, 4);
      }
      if (q_work)
        FUZZ_CHECK(cover(q.mem.get(), q.size, q.data, gq, mk) &&
                       (q_in_place || cover(qo_host, qo_host_size, qo_data, gq_out, mk)),
                   5);
      // Views sharing a buffer share no element (the cache's rows checked whether or not a key
      // was written: the library validates the whole view).
      if (shared) FUZZ_CHECK(rows_apart(shared_size, at_a, ga, at_b, gb), place, place_byte);

      // The reference, in copies of every buffer's bytes: q rotated alone (in place, or into
      // q_out), then each token's rows (rope::apply of that token alone, from the original
      // input) written into its slot in token order, both on the scalar path. Rotated elements
      // must equal it (same_results), every other byte stays as it was.
      const auto k_orig = copy_of<T>(k_before), ref_k = copy_of<T>(k_before);
      const auto ref_q = copy_of<T>(q_before), ref_qo = copy_of<T>(qo_before);
      const auto ref_c = copy_of<TC>(c_before);
      TC* ref_host = cache_in_k   ? reinterpret_cast<TC*>(ref_k.get())
                     : cache_in_q ? reinterpret_cast<TC*>(ref_q.get())
                                  : ref_c.get();
      T* ref_qo_host = qo_in_c   ? reinterpret_cast<T*>(ref_c.get())
                       : qo_in_k ? ref_k.get()
                                 : ref_qo.get();
      std::vector<unsigned char> rot_q(q.size), rot_k(k.size), rot_c(c.size), rot_qo(qo.size);
      std::vector<unsigned char>& rot_host = cache_in_k ? rot_k : cache_in_q ? rot_q : rot_c;
      std::vector<unsigned char>& rot_q_out = qo_in_c ? rot_c : qo_in_k ? rot_k : rot_qo;
      if (q_work) {
        const rope::status sq = on_scalar_path([&] {
          const auto qi = view_of<const T>(ref_q.get() + q_at, gq);
          const auto qv = q_in_place ? view_of<T>(ref_q.get() + q_at, gq)
                                     : view_of<T>(ref_qo_host + qo_at, gq_out);
          return rope::apply<T>(*tab, qi, qv, positions, dir, rnd);
        });
        FUZZ_CHECK(sq == rope::status::ok, static_cast<int>(sq));
        mark_rotary(q_in_place ? rot_q : rot_q_out, q_in_place ? q_at : qo_at,
                    q_in_place ? gq : gq_out, d);
      }
      const T* k_in = k_orig.get() + (k.data - k.mem.get());
      // The token each slot holds at the end.
      std::vector<std::ptrdiff_t> last(static_cast<std::size_t>(n_slots > 0 ? n_slots : 0), -1);
      geometry g1 = gk, gc1 = gc;
      g1.n_tokens = gc1.n_tokens = 1;
      for (std::ptrdiff_t t = 0; key_work && t < n_tokens; ++t) {
        const std::size_t ut = static_cast<std::size_t>(t);
        if (s64[ut] < 0) continue;
        const std::ptrdiff_t to = (c_data - host) + s64[ut] * gc.token_stride;
        const auto vi = view_of<const T>(k_in + t * gk.token_stride, g1);
        const auto vo = view_of<TC>(ref_host + to, gc1);
        const rope::status sk =
            on_scalar_path([&] { return rope::apply<T>(*tab, vi, vo, positions + t, dir, rnd); });
        FUZZ_CHECK(sk == rope::status::ok, static_cast<int>(sk), t);
        mark_rotary(rot_host, to, gc1, d);
        last[static_cast<std::size_t>(s64[ut])] = t;
      }
      check_like_reference(q.mem.get(), ref_q.get(), rot_q, q.size);
      check_like_reference(k.mem.get(), ref_k.get(), rot_k, k.size);
      check_like_reference(c.mem.get(), ref_c.get(), rot_c, c.size);
      check_like_reference(qo.mem.get(), ref_qo.get(), rot_qo, qo.size);
      if constexpr (std::is_same<T, TC>::value)  // each slot's final row (float and double)
        for (std::size_t sl = 0; sl < last.size(); ++sl)
          for (std::ptrdiff_t h = 0; last[sl] >= 0 && h < gk.n_heads; ++h) {
            const std::ptrdiff_t t = last[sl];
            check_accuracy<T>(*tab, k_in + t * gk.token_stride + h * gk.head_stride,
                              c_data + static_cast<std::ptrdiff_t>(sl) * gc.token_stride +
                                  h * gc.head_stride,
                              pos64[static_cast<std::size_t>(t)], d, inverse);
          }
      count_outcome(fi, key_work || q_work ? 8 : 1);
    };
    if constexpr (std::is_same<T, float>::value) {
      if ((opt >> 5) % 4 == 1)
        return pos32 ? with_cache(type_tag<rope::float16>{}, type_tag<std::int32_t>{})
                     : with_cache(type_tag<rope::float16>{}, type_tag<std::int64_t>{});
      if ((opt >> 5) % 4 == 2)
        return pos32 ? with_cache(type_tag<rope::bfloat16>{}, type_tag<std::int32_t>{})
                     : with_cache(type_tag<rope::bfloat16>{}, type_tag<std::int64_t>{});
    }
    if (pos32) return with_cache(type_tag<T>{}, type_tag<std::int32_t>{});
    return with_cache(type_tag<T>{}, type_tag<std::int64_t>{});
  }

  if (entry == 7) {  // one head vector: apply(tab, position, x) / apply(tab, position, in, out, D)
    const std::ptrdiff_t D = s.head_dim;
    std::unique_ptr<T[]> x(new T[static_cast<std::size_t>(D)]),
        y(new T[static_cast<std::size_t>(D)]), z(new T[static_cast<std::size_t>(D)]);
    for (std::ptrdiff_t i = 0; i < D; ++i)
      x[static_cast<std::size_t>(i)] = q.size ? q.mem[static_cast<std::size_t>(i) % q.size] : rope::storage_traits<T>::store(rope::compute_type_t<T>(1));
    std::memcpy(z.get(), x.get(), static_cast<std::size_t>(D) * sizeof(T));
    std::memset(static_cast<void*>(y.get()), 0xA5, static_cast<std::size_t>(D) * sizeof(T));
    const std::int64_t p = pos64[0];
    const rope::status st_out = rope::apply<T>(*tab, p, x.get(), y.get(), D, dir, rnd);
    const rope::status st_in = rope::apply<T>(*tab, p, z.get(), dir, rnd);
    const bool ok = p >= 0 && p < length && !bad_option;
    FUZZ_CHECK((st_out == rope::status::ok) == ok, p, length);
    FUZZ_CHECK(st_in == st_out, static_cast<int>(st_in), static_cast<int>(st_out));
    if (!ok) {
      FUZZ_CHECK(
          st_out == (bad_option ? rope::status::bad_option : rope::status::position_out_of_range),
          static_cast<int>(st_out));
      for (std::ptrdiff_t i = 0; i < D; ++i) {
        FUZZ_CHECK(std::memcmp(&z[static_cast<std::size_t>(i)], &x[static_cast<std::size_t>(i)],
                               sizeof(T)) == 0,
                   i);
        unsigned char c[sizeof(T)];
        std::memcpy(c, &y[static_cast<std::size_t>(i)], sizeof(T));
        for (unsigned char b : c) FUZZ_CHECK(b == 0xA5, i);
      }
      ++rope_fuzz_outcomes[1 + static_cast<int>(st_out)];
      return;
    }
    ++rope_fuzz_outcomes[8];
    FUZZ_CHECK(same_results(y.get(), z.get(), static_cast<std::size_t>(d)), p, D);
    FUZZ_CHECK(
        std::memcmp(y.get() + d, x.get() + d, static_cast<std::size_t>(D - d) * sizeof(T)) == 0, p,
        D);
    FUZZ_CHECK(
        std::memcmp(z.get() + d, x.get() + d, static_cast<std::size_t>(D - d) * sizeof(T)) == 0, p,
        D);
#if defined(ROPE_RUNTIME_DISPATCH)
    {  // The scalar path's result for the same vector (the check_tensor reference below does
       // the same for the other entry points).
      std::unique_ptr<T[]> w(new T[static_cast<std::size_t>(D)]);
      std::memcpy(static_cast<void*>(w.get()), x.get(), static_cast<std::size_t>(D) * sizeof(T));
      const rope::status st_w =
          on_scalar_path([&] { return rope::apply<T>(*tab, p, w.get(), dir, rnd); });
      FUZZ_CHECK(st_w == rope::status::ok, static_cast<int>(st_w));
      FUZZ_CHECK(same_results(y.get(), w.get(), static_cast<std::size_t>(d)), p, D);
    }
#endif
    check_accuracy<T>(*tab, x.get(), y.get(), p, d, inverse);
    return;
  }

  // apply_qk with k's rows inside q's buffer now and then: overlapping inputs are fine out of
  // place, an output overlapping anything else is not.
  const T* k_src_mem = k.mem.get();
  std::size_t k_src_size = k.size;
  T* k_data = k.data;
  std::vector<unsigned char> k_src_before = k.bytes();
  if (qk && entry == 6 && (fused || in.u8() % 4 == 0)) {
    std::ptrdiff_t klo, khi;
    span_of(gk, klo, khi);
    // Fused: k's first row D, 2D (v's slot), D/2 or 5D/2 (into the next head's q) after q's.
    const std::ptrdiff_t fused_off[4] = {view_dim, 2 * view_dim, view_dim / 2, 5 * view_dim / 2};
    // Else k's lowest element 0..7 elements into q's buffer.
    const std::ptrdiff_t at = place_in(
        gk, q.size,
        fused ? (q.data - q.mem.get()) + fused_off[(fused_byte >> 2) % 4] + klo : in.u8() % 8);
    if (at >= 0) {
      k_data = q.mem.get() + at;
      k_src_mem = q.mem.get();
      k_src_size = q.size;
      k_src_before = q.bytes();
    }
  }
  const bool k_inside_q = k_src_mem != k.mem.get();

  if (!in_place) {
    q_out.allocate(gq_out, offset);
    k_out.allocate(gk_out, offset);
    fill_canary(q_out);
    fill_canary(k_out);
    place_stream(q_out);
  }
  const auto qo_before = q_out.bytes(), ko_before = k_out.bytes();
  const void* posp = streams[0];

  auto run = [&](const T* qi, T* qo, const geometry& gqo, const T* ki, T* ko, const geometry& gko) {
    const auto vqi = view_of<const T>(qi, gq), vki = view_of<const T>(ki, gk);
    const auto vqo = view_of<T>(qo, gqo), vko = view_of<T>(ko, gko);
    if (mrope) {
      auto call = [&](auto pos_tag) {
        using P = typename decltype(pos_tag)::type;
        const auto* pt = static_cast<const P*>(streams[0]);
        const auto* ph = static_cast<const P*>(streams[1]);
        const auto* pw = static_cast<const P*>(streams[2]);
        if (xd) {  // streams: sequence position, column, row, image index
          const auto* pi = static_cast<const P*>(streams[3]);
          return qk ? rope::apply_qk_xdrope<T>(*tab, xsec, vqi, vqo, vki, vko, pt, ph, pw, pi,
                                               dir, rnd)
                    : rope::apply_xdrope<T>(*tab, xsec, vqi, vqo, pt, ph, pw, pi, dir, rnd);
        }
        return qk ? rope::apply_qk_mrope<T>(*tab, sec, vqi, vqo, vki, vko, pt, ph, pw, dir, rnd)
                  : rope::apply_mrope<T>(*tab, sec, vqi, vqo, pt, ph, pw, dir, rnd);
      };
      return pos32 ? call(type_tag<std::int32_t>{}) : call(type_tag<std::int64_t>{});
    }
    if (qk) {
      return pos32 ? rope::apply_qk<T>(*tab, vqi, vqo, vki, vko,
                                       static_cast<const std::int32_t*>(posp), dir, rnd)
                   : rope::apply_qk<T>(*tab, vqi, vqo, vki, vko,
                                       static_cast<const std::int64_t*>(posp), dir, rnd);
    }
    return pos32 ? rope::apply<T>(*tab, vqi, vqo, static_cast<const std::int32_t*>(posp), dir, rnd)
                 : rope::apply<T>(*tab, vqi, vqo, static_cast<const std::int64_t*>(posp), dir, rnd);
  };

  auto tally = [&](int index) {
    if (xd)
      count_outcome(qk ? e_qk_xdrope : e_xdrope, index);
    else if (mrope)
      count_outcome(qk ? e_qk_mrope : e_mrope, index);
    else
      ++rope_fuzz_outcomes[index];
  };
  T* q_data = null_data ? nullptr : q.data;
  const rope::status st = in_place ? run(q_data, q_data, gq, k_data, k_data, gk)
                                   : run(q_data, q_out.data, gq_out, k_data, k_out.data, gk_out);

  if (st != rope::status::ok) {
    // Nothing written, and the status has a cause.
    FUZZ_CHECK(q.unchanged(q_before) && k.unchanged(k_before), static_cast<int>(st));
    FUZZ_CHECK(q_out.unchanged(qo_before) && k_out.unchanged(ko_before), static_cast<int>(st));
    FUZZ_CHECK((st == rope::status::bad_option) == bad_option, static_cast<int>(st));
    if (st == rope::status::position_out_of_range) FUZZ_CHECK(!positions_ok, static_cast<int>(st));
    if (st == rope::status::null_pointer)
      FUZZ_CHECK(null_data || null_positions || null_stream, static_cast<int>(st));
    if (st == rope::status::bad_dimension)
      FUZZ_CHECK(n_tokens < 0 || q_heads < 0 || k_heads < 0 || view_dim < d || !sections_ok,
                 n_tokens, view_dim);
    tally(1 + static_cast<int>(st));
    return;
  }

  // Success: the call must have been valid.
  FUZZ_CHECK(!bad_option, static_cast<int>(dir), static_cast<int>(rnd));
  const bool q_work = n_tokens > 0 && q_heads > 0;
  const bool k_work = qk && n_tokens > 0 && k_heads > 0;
  FUZZ_CHECK(n_tokens >= 0 && q_heads >= 0 && (!qk || k_heads >= 0), n_tokens, q_heads);
  FUZZ_CHECK(sections_ok, sec.temporal, sec.height);
  if (q_work || k_work)
    FUZZ_CHECK(positions_ok && !null_positions && !null_stream && view_dim >= d, n_tokens,
               view_dim);
  if (placed) {  // a stream in an output's buffer: outside the extent of that output's rows
    const void* at = streams[placed];
    if (in_place)
      FUZZ_CHECK(outside_rows(at, stream_bytes, q.data, gq) &&
                     (!k_inside_q || outside_rows(at, stream_bytes, k_data, gk)),
                 placed);
    else
      FUZZ_CHECK(outside_rows(at, stream_bytes, q_out.data, gq_out), placed);
  }
  std::vector<unsigned char> mark;
  if (q_work) FUZZ_CHECK(!null_data && cover(q.mem.get(), q.size, q.data, gq, mark), 0);
  if (k_work) FUZZ_CHECK(cover(k_src_mem, k_src_size, k_data, gk, mark), 0);
  if (k_work && in_place && k_inside_q && q_work) {
    // Accepted in place with k's rows inside q's buffer: they must share no element with q's
    // (an interleaving like GPT-NeoX's [T, H, 3, D]).
    std::vector<unsigned char> qm, km;
    cover(q.mem.get(), q.size, q.data, gq, qm);
    cover(q.mem.get(), q.size, k_data, gk, km);
    for (std::size_t e = 0; e < q.size; ++e)
      FUZZ_CHECK(!(qm[e] && km[e]), static_cast<long long>(e));
  }
  if (!in_place && q_work)
    FUZZ_CHECK(cover(q_out.mem.get(), q_out.size, q_out.data, gq_out, mark), 0);
  if (!in_place && k_work)
    FUZZ_CHECK(cover(k_out.mem.get(), k_out.size, k_out.data, gk_out, mark), 0);

  // The reference for each tensor: an in-place apply of that tensor alone on a copy of its
  // original bytes. What the call produced must equal it bit for bit in the rotary block, equal
  // the input's bits in the pass-through block, and leave every element outside the rows as
  // it was (canary out of place, original bytes in place).
  // One tensor rotated alone, in place, with the call's positions, direction and rounding.
  // With runtime dispatch it runs on the scalar path (the specification), so every success
  // also checks the dispatched vector path bit for bit against scalar on this input's shapes.
  // M-RoPE's reference: the rows rotated by each stream's positions in copies of their extent,
  // then each pair taken from the copy of its stream (stream_of, from the sections as the
  // models assign pairs).
  auto apply_alone = [&](T* at, const geometry& g, int sx) {
    return on_scalar_path([&] {
      return pos32 ? rope::apply<T>(*tab, view_of<T>(at, g), ps32[sx].data(), dir, rnd)
                   : rope::apply<T>(*tab, view_of<T>(at, g), ps64[sx].data(), dir, rnd);
    });
  };
  auto rotate_alone = [&](T* at, const geometry& g) {
    if (!mrope) return apply_alone(at, g, 0);
    std::ptrdiff_t glo, ghi;
    span_of(g, glo, ghi);
    std::vector<T> rows[4];
    for (int sx = 0; sx < n_streams; ++sx) {
      rows[sx].assign(at + glo, at + ghi);
      const rope::status ss = apply_alone(rows[sx].data() - glo, g, sx);
      if (ss != rope::status::ok) return ss;
    }
    const std::size_t P = static_cast<std::size_t>(d / 2);
    const bool inter = s.layout == rope::layout::interleaved;
    for (std::ptrdiff_t t = 0; t < g.n_tokens; ++t)
      for (std::ptrdiff_t h = 0; h < g.n_heads; ++h)
        for (std::size_t j = 0; j < P; ++j) {
          const T* from = rows[stream_of[j]].data() - glo + t * g.token_stride + h * g.head_stride;
          T* to = at + t * g.token_stride + h * g.head_stride;
          const auto [i0, i1] = pair_elements(inter, j, P);
          to[i0] = from[i0];
          to[i1] = from[i1];
        }
    return rope::status::ok;
  };
  auto check_tensor = [&](const std::vector<unsigned char>& src_before, const T* src_mem,
                          const T* src_data, const geometry& gi, const T* out_mem,
                          std::size_t out_size, const T* out_data, const geometry& go,
                          const std::vector<unsigned char>& out_before) {
    const auto ref = copy_of<T>(src_before);
    T* ref_data = ref.get() + (src_data - src_mem);
    const rope::status s2 = rotate_alone(ref_data, gi);
    FUZZ_CHECK(s2 == rope::status::ok, static_cast<int>(s2));
    std::vector<unsigned char> row_mark;
    cover(out_mem, out_size, out_data, go, row_mark);
    for (std::size_t e = 0; e < out_size; ++e)
      if (!row_mark[e])
        FUZZ_CHECK(std::memcmp(&out_mem[e], &out_before[e * sizeof(T)], sizeof(T)) == 0,
                   static_cast<long long>(e));
    std::vector<T> orig_row(static_cast<std::size_t>(gi.head_dim));
    for (std::ptrdiff_t t = 0; t < gi.n_tokens; ++t)
      for (std::ptrdiff_t h = 0; h < gi.n_heads; ++h) {
        const T* o = out_data + t * go.token_stride + h * go.head_stride;
        const T* r = ref_data + t * gi.token_stride + h * gi.head_stride;
        const std::ptrdiff_t ri = (src_data - src_mem) + t * gi.token_stride + h * gi.head_stride;
        std::memcpy(static_cast<void*>(orig_row.data()),
                    src_before.data() + static_cast<std::size_t>(ri) * sizeof(T),
                    orig_row.size() * sizeof(T));
        FUZZ_CHECK(same_results(o, r, static_cast<std::size_t>(d)), t, h);
        FUZZ_CHECK(std::memcmp(o + d, orig_row.data() + d,
                               static_cast<std::size_t>(gi.head_dim - d) * sizeof(T)) == 0,
                   t, h);
        const std::size_t ut = static_cast<std::size_t>(t);
        check_accuracy_pairs<T>(
            *tab, orig_row.data(), o,
            [&](std::size_t j) { return ps64[mrope ? stream_of[j] : 0][ut]; }, d, inverse);
      }
  };

  tally(q_work || k_work ? 8 : 1);
  if (in_place && k_inside_q && k_work) {
    // q and k rotated in q's buffer: the reference rotates q, then k, in a copy of its bytes
    // (their rows are disjoint, checked above); every byte of the buffer must equal it, and
    // k's own buffer stays untouched.
    const auto ref = copy_of<T>(q_before);
    if (q_work) {
      const rope::status sq = rotate_alone(ref.get() + (q.data - q.mem.get()), gq);
      FUZZ_CHECK(sq == rope::status::ok, static_cast<int>(sq));
    }
    const rope::status sk = rotate_alone(ref.get() + (k_data - q.mem.get()), gk);
    FUZZ_CHECK(sk == rope::status::ok, static_cast<int>(sk));
    // The rotated block of each row may differ from the reference only by a NaN's sign or
    // payload; every other element of the buffer byte for byte.
    std::vector<unsigned char> rotated(q.size, 0);
    if (q_work) mark_rotary(rotated, q.data - q.mem.get(), gq, d);
    mark_rotary(rotated, k_data - q.mem.get(), gk, d);
    check_like_reference(q.mem.get(), ref.get(), rotated, q.size);
    FUZZ_CHECK(k.unchanged(k_before), 0);
    return;
  }
  if (in_place) {
    if (q_work)
      check_tensor(q_before, q.mem.get(), q.data, gq, q.mem.get(), q.size, q.data, gq, q_before);
    else
      FUZZ_CHECK(q.unchanged(q_before), 0);
    if (k_work)
      check_tensor(k_before, k.mem.get(), k.data, gk, k.mem.get(), k.size, k.data, gk, k_before);
    else
      FUZZ_CHECK(k.unchanged(k_before), 0);
  } else {
    FUZZ_CHECK(q.unchanged(q_before) && k.unchanged(k_before), 0);  // inputs are const
    if (q_work)
      check_tensor(q_before, q.mem.get(), q.data, gq, q_out.mem.get(), q_out.size, q_out.data,
                   gq_out, qo_before);
    else
      FUZZ_CHECK(q_out.unchanged(qo_before), 0);
    if (k_work)
      check_tensor(k_src_before, k_src_mem, k_data, gk, k_out.mem.get(), k_out.size, k_out.data,
                   gk_out, ko_before);
    else
      FUZZ_CHECK(k_out.unchanged(ko_before), 0);
  }
}

// run_typed for the I-th storage type: float and double are instantiated in apply_fuzz.cpp, fp16
// and bf16 in apply_fuzz_16bit.cpp (explicit instantiations there, extern in apply_fuzz.cpp).
template <std::size_t I>
void run_type_index(reader& in, const rope::spec& s, const rope::frequencies& f) {
  run_typed<std::tuple_element_t<I, storage_types>>(in, static_cast<int>(I), s, f);
}

}  // namespace rope_fuzz

#endif  // ROPE_TESTS_FUZZ_APPLY_FUZZ_HPP
