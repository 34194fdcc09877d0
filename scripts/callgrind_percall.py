#!/usr/bin/env python3
"""Inclusive instructions (Ir) per call of functions in a callgrind output file.

    callgrind_percall.py FILE NAME...   one line per NAME: the Ir per call, summed over every
                                        function whose name contains NAME (first match order)

Reads the call records (`cfn=`, `calls=`, then the inclusive cost line), so the figure is
independent of how many iterations the benchmark ran.
"""
import re
import sys


def per_call(path):
    names, calls, cost = {}, {}, {}
    callee, pending = None, None
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"c?fn=(?:\((\d+)\))? ?(.*)", line)
        if m:
            if m.group(1) is None:  # --compress-strings=no: the name alone
                name = m.group(2)
            else:
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                name = names[m.group(1)]
            if line.startswith("cfn="):
                callee = name
        elif line.startswith("calls="):
            pending = (callee, int(line[6:].split()[0]))
        elif pending and line and (line[0].isdigit() or line[0] in "+-*"):
            fn, n = pending
            pending = None
            calls[fn] = calls.get(fn, 0) + n
            cost[fn] = cost.get(fn, 0) + int(line.split()[-1])  # Ir: the one event, last
    return calls, cost


def main():
    calls, cost = per_call(sys.argv[1])
    for want in sys.argv[2:]:
        hits = [fn for fn in calls if want in fn]
        if not hits:
            sys.exit(f"no function matching {want!r}")
        n = sum(calls[fn] for fn in hits)
        print(f"{sum(cost[fn] for fn in hits) / n:.1f} {n} {want}")


if __name__ == "__main__":
    main()
