#!/usr/bin/python3
"""Prints the README's three benchmark tables (markdown) from a JSON run of apply_bench.

    scripts/main.sh --benchmark_out=bench.json --benchmark_out_format=json
    python3 scripts/bench_tables.py bench.json

In place: GB/s of the baselines, and each rope row over its stream (the float stream for float
rows, the 16-bit stream for fp16 and bf16 rows, both roundings). Out of place: each row over
memcpy of the float rows. Runtime dispatch at decode: ns per call, compile-time against
runtime dispatch. Figures as scripts/plot_bench.py reads them (medians; fastest for the decode
pair). Needs no matplotlib.
"""
import sys

from plot_bench import load

DIMS = (64, 80, 96, 128, 256)
TOKENS = (1, 512)
LAYOUTS = ((1, "inter"), (2, "half"))

# (title line, baseline group, baseline column name, [(group, column name)])
RATIO_TABLES = [
    ("In place (fp16 and bf16: `rounding::accurate`, the default, then `rounding::fast`):",
     None, None,
     [(0, None), (3, "float"), (1, None), (4, "fp16"), (5, "bf16"), (30, "fp16 fast"),
      (31, "bf16 fast")]),
    ("Out of place, float in (float, fp16 or bf16 out), against `memcpy` of the float rows:",
     2, "memcpy GB/s",
     [(6, "out float"), (7, "float->fp16"), (36, "float->bf16"), (32, "float->fp16 fast"),
      (37, "float->bf16 fast")]),
]
BASE_NAMES = {0: "float stream GB/s", 1: "16-bit stream GB/s"}


def cell(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def ratio_table(gbps, title, base, base_name, columns):
    # In the in-place table a baseline column (name None) sets the baseline of the columns after
    # it; out of place every column is over `base`.
    head = ["D", "T"]
    if base is not None:
        head.append(base_name)
    for grp, name in columns:
        if name is None:
            head.append(BASE_NAMES[grp])
        else:
            head += [f"{name} {short}" for _, short in LAYOUTS]
    lines = [title, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for D in DIMS:
        for T in TOKENS:
            row = [str(D), str(T)]
            cur = base
            if base is not None:
                row.append(cell(gbps.get((base, 0, D, T)), 0))
            for grp, name in columns:
                if name is None:
                    cur = grp
                    row.append(cell(gbps.get((grp, 0, D, T)), 0))
                    continue
                for kind, _ in LAYOUTS:
                    num, den = gbps.get((grp, kind, D, T)), gbps.get((cur, 0, D, T))
                    row.append(cell(num / den if num is not None and den else None))
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def dispatch_table(ns):
    lines = ["| D | layout | compile-time ns | runtime ns | cost |", "|---|---|---|---|---|"]
    for D in DIMS:
        for kind, name in ((1, "interleaved"), (2, "half_split")):
            s, r = ns.get((20, kind, D, 1)), ns.get((21, kind, D, 1))
            cost = f"{(r / s - 1) * 100:+.1f}%" if s and r else "-"
            lines.append(f"| {D} | {name} | {cell(s, 1)} | {cell(r, 1)} | {cost} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench_tables.py bench.json")
    _, gbps, ns = load(sys.argv[1], with_ns=True)
    for spec in RATIO_TABLES:
        print(ratio_table(gbps, *spec))
        print()
    print(dispatch_table(ns))


if __name__ == "__main__":
    main()
