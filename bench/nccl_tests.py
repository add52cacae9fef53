#!/usr/bin/env python3
"""@file nccl_tests.py
Compares a collective benchmark's summary.csv (bench/nccl_tests.yaml) with an nccl-tests log:
per simulated size and fidelity the out-of-place time and busbw of the log, the simulated
ones and the error of the simulated busbw (the time's at sizes whose busbw rounds to 0).
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
        runs = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    fidelities = sorted({r["network.fidelity"] for r in runs})
    print(f"{'size (B)':>12} {'log us':>9} {'log busbw':>9}", end="")
    for fid in fidelities:
        print(f" | {fid + ' us':>13} {'busbw':>7} {'error':>7}", end="")
    print()
    worst = {fid: 0.0 for fid in fidelities}
    for size in sorted({size_of(r["workload.collective.bytes"]) for r in runs}):
        if size not in log:
            continue
        t_log, bw_log = log[size]
        print(f"{size:>12} {t_log:>9.2f} {bw_log:>9.2f}", end="")
        for fid in fidelities:
            match = [r for r in runs if r["network.fidelity"] == fid and size_of(r["workload.collective.bytes"]) == size]
            if not match:
                print(f" | {'-':>13} {'-':>7} {'-':>7}", end="")
                continue
            t, bw = float(match[0]["collective_us"]), float(match[0]["busbw_gbps"])
            err = (bw / bw_log - 1) if bw_log >= 0.01 else (t_log / t - 1)
            worst[fid] = max(worst[fid], abs(err))
            print(f" | {t:>13.2f} {bw:>7.2f} {100 * err:>+6.1f}%", end="")
        print()
    print("largest |error|: " + ", ".join(f"{fid} {100 * worst[fid]:.1f} %" for fid in fidelities))


if __name__ == "__main__":
    main()
