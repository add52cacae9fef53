#!/usr/bin/env python3
"""@file nccl_tests.py
Compares a collective benchmark's summary.csv (bench/nccl_tests.yaml) with an nccl-tests log:
per simulated size the out-of-place time and busbw of the log, and per combination of the
other swept keys (fidelity, algorithm) the simulated ones and the error of the simulated
busbw (the time's at sizes whose busbw rounds to 0).
Usage: bench/nccl_tests.py SUMMARY_CSV NCCL_TESTS_LOG
"""
import csv
import re
import sys

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def size_of(text):
    m = re.fullmatch(r"(\d+)\s*([KMGT]iB|B)?", text.strip())
    if not m:
        raise SystemExit(f"nccl_tests.py: cannot read the size '{text}'")
    return int(m.group(1)) * UNITS[m.group(2) or "B"]


def read_log(path):
    """size -> (out-of-place time us, busbw GB/s) from the log's data rows."""
    rows = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 13 and fields[0].isdigit() and fields[2] in ("float", "half", "bfloat16", "int8"):
                rows[int(fields[0])] = (float(fields[5]), float(fields[7]))
    return rows


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    log = read_log(sys.argv[2])
    with open(sys.argv[1], newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        runs = [r for r in reader if r["status"] == "ok"]
    # The swept keys between the id and the status, the size apart: one column group each.
    axes = [k for k in header[header.index("id") + 1:header.index("status")] if k != "workload.collective.bytes"]
    groups = sorted({tuple(r[k] for k in axes) for r in runs})
    labels = {g: " ".join(g) for g in groups}
    print(f"{'size (B)':>12} {'log us':>9} {'log busbw':>9}", end="")
    for g in groups:
        print(f" | {labels[g] + ' us':>20} {'busbw':>7} {'error':>7}", end="")
    print()
    worst = {g: 0.0 for g in groups}
    for size in sorted({size_of(r["workload.collective.bytes"]) for r in runs}):
        if size not in log:
            continue
        t_log, bw_log = log[size]
        print(f"{size:>12} {t_log:>9.2f} {bw_log:>9.2f}", end="")
        for g in groups:
            match = [r for r in runs
                     if tuple(r[k] for k in axes) == g and size_of(r["workload.collective.bytes"]) == size]
            if not match:
                print(f" | {'-':>20} {'-':>7} {'-':>7}", end="")
                continue
            t, bw = float(match[0]["collective_us"]), float(match[0]["busbw_gbps"])
            err = (bw / bw_log - 1) if bw_log >= 0.01 else (t_log / t - 1)
            worst[g] = max(worst[g], abs(err))
            print(f" | {t:>20.2f} {bw:>7.2f} {100 * err:>+6.1f}%", end="")
        print()
    print("largest |error|: " + ", ".join(f"{labels[g]} {100 * worst[g]:.1f} %" for g in groups))


if __name__ == "__main__":
    main()
