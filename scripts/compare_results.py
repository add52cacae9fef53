#!/usr/bin/env python3
"""Compares two CSV result files row by row, ignoring the simulator's own timing columns
(wall_s, events_per_s, wall_seconds): the same experiments on two backends must agree in
every other field, exactly. Rows are matched by the `name` column when there is one, else
by position. Prints each difference; exit code 1 when any.

Usage: compare_results.py A.csv B.csv [more pairs...]
"""
import csv
import sys

TIMING = {"wall_s", "events_per_s", "wall_seconds"}


def rows(path):
    with open(path, newline="") as f:
        table = list(csv.DictReader(f))
    keyed = bool(table) and "name" in table[0]
    return {(r["name"] if keyed else i): {k: v for k, v in r.items() if k not in TIMING}
            for i, r in enumerate(table)}


def compare(path_a, path_b):
    a, b = rows(path_a), rows(path_b)
    bad = 0
    for key in sorted(set(a) | set(b), key=str):
        ra, rb = a.get(key), b.get(key)
        if ra == rb:
            continue
        bad += 1
        if ra is None or rb is None:
            print(f"{key}: only in {path_a if rb is None else path_b}")
            continue
        diff = [k for k in sorted(set(ra) | set(rb)) if ra.get(k) != rb.get(k)]
        print(f"{key}: differs in {', '.join(diff)}")
        for k in diff[:6]:
            print(f"    {k}: {ra.get(k)} against {rb.get(k)}")
    print(f"{path_b}: {len(b)} rows, {bad} differ from {path_a} outside the timing columns")
    return bad


def main(argv):
    if len(argv) < 3 or len(argv) % 2 == 0:
        print(__doc__)
        return 2
    bad = sum(compare(argv[i], argv[i + 1]) for i in range(1, len(argv), 2))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
