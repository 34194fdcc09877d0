#!/usr/bin/env python3
"""Writes the seed corpus tests/fuzz/corpus/ for apply_fuzz (byte layout: the decoding order
of apply_fuzz.cpp and apply_fuzz.hpp). Each seed is a structured case that reaches a success or a specific error, so
libFuzzer starts from the interesting paths: python3 tests/fuzz/make_seeds.py"""
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
FLOAT, DOUBLE, BF16 = 0, 1, 3
INTER, HALF = 1, 0          # layout byte parity; 15 -> invalid layout 3
ROT_FULL, ROT_HALF, ROT_ODD = 0, 2, 6
BASE_1E4, BASE_5E5, BASE_1E6, BASE_1E7, BASE_NAN = 0, 3, 4, 5, 7
OUT_OF_PLACE, IN_PLACE, QK, VECTOR, SLOTS, QK_SLOTS, MROPE, SHIFT = 0, 3, 5, 7, 8, 10, 11, 12
PACKED, PADDED, HEAD_MAJOR, OVERLAP = 0, 3, 5, 6


NO_SCALING = bytes([0, 0])  # scaling method byte (< 5: none; 5: ggml), sequence-length byte
# YaRN factor 4, M 4096, M0 512, default betas, truncate; sequence length 5000
YARN_F4 = bytes([9, 5, 12, 5, 3, 1, 0, 1, 1, 1, 1, 4])
# LongRoPE whose short_factor list has rotary_dim/2 + 1 entries: refused, naming the key
LONGROPE_BAD_LIST = bytes([11, 5, 12, 5, 3, 1, 0, 1, 1, 1, 1, 0])
# proportional (Gemma 4), factor 1, rotated_pairs byte 17 -> 17 % (64 + 3) - 1 = 16 of 64 pairs
PROPORTIONAL_16 = bytes([12, 5, 0, 5, 3, 1, 0, 1, 1, 1, 1, 17, 4])
# ggml's parameters (method byte 5): n_dims = rotary_dim, freq_base = the spec's base,
# freq_scale 1/4, ext_factor 1 (yarn), attn_factor 1, betas 32 and 1, n_ctx_orig 32768, no
# freq_factors (with base 1e6 and 128 dims: Qwen2.5's YaRN; the ramp is [23, 40])
GGML_YARN_F4 = bytes([5, 0, 1, 1, 5, 12, 1, 1, 0, 6, 1])
# ggml, ext_factor 0 and freq_scale 1 with a freq_factors list of 32 entries 1 + k/8 (the
# rope_freqs tensor of a Llama 3.1 GGUF, made up), for 64 rotated dims
GGML_FREQ_FACTORS_32 = bytes([5, 0, 1, 0, 0, 1, 0, 0, 0, 2]) + b"".join(
    bytes([1, 8 * k]) for k in range(32))
# ggml, ext_factor 1, attn_factor 1 / DBL_MAX (subnormal) and freq_scale 1 / x, x 6 ulps above
# the double nearest e^-10: the temperature is 2^-53 and attn_factor times it rounds to 0, which
# validate must refuse (it accepted it once: the table's check refused A = 0 later)
GGML_TINY_ATTENTION = (bytes([5, 0, 1, 1, 4]) + struct.pack("<d", 4.5399929762484895e-05)
                       + bytes([1, 0, 4]) + struct.pack("<d", 1.7976931348623157e308) + bytes([0, 5, 1]))
# ggml with ext_factor -1 (llama.cpp's "unset", not resolved): refused naming ext_factor
GGML_BAD_EXT = bytes([5, 0, 1, 0, 4, 1, 0, 0, 1])


def spec(t, layout, head_dim, rot, base, rot_extra=b"", scaling=NO_SCALING):
    return bytes([t, layout]) + struct.pack("<H", head_dim) + bytes([rot]) + rot_extra + bytes([base]) + scaling


LENGTHS = [1, 2, 3, 16, 17, 100, 1000, 4096, 4097]


