#!/usr/bin/python3
"""Turns a Google Benchmark JSON run of benchmarks/apply_bench into a PNG chart.

    build/release/benchmarks/apply_bench --benchmark_repetitions=3 \
        --benchmark_report_aggregates_only=true \
        --benchmark_out=bench.json --benchmark_out_format=json
    /usr/bin/python3 scripts/plot_bench.py bench.json docs/bench.png

One row per token count (T = 1 decode, T = 512 prefill). Left: GB/s per head dimension for
each layout and storage type, with the memory baselines measured in the same run (dashed or dotted).
Right: the ratio of each to its baseline (stream over the same bytes for in place, memcpy for
out of place). Uses medians when the run has aggregates, else the first repetition.
Needs python3-matplotlib (Debian; run it with /usr/bin/python3 if another python3 is first on PATH).
"""
import json
import sys

# (group, kind) -> (label, baseline group); groups and kinds as in apply_bench.cpp.
SERIES = [
    ((3, 1), "float interleaved", 0),
    ((3, 2), "float half_split", 0),
    ((4, 1), "fp16 interleaved", 1),
    ((4, 2), "fp16 half_split", 1),
    ((5, 1), "bf16 interleaved", 1),
    ((5, 2), "bf16 half_split", 1),
    ((30, 1), "fp16 interleaved, rounding::fast", 1),
    ((30, 2), "fp16 half_split, rounding::fast", 1),
    ((6, 1), "float out of place interleaved", 2),
    ((6, 2), "float out of place half_split", 2),
    ((7, 1), "float -> fp16 out of place interleaved", 2),
    ((7, 2), "float -> fp16 out of place half_split", 2),
    ((36, 1), "float -> bf16 out of place interleaved", 2),
    ((36, 2), "float -> bf16 out of place half_split", 2),
]
# Baselines drawn in the GB/s panels: group -> (label, line style, colour). Groups 8 and 9 are
# what the 16-bit conversions alone allow (BM_ConvertStream); group 50 is what a loop of vector
# loads and stores reaches out of place (BM_CopyStream).
BASELINES = {
    0: ("stream (float rows)", "--", "gray"),
    1: ("stream (16-bit rows)", "--", "black"),
    2: ("memcpy (float rows)", "--", "black"),
    8: ("fp16 conversion stream (16-bit rows)", ":", "black"),
    9: ("bf16 conversion stream (16-bit rows)", "-.", "black"),
    50: ("out-of-place stream y = a*x + b (float rows)", ":", "gray"),
}


# The decode-dispatch pair (groups 20 and 21) reports the fastest of its repetitions: its "min"
# aggregate's CPU time is the fastest repetition's, its GB/s counter the slowest's (each the
# minimum over the repetitions), so only its ns are read.
FASTEST = {20, 21}


def load(path, with_ns=False):
    """(context, {(group, kind, D, T): GB/s}), and {key: CPU ns per iteration} with with_ns.

    Per benchmark, as apply_bench's own tables read a run: its median aggregate (the "min" one
    for the decode-dispatch pair) where it has aggregates, else its first repetition. Runs
    without --benchmark_repetitions still have the decode pair's aggregates, so this is decided
    per benchmark, not per file."""
    with open(path) as f:
        data = json.load(f)
    first, aggregate = {}, {}
    for r in data["benchmarks"]:
        if "group" not in r or r.get("error_occurred"):
            continue
        is_aggregate = r.get("run_type") == "aggregate"
        if is_aggregate and r.get("aggregate_name") not in ("median", "min"):
            continue  # the other aggregates' counters are not group numbers (NaN for cv)
        grp = int(r["group"])
        key = (grp, int(r["kind"]), int(r["D"]), int(r["T"]))
        value = (r["bytes_per_second"] / 1e9, r["cpu_time"])
        if is_aggregate:
            if r["aggregate_name"] == ("min" if grp in FASTEST else "median"):
                aggregate[key] = value
        elif key not in first:
            first[key] = value
    picked = {**first, **aggregate}
    gbps = {k: v[0] for k, v in picked.items()}
    ns = {k: v[1] for k, v in picked.items()}
    context = data.get("context", {})
    return (context, gbps, ns) if with_ns else (context, gbps)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_bench.py bench.json out.png")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    context, gbps = load(sys.argv[1])
    dims = sorted({k[2] for k in gbps})
    tokens = sorted({k[3] for k in gbps})
    fig, axes = plt.subplots(len(tokens), 2, figsize=(15, 5 * len(tokens)), squeeze=False)
    for row, T in enumerate(tokens):
        ax_g, ax_r = axes[row]
        # One colour per series (tab20: the default cycle repeats after 10).
        colours = plt.get_cmap("tab20")
        for n, ((grp, kind), label, base) in enumerate(SERIES):
            xs = [d for d in dims if (grp, kind, d, T) in gbps]
            if not xs:
                continue
            ys = [gbps[(grp, kind, d, T)] for d in xs]
            style = "-o" if kind == 1 else "-s"
            c = colours(n % 20)
            ax_g.plot(xs, ys, style, color=c, label=label)
            rx = [d for d in xs if (base, 0, d, T) in gbps]
            ax_r.plot(rx, [gbps[(grp, kind, d, T)] / gbps[(base, 0, d, T)] for d in rx], style, color=c, label=label)
        for base, (label, style, colour) in BASELINES.items():
            xs = [d for d in dims if (base, 0, d, T) in gbps]
            if xs:
                ax_g.plot(xs, [gbps[(base, 0, d, T)] for d in xs], style, color=colour, alpha=0.6, label=label)
        ax_g.set_title(f"T = {T} tokens, 32 heads: GB/s")
        ax_r.set_title(f"T = {T}: ratio to the baseline on the same bytes")
        ax_r.axhline(0.85 if T > 1 else 0.70, color="red", linestyle=":", label="target (float in place)")
        ax_r.axhline(1.0, color="gray", linewidth=0.5)
        for ax in (ax_g, ax_r):
            ax.set_xlabel("head dimension D")
            ax.set_xticks(dims)
            ax.grid(alpha=0.3)
        ax_g.set_ylabel("GB/s (bytes read + written)")
        ax_r.set_ylabel("ratio")
        ax_r.legend(fontsize=7, loc="lower right")
        ax_g.legend(fontsize=7, loc="best")
    host = context.get("host_name", "")
    fig.suptitle(f"rope::apply, single thread, cached table ({host}, {context.get('date', '')})")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=90)
    print(f"wrote {sys.argv[2]}")


if __name__ == "__main__":
    main()
