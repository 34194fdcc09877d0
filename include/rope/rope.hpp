// rope/rope.hpp: rotary position embeddings (RoPE) for LLM inference engines. Include this.
//
//   #include <rope/rope.hpp>
//   const rope::spec spec = rope::make_spec(128, 128, 1e4, rope::layout::half_split);
//   auto tab = rope::get_table<float>(spec, /*positions=*/8192);
//   rope::status st = rope::apply<float, 128>(*tab, rope::packed_heads(q, n_tokens, n_heads, 128),
//                                             positions);
//
// rope/spec.hpp     what a rotation is: layouts, the spec, frequencies, status codes
// rope/table.hpp    cos/sin tables formed in double, and the shared cache (cold path)
// rope/apply.hpp    rope::apply and rope::apply_qk (hot path: noexcept, no allocation, no lock)
// rope/storage.hpp  the storage-type customization point
// rope/fwd.hpp      declarations of rope's types, for headers that only name them
// rope/scaling.hpp  context extension: linear, NTK, dynamic NTK, YaRN, Llama 3.1, LongRoPE
// rope/mrope.hpp    multimodal RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, ERNIE-4.5-VL, Bailing,
//                   openPangu): three positions a token; XD-RoPE (Hunyuan-VL): four
// rope/slots.hpp    keys rotated straight into KV-cache slots, one slot per token
// rope/ggml.hpp     ggml's (llama.cpp's) rope parameters as frequencies, for GGUF checkpoints
#pragma once

#include "rope/apply.hpp"
#include "rope/config.hpp"
#include "rope/fwd.hpp"
#include "rope/ggml.hpp"
#include "rope/mrope.hpp"
#include "rope/scaling.hpp"
#include "rope/slots.hpp"
#include "rope/spec.hpp"
#include "rope/storage.hpp"
#include "rope/table.hpp"
#include "rope/version.hpp"