def run(length=4096, mode=0, long_table=0, entry=OUT_OF_PLACE, inverse=False, pos32=True, tokens=3, qh=2,
        kh=1, geo_q=(0, PACKED), geo_k=(0, PACKED), offset=0, positions=(), payload_mode=1,
        payload=b"", null_data=0, dir_byte=None, mrope=None):
    """mrope: (as-entry byte, the bytes after the positions' null byte), for entry MROPE."""
    if dir_byte is None:
        dir_byte = 0 if inverse else 1
    b = bytes([LENGTHS.index(length), mode, long_table, entry, dir_byte])
    if mrope:
        b += bytes([mrope[0]])
    b += bytes([0 if pos32 else 1, tokens, qh, kh, 0])
    # fused-buffer byte 1 (not fused), out geometries = in geometries (1, 1), element offset
    b += bytes(geo_q) + bytes(geo_k) + bytes([1, 1, 1, offset])
    for p in positions:
        b += p
    b += bytes([0])  # positions pointer not null
    if mrope:
        b += mrope[1]
    b += bytes([payload_mode]) + payload
    return b


def in_range(p):
    return bytes([10]) + struct.pack("<I", p)


def near(kind, delta):  # kind: 4 -> 2^24, 5 -> 2^31, 6 -> 2^32; delta -1, 0, +1
    return bytes([kind + 32 * (delta + 1)])


def ramp(n):
    return bytes((37 * i + 11) % 256 for i in range(n))


# The slots entry points: the bytes after the payload fills of q and k (mode 1: one byte an
# element; q_size and k_size: the elements of their buffers). opt bit 0: int64 slots; bit 1: q
# in place; bits 2-4: 0 the cache inside k's buffer, 1 the slots, 2 the positions inside the
# cache's, 3 none, and for apply_qk_to_slots 4 the cache inside q's buffer, 5 q_out inside the
# cache's, 6 inside k's (lowest element place_byte elements in); bits 5-6: 1 an fp16, 2 a bf16
# cache (float keys).
NO_PLACE, SLOTS64, Q_IN_PLACE, FP16_CACHE, BF16_CACHE = 3 << 2, 1, 2, 1 << 5, 2 << 5
CACHE_IN_Q, Q_OUT_IN_CACHE, Q_OUT_IN_K = 4 << 2, 5 << 2, 6 << 2
SKIP, RUN, PAST = 4, 0, 8  # slot -1, the previous slot + 1, the cache's token count


def strided(head_stride, token_stride):  # geometry kind 7: any strides (int16 each)
    return bytes([0, 7]) + struct.pack("<hh", head_stride, token_stride)


def slot(v):  # a slot in range (v < 16)
    return (v << 4) | 11


def repeat(back):  # the slot of the token `back` tokens earlier
    return 6 | ((back - 1) << 4)


def slots_tail(q_size, k_size, opt, slots, n_slots=8, geo_c=(0, PACKED), place_byte=0):
    return (ramp(q_size) + bytes([1]) + ramp(k_size) + bytes([0, opt, 0, n_slots]) + bytes(geo_c)
            + bytes([place_byte]) + bytes(slots))


# M-RoPE (entry MROPE): the as-entry byte (0 out of place, 1 in place, 2 apply_qk_mrope, 3 it
# in place), then after the positions: the sections (bit 0 interleaved, bits 1-3 5/6/7 make
# them invalid; bit 4 hw_alternating, bit 5 balanced; the height and width counts), each token's height then width position (1: its
# temporal one, else 0 and a position), a null-stream byte, and where a stream goes (0x10:
# stream 1 copied 8 bytes into the output's buffer; 1: nowhere).
AS_OUT_OF_PLACE, AS_IN_PLACE, AS_QK, AS_QK_IN_PLACE = 0, 1, 2, 3
SAME = bytes([1])


def image(p):  # a height or width position other than the temporal one
    return bytes([0]) + in_range(p)


ALTERNATING, BALANCED = 0x10, 0x20


def mrope_tail(interleaved, height, width, streams, place=1, bad=0, order=0):
    b = bytes([(1 if interleaved else 0) | (bad << 1) | order, height, width])
    for s in streams:
        b += s
    return b + bytes([0, place])


