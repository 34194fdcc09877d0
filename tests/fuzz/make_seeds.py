#!/usr/bin/env python3
"""Writes the seed corpus tests/fuzz/corpus/ for apply_fuzz (byte layout: apply_fuzz.cpp's
decoding order). Each seed is a structured case that reaches a success or a specific error, so
libFuzzer starts from the interesting paths: python3 tests/fuzz/make_seeds.py"""
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
FLOAT, DOUBLE = 0, 1
INTER, HALF = 1, 0          # layout byte parity; 15 -> invalid layout 3
ROT_FULL, ROT_HALF, ROT_ODD = 0, 2, 6
BASE_1E4, BASE_5E5, BASE_1E6, BASE_1E7, BASE_NAN = 0, 3, 4, 5, 7
OUT_OF_PLACE, IN_PLACE, QK, VECTOR = 0, 3, 5, 7
PACKED, PADDED, HEAD_MAJOR, OVERLAP = 0, 3, 5, 6


NO_SCALING = bytes([0, 0])  # scaling type byte (< 6: none), sequence-length byte
# YaRN factor 4, M 4096, M0 512, default betas, truncate; sequence length 5000
YARN_F4 = bytes([9, 5, 12, 5, 3, 1, 0, 1, 1, 1, 1, 4])
# LongRoPE whose short_factor list has rotary_dim/2 + 1 entries: refused, naming the key
LONGROPE_BAD_LIST = bytes([11, 5, 12, 5, 3, 1, 0, 1, 1, 1, 1, 0])


def spec(t, layout, head_dim, rot, base, rot_extra=b"", scaling=NO_SCALING):
    return bytes([t, layout]) + struct.pack("<H", head_dim) + bytes([rot]) + rot_extra + bytes([base]) + scaling


LENGTHS = [1, 2, 3, 16, 17, 100, 1000, 4096, 4097]


def run(length=4096, mode=0, long_table=0, entry=OUT_OF_PLACE, inverse=False, pos32=True, tokens=3, qh=2,
        kh=1, geo_q=(0, PACKED), geo_k=(0, PACKED), offset=0, positions=(), payload_mode=1,
        payload=b"", null_data=0, dir_byte=None):
    if dir_byte is None:
        dir_byte = 0 if inverse else 1
    b = bytes([LENGTHS.index(length), mode, long_table, entry, dir_byte, 0 if pos32 else 1, tokens, qh, kh, 0])
    # fused-buffer byte 1 (not fused), out geometries = in geometries (1, 1), element offset
    b += bytes(geo_q) + bytes(geo_k) + bytes([1, 1, 1, offset])
    for p in positions:
        b += p
    b += bytes([0])  # positions pointer not null
    b += bytes([payload_mode]) + payload
    return b


def in_range(p):
    return bytes([10]) + struct.pack("<I", p)


def near(kind, delta):  # kind: 4 -> 2^24, 5 -> 2^31, 6 -> 2^32; delta -1, 0, +1
    return bytes([kind + 32 * (delta + 1)])


def ramp(n):
    return bytes((37 * i + 11) % 256 for i in range(n))


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
}

os.makedirs(HERE, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {HERE}")
