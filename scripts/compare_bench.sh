#!/usr/bin/env bash
# Side by side: two apply_bench binaries (e.g. a worktree's build of the base commit and this
# tree's), alternating ROUNDS times, each round 5 repetitions of 0.1 s per benchmark matching
# FILTER. Prints per benchmark the fastest repetition (CPU time, as the GB/s) of each binary
# over all rounds (time another tenant adds only ever lengthens a repetition), their ratio, and
# the per-round ratios.
#   scripts/compare_bench.sh OLD NEW FILTER [ROUNDS=4]
#   e.g. scripts/compare_bench.sh /tmp/base/build/hsw/benchmarks/apply_bench \
#          build/hsw/benchmarks/apply_bench 'BM_Apply<bf16' 4
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 OLD NEW FILTER [ROUNDS]" >&2
  exit 2
fi
old="$1" new="$2" filter="$3" rounds="${4:-4}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for i in $(seq "$rounds"); do
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    "$bin" --benchmark_filter="$filter" --benchmark_repetitions=5 --benchmark_min_time=0.1 \
      --benchmark_out="$dir/$side$i.json" --benchmark_out_format=json > /dev/null 2>&1
  done
done
python3 - "$dir" "$rounds" <<'PY'
import collections, json, sys

d, rounds = sys.argv[1], int(sys.argv[2])


def load(path):
    runs = collections.defaultdict(list)
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "iteration":
            runs[b["run_name"].split("/min_time")[0]].append((b["cpu_time"], b.get("bytes_per_second", 0) / 1e9))
    return {k: min(v) for k, v in runs.items()}


old = [load(f"{d}/old{i}.json") for i in range(1, rounds + 1)]
new = [load(f"{d}/new{i}.json") for i in range(1, rounds + 1)]
for k in old[0]:
    t_old, t_new = min(o[k][0] for o in old), min(n[k][0] for n in new)
    per_round = " ".join(f"{n[k][0] / o[k][0]:.2f}" for o, n in zip(old, new))
    print(f"{k:56s} old {max(o[k][1] for o in old):6.1f} GB/s  new {max(n[k][1] for n in new):6.1f} GB/s  "
          f"time new/old {t_new / t_old:5.2f}  rounds: {per_round}")
PY