# XD-RoPE (entry MROPE, bit 2 of the as-entry byte): the sections byte (5: one pair too many,
# 6: the column count lowered by one), the sequence-position, column and row counts (the image
# count takes the rest), then each token's column, row and image-index positions as
# mrope_tail's, a null-stream byte and where a stream goes.
XD = 4


def xd_tail(position, width, height, streams, place=1, bad=0):
    return bytes([bad, position, width, height]) + b"".join(streams) + bytes([0, place])


# shift_positions / rerotate (entry SHIFT): the option byte (bit 0: int64 positions; bits 1-2:
# 0 in place, 1 out of place, 2 moved within one buffer; bit 3: rerotate), then the rerotate
# byte (1: to = the unscaled frequencies) or the delta byte (b % 8 in 1-3: (b >> 3) % 17 - 8;
# 4: 2^32 + (b >> 3) % 3 - 1), token and head counts, the dim byte, the keys' geometry, (out of
# place) 1 for the same output geometry or 0 and the output's, (moved) the move byte (k =
# (1 + m % 3) tokens, down when bit 2 is set), the element offset, the positions and their null
# byte, the keys' payload and the null-data byte.
SHIFT_INT64, SHIFT_OUT_OF_PLACE, SHIFT_MOVE, SHIFT_REROTATE = 1, 1 << 1, 2 << 1, 8


def delta(v):  # -8 <= v <= 8
    return bytes([((v + 8) << 3) | 1])


def shift(length=4096, opt=0, second=b"", tokens=3, heads=2, geo=(0, PACKED), out_geo=None,
          move=None, offset=0, positions=(), keys=0):
    b = bytes([LENGTHS.index(length), 0, 0, SHIFT, opt]) + second + bytes([tokens, heads, 0])
    b += bytes(geo)
    if opt & 6 == SHIFT_OUT_OF_PLACE:
        b += bytes([0]) + bytes(out_geo) if out_geo else bytes([1])
    if move is not None:
        b += bytes([move])
    b += bytes([offset])
    for p in positions:
        b += p
    return b + bytes([0, 1]) + ramp(keys) + bytes([0])


