#!/usr/bin/env bash
# Side by side: two apply_bench binaries (e.g. a worktree's build of the base commit and this
# tree's), alternating ROUNDS times (old first in odd rounds, new first in even ones), each
# round 5 repetitions of every benchmark matching FILTER (0.2 s each: apply_bench sets its own
# minimum time). Prints per benchmark the fastest repetition (CPU time, as the GB/s) of each
# binary over all rounds (time another tenant adds only ever lengthens a repetition), their
# ratio, and the per-round ratios. The decode-dispatch rows report aggregates only: filter
# them out.
#   scripts/compare_bench.sh OLD NEW FILTER [ROUNDS=4]
#   e.g. scripts/compare_bench.sh /tmp/base/build/hsw/benchmarks/apply_bench \
#          build/hsw/benchmarks/apply_bench 'BM_Apply<bf16' 4
set -euo pipefail
if [ $# -lt 3 ] || ! [[ "${4:-4}" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 OLD NEW FILTER [ROUNDS >= 1]" >&2
  exit 2
fi
old="$1" new="$2" filter="$3" rounds="${4:-4}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() {  # run SIDE ROUND
  local bin=$old
  [ "$1" = new ] && bin=$new
  if ! "$bin" --benchmark_filter="$filter" --benchmark_repetitions=5 \
      --benchmark_out="$dir/$1$2.json" --benchmark_out_format=json > /dev/null 2> "$dir/err"; then
    echo "$bin failed:" >&2
    cat "$dir/err" >&2
    exit 1
  fi
}
for i in $(seq "$rounds"); do
  if [ $((i % 2)) -eq 1 ]; then run old "$i"; run new "$i"; else run new "$i"; run old "$i"; fi
done
python3 - "$dir" "$rounds" <<'PY'
import collections, json, sys

d, rounds = sys.argv[1], int(sys.argv[2])


def load(path):
    runs = collections.defaultdict(list)
    text = open(path).read()  # empty when FILTER matched nothing
    for b in (json.loads(text) if text.strip() else {}).get("benchmarks", []):
        if b.get("run_type") == "iteration" and not b.get("error_occurred"):
            runs[b["run_name"].split("/min_time")[0]].append((b["cpu_time"], b.get("bytes_per_second", 0) / 1e9))
    return {k: min(v) for k, v in runs.items()}


old = [load(f"{d}/old{i}.json") for i in range(1, rounds + 1)]
new = [load(f"{d}/new{i}.json") for i in range(1, rounds + 1)]
names = [k for k in old[0] if all(k in r for r in old + new)]
if not names:
    sys.exit("no benchmark ran in both binaries in every round (check FILTER)")
for k in names:
    t_old, t_new = min(o[k][0] for o in old), min(n[k][0] for n in new)
    per_round = " ".join(f"{n[k][0] / o[k][0]:.2f}" for o, n in zip(old, new))
    print(f"{k:56s} old {max(o[k][1] for o in old):6.1f} GB/s  new {max(n[k][1] for n in new):6.1f} GB/s  "
          f"time new/old {t_new / t_old:5.2f}  rounds: {per_round}")
skipped = sorted({k for r in old + new for k in r} - set(names))
if skipped:
    print(f"not in both binaries in every round: {', '.join(skipped)}")
PY