seeds = {
    "float_half_hd128_out_of_place": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E4)
    + run(positions=[in_range(0), in_range(1), in_range(4095)], payload=ramp(3000)),
    "double_inter_hd80_rot40_2e24_in_place": spec(DOUBLE, INTER, 80, ROT_HALF, BASE_1E6)
    + run(long_table=1, entry=IN_PLACE, inverse=True, pos32=False, tokens=3,
          positions=[near(4, -1), near(4, 0), near(4, 1)], payload=ramp(2000)),
    "float_inter_hd64_2e31_qk_int64": spec(FLOAT, INTER, 64, ROT_FULL, BASE_5E5)
    + run(long_table=2, entry=QK, pos32=False, tokens=3, qh=4, kh=2,
          positions=[near(5, -1), near(5, 0), near(5, 1)], payload=ramp(2000)),
    "float_half_hd96_head_major_padded_offset": spec(FLOAT, HALF, 96, ROT_HALF, BASE_1E7)
    + run(tokens=4, qh=3, geo_q=(3, HEAD_MAJOR), geo_k=(1, PADDED), offset=3,
          positions=[in_range(5), in_range(77), in_range(1000), in_range(4000)], payload=ramp(3000)),
    "float_raw_payload_nan_inf_denormal": spec(FLOAT, INTER, 32, ROT_FULL, BASE_1E4)
    + run(tokens=2, qh=1, positions=[in_range(3), in_range(9)], payload_mode=0,
          payload=struct.pack("<8f", float("nan"), float("inf"), -float("inf"), 1e-45, 1e-39, 3e38, -0.0, 1.0) * 8),
    "double_overlapping_strides": spec(DOUBLE, HALF, 16, ROT_FULL, BASE_1E4)
    + run(tokens=3, qh=2, geo_q=(0, OVERLAP, 0, 0), positions=[in_range(1), in_range(2), in_range(3)]),
    "float_position_out_of_range": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4)
    + run(tokens=3, positions=[in_range(1), bytes([1]), bytes([2])], payload=ramp(1000)),
    "float_vector_hd1024": spec(FLOAT, HALF, 1024, ROT_FULL, BASE_1E6)
    + run(entry=VECTOR, positions=[in_range(4000)], payload=ramp(5000)),
    # dir byte 0xCD: bits 2, 3, 6, 7 set -> a direction outside its enumeration (2): bad_option
    "float_qk_bad_direction": spec(FLOAT, INTER, 64, ROT_FULL, BASE_1E4)
    + run(entry=QK, dir_byte=0xCD, positions=[in_range(1), in_range(2), in_range(3)], payload=ramp(1000)),
    # dir byte 0xEC: bits 2, 3, 6, 7 set, bit 0 clear -> a rounding outside its enumeration (226)
    "float_in_place_bad_rounding": spec(FLOAT, HALF, 96, ROT_FULL, BASE_1E4)
    + run(entry=IN_PLACE, dir_byte=0xEC, positions=[in_range(1), in_range(2), in_range(3)], payload=ramp(1000)),
    "invalid_rotary_dim_odd": spec(FLOAT, HALF, 64, ROT_ODD, BASE_1E4, rot_extra=bytes([0])),
    "invalid_base_nan": spec(DOUBLE, INTER, 64, ROT_FULL, BASE_NAN),
    "float_half_hd128_yarn_out_of_place": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E4, scaling=YARN_F4)
    + run(positions=[in_range(0), in_range(7), in_range(4095)], payload=ramp(3000)),
    "invalid_longrope_list_length": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4, scaling=LONGROPE_BAD_LIST),
    "float_half_hd128_proportional_out_of_place": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E6,
                                                       scaling=PROPORTIONAL_16)
    + run(positions=[in_range(0), in_range(7), in_range(4095)], payload=ramp(3000)),
    "float_half_hd128_ggml_yarn_out_of_place": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E6,
                                                    scaling=GGML_YARN_F4)
    + run(positions=[in_range(0), in_range(7), in_range(4095)], payload=ramp(3000)),
    "bf16_inter_hd64_ggml_freq_factors_in_place": spec(BF16, INTER, 64, ROT_FULL, BASE_5E5,
                                                       scaling=GGML_FREQ_FACTORS_32)
    + run(entry=IN_PLACE, positions=[in_range(1), in_range(2), in_range(4000)], payload=ramp(1000)),
    "invalid_ggml_ext_factor": spec(FLOAT, INTER, 64, ROT_FULL, BASE_1E4, scaling=GGML_BAD_EXT),
    "invalid_ggml_attention_rounds_to_zero": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4,
                                                  scaling=GGML_TINY_ATTENTION),
    "float_slots_decode_int32": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E4)
    + run(entry=SLOTS, tokens=4, qh=1, kh=2,
          positions=[in_range(10), in_range(200), in_range(7), in_range(4000)],
          payload=slots_tail(4 * 128, 4 * 2 * 128, NO_PLACE, [slot(5), SKIP, slot(2), slot(7)])),
    "float_slots_prefill_fp16_head_major_repeat": spec(FLOAT, INTER, 64, ROT_FULL, BASE_5E5)
    + run(entry=SLOTS, pos32=False, tokens=5, qh=1, kh=2, positions=[in_range(p) for p in range(100, 105)],
          payload=slots_tail(5 * 64, 5 * 2 * 64, NO_PLACE | SLOTS64 | FP16_CACHE,
                             [slot(3), RUN, RUN, RUN, repeat(2)], n_slots=10, geo_c=(2, HEAD_MAJOR))),
    "double_slots_repeat_int64_padded": spec(DOUBLE, HALF, 80, ROT_HALF, BASE_1E6)
    + run(entry=SLOTS, tokens=4, qh=1, kh=3, positions=[in_range(1), in_range(2), in_range(3), in_range(4)],
          payload=slots_tail(4 * 80, 4 * 3 * 80, NO_PLACE | SLOTS64,
                             [slot(1), slot(1), SKIP, slot(0)], n_slots=3, geo_c=(3, PADDED))),
    "float_slots_past_cache": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4)
    + run(entry=SLOTS, tokens=2, qh=1, kh=1, positions=[in_range(1), in_range(2)],
          payload=slots_tail(2 * 64, 2 * 64, NO_PLACE, [slot(1), PAST], n_slots=4)),
    "float_slots_array_inside_cache": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4)
    + run(entry=SLOTS, tokens=2, qh=1, kh=1, positions=[in_range(1), in_range(2)],
          payload=slots_tail(2 * 64, 2 * 64, 1 << 2, [slot(0), slot(3)], n_slots=4)),
    "float_slots_cache_inside_keys": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4)
    + run(entry=SLOTS, tokens=3, qh=1, kh=1, positions=[in_range(1), in_range(2), in_range(3)],
          payload=slots_tail(3 * 64, 3 * 64, 0, [slot(0), slot(1), SKIP], n_slots=2)),
    "float_qk_slots_q_in_place": spec(FLOAT, HALF, 128, ROT_HALF, BASE_1E4)
    + run(entry=QK_SLOTS, tokens=3, qh=4, kh=2, positions=[in_range(9), in_range(99), in_range(999)],
          payload=slots_tail(3 * 4 * 128, 3 * 2 * 128, NO_PLACE | Q_IN_PLACE, [slot(6), SKIP, slot(0)])),
    "bf16_qk_slots_out_of_place": spec(BF16, INTER, 64, ROT_FULL, BASE_1E4)
    + run(entry=QK_SLOTS, tokens=3, qh=2, kh=1, positions=[in_range(5), in_range(6), in_range(7)],
          payload=slots_tail(3 * 2 * 64, 3 * 64, NO_PLACE, [slot(2), RUN, RUN], n_slots=5)),
    # Float keys rounded into a 16-bit cache with int32 positions (and int32 slots).
    "float_slots_fp16_cache_int32_positions": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E4)
    + run(entry=SLOTS, tokens=3, qh=1, kh=2, positions=[in_range(p) for p in (3000, 3001, 3002)],
          payload=slots_tail(3 * 128, 3 * 2 * 128, NO_PLACE | FP16_CACHE, [slot(4), RUN, SKIP], n_slots=6)),
    "float_qk_slots_bf16_cache_int32_positions": spec(FLOAT, INTER, 96, ROT_FULL, BASE_1E6)
    + run(entry=QK_SLOTS, tokens=2, qh=2, kh=1, positions=[in_range(17), in_range(4000)],
          payload=slots_tail(2 * 2 * 96, 2 * 96, NO_PLACE | BF16_CACHE | Q_IN_PLACE, [slot(1), slot(0)], n_slots=3)),
    # The cache over q's own rows (q in place): overlapping_buffers, nothing written.
    "float_qk_slots_cache_over_q_refused": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4)
    + run(entry=QK_SLOTS, tokens=2, qh=1, kh=1, positions=[in_range(3), in_range(4)],
          payload=slots_tail(2 * 64, 2 * 64, CACHE_IN_Q | Q_IN_PLACE, [slot(0), RUN], n_slots=2)),
    # q_out's rows in the gaps of a cache of token stride 128 (one head of 64): accepted.
    "float_qk_slots_q_out_between_cache_rows": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4)
    + run(entry=QK_SLOTS, tokens=2, qh=1, kh=1, geo_q=strided(64, 128), positions=[in_range(3), in_range(9)],
          payload=slots_tail(192, 2 * 64, Q_OUT_IN_CACHE, [slot(2), slot(0)], n_slots=3,
                             geo_c=strided(64, 128), place_byte=64)),
    # q_out over k's rows: overlapping_buffers, nothing written.
    "float_qk_slots_q_out_over_keys_refused": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4)
    + run(entry=QK_SLOTS, tokens=2, qh=1, kh=1, positions=[in_range(3), in_range(4)],
          payload=slots_tail(2 * 64, 2 * 64, Q_OUT_IN_K, [slot(0), RUN], n_slots=2)),
    # q_out's rows between k's heads (head stride 128): a fused buffer, accepted.
    "float_qk_slots_q_out_between_key_heads": spec(FLOAT, INTER, 64, ROT_FULL, BASE_1E4)
    + run(entry=QK_SLOTS, tokens=2, qh=1, kh=2, geo_q=strided(64, 128), geo_k=strided(128, 256),
          positions=[in_range(3), in_range(9)],
          payload=slots_tail(192, 448, Q_OUT_IN_K, [slot(1), slot(0)], n_slots=2, place_byte=64)),
    # Qwen2-VL: sections (16, 24, 24) of 64 pairs; two text tokens, then two image tokens.
    "float_mrope_half_hd128_out_of_place": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E6)
    + run(entry=MROPE, tokens=4, qh=2, positions=[in_range(p) for p in (0, 1, 2, 2)],
          mrope=(AS_OUT_OF_PLACE, mrope_tail(False, 24, 24, [SAME, SAME, image(3), image(4), SAME, SAME, image(5), image(2)])),
          payload=ramp(3000)),
    # Qwen3-VL: interleaved (24, 20, 20) of 64 pairs, q and k in place, bf16.
    "bf16_mrope_interleaved_qk_in_place": spec(BF16, HALF, 128, ROT_FULL, BASE_5E5)
    + run(entry=MROPE, dir_byte=0x21, tokens=3, qh=2, kh=1, positions=[in_range(p) for p in (7, 7, 9)],
          mrope=(AS_QK_IN_PLACE, mrope_tail(True, 20, 20, [SAME, image(8), SAME, SAME, image(10), image(4)])),
          payload=ramp(3 * 2 * 128) + bytes([1]) + ramp(3 * 128) + bytes([0, 1])),
    # The height stream copied into q_out's buffer 8 bytes in, before its rows (offset 7 floats).
    "float_mrope_stream_in_output_buffer": spec(FLOAT, INTER, 64, ROT_FULL, BASE_1E4)
    + run(entry=MROPE, tokens=3, qh=1, offset=7, positions=[in_range(p) for p in (4, 5, 6)],
          mrope=(AS_OUT_OF_PLACE, mrope_tail(False, 10, 10, [image(1), image(2), image(3), SAME, SAME, SAME], place=0x10)),
          payload=ramp(3000)),
    # The same stream copied into q's own rows, in place: overlapping_buffers, nothing written.
    "double_mrope_stream_inside_rows": spec(DOUBLE, HALF, 64, ROT_FULL, BASE_1E4)
    + run(entry=MROPE, tokens=3, qh=1, positions=[in_range(p) for p in (4, 5, 6)],
          mrope=(AS_IN_PLACE, mrope_tail(False, 10, 10, [image(1), image(2), image(3), SAME, SAME, SAME], place=0x10)),
          payload=ramp(3000)),
    # Sections assigning 65 of 64 pairs: bad_dimension.
    "float_mrope_bad_sections": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E4)
    + run(entry=MROPE, tokens=2, positions=[in_range(1), in_range(2)],
          mrope=(AS_QK, mrope_tail(False, 24, 24, [SAME] * 4, bad=5)), payload=ramp(3000)),
    # openPangu-VL: balanced sections (16, 8, 8) of 32 pairs, half_split; Bailing: alternating
    # (8, 12, 12) of 32, interleaved, q and k in place.
    "float_mrope_pangu_balanced_out_of_place": spec(FLOAT, HALF, 64, ROT_FULL, BASE_1E4)
    + run(entry=MROPE, tokens=3, qh=2, positions=[in_range(p) for p in (3, 4, 5)],
          mrope=(AS_OUT_OF_PLACE, mrope_tail(False, 8, 8, [image(1), SAME, image(7), image(2), SAME, image(9)],
                                             order=BALANCED)),
          payload=ramp(3000)),
    "bf16_mrope_bailing_alternating_qk_in_place": spec(BF16, INTER, 64, ROT_FULL, BASE_1E6)
    + run(entry=MROPE, dir_byte=0x21, tokens=2, qh=2, kh=1, positions=[in_range(p) for p in (40, 41)],
          mrope=(AS_QK_IN_PLACE, mrope_tail(False, 12, 12, [image(2), SAME, image(6), SAME], order=ALTERNATING)),
          payload=ramp(2 * 2 * 64 * 2) + bytes([1]) + ramp(2 * 64 * 2) + bytes([0, 1])),
    # HunyuanOCR: sections (16, 16, 16, 16) of 64 pairs, half_split; a text token between two
    # image tokens.
    "float_xdrope_half_hd128_out_of_place": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E4)
    + run(entry=MROPE, tokens=3, qh=2, positions=[in_range(p) for p in (5, 6, 7)],
          mrope=(AS_OUT_OF_PLACE | XD, xd_tail(16, 16, 16, [image(1), SAME, image(2), image(3), SAME, image(0),
                                                             image(1), SAME, image(1)])),
          payload=ramp(3000)),
    # fp16 queries and keys in place, interleaved, uneven sections (8, 12, 4, 8) of 32 pairs.
    "fp16_xdrope_interleaved_qk_in_place": spec(2, INTER, 64, ROT_FULL, BASE_1E6)
    + run(entry=MROPE, dir_byte=0x21, tokens=2, qh=2, kh=1, positions=[in_range(p) for p in (30, 31)],
          mrope=(AS_QK_IN_PLACE | XD, xd_tail(8, 12, 4, [image(2), SAME, image(9), image(7), SAME, image(1)])),
          payload=ramp(2 * 2 * 64 * 2) + bytes([1]) + ramp(2 * 64 * 2) + bytes([0, 1])),
    # A column count of -1 (sections 33, -1, 16, 16 sum to 64): bad_dimension, nothing written.
    "float_xdrope_negative_count": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E4)
    + run(entry=MROPE, tokens=2, positions=[in_range(1), in_range(2)],
          mrope=(AS_QK | XD, xd_tail(32, 0, 16, [SAME] * 6, bad=6)), payload=ramp(3000)),
    "float_shift_half_hd128_in_place": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E4)
    + shift(opt=0, second=delta(-5), tokens=4, heads=2, positions=[in_range(p) for p in (100, 101, 102, 103)],
            keys=4 * 2 * 128),
    # Tokens dropped: the keys of 5 tokens moved 2 tokens down in their own cache, delta -2.
    "double_shift_move_within_cache_int64": spec(DOUBLE, INTER, 64, ROT_FULL, BASE_1E4)
    + shift(opt=SHIFT_INT64 | SHIFT_MOVE, second=delta(-2), tokens=5, heads=2, move=4,
            positions=[in_range(p) for p in (10, 11, 12, 13, 14)], keys=7 * 2 * 64),
    # A head-major cache moved by a token: each head's rows of both views are not within one
    # head stride, so the move is refused (overlapping_buffers).
    "bf16_shift_move_head_major_refused": spec(BF16, HALF, 64, ROT_FULL, BASE_1E4)
    + shift(opt=SHIFT_MOVE, second=delta(1), tokens=3, heads=2, geo=(0, HEAD_MAJOR), move=0,
            positions=[in_range(p) for p in (1, 2, 3)], keys=448),
    # YaRN keys re-rotated to the unscaled frequencies, out of place.
    "float_rerotate_yarn_to_plain_out_of_place": spec(FLOAT, HALF, 128, ROT_FULL, BASE_1E4, scaling=YARN_F4)
    + shift(opt=SHIFT_REROTATE | SHIFT_OUT_OF_PLACE, second=bytes([1]), tokens=3, heads=2,
            positions=[in_range(p) for p in (0, 2000, 4095)], keys=3 * 2 * 128),
    # fp16 keys shifted out of place into a padded head-major output (rows of another geometry).
    "fp16_shift_out_of_place_into_head_major": spec(2, HALF, 96, ROT_HALF, BASE_1E6)
    + shift(opt=SHIFT_OUT_OF_PLACE, second=delta(3), tokens=3, heads=2, out_geo=(2, HEAD_MAJOR),
            positions=[in_range(p) for p in (40, 41, 42)], keys=3 * 2 * 96),
    # A shift by 2^32: position_out_of_range, nothing written.
    "fp16_shift_past_the_limit": spec(2, INTER, 64, ROT_FULL, BASE_1E4)
    + shift(opt=0, second=bytes([4 | (1 << 3)]), tokens=2, heads=1,
            positions=[in_range(1), in_range(2)], keys=2 * 64),
}

os.makedirs(HERE, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {HERE}")
