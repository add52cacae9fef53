#!/usr/bin/env python3
"""Registers, stack and spills of every CUDA kernel, as a Markdown table, from a build log
of nvcc with -Xptxas=-v (bench/ptxas_report.sh makes one; bench/gpu_check.sh's build.log
is one too). A kernel is named by its world (training or network) and what it runs: the
megakernel (the whole graph) or one node's phase kernel (the kernel-per-node mode).
Usage: ptxas_table.py BUILD.log
"""
import re
import sys

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+)'")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes cumulative stack size)?")


def first_name(mangled, after):
    """The first identifier of a mangled name after `after` that is no namespace or wrapper."""
    i = mangled.find(after) + len(after)
    while i < len(mangled):
        m = re.compile(r"\d+").search(mangled, i)
        if m is None:
            break
        n = int(m.group(0))
        word = mangled[m.end():m.end() + n]
        if word not in ("mv", "net", "train", "System"):
            return word
        i = m.end() + n
    return mangled[:60]


def label(mangled):
    """(world, kernel) of an entry function (read from its mangled name: c++filt gives up on
    some of these names)."""
    world = "training" if "TrainWorldConfig" in mangled else "network"
    if "megakernel" in mangled:
        return world, "megakernel (whole graph)"
    return world, first_name(mangled, "nodePhaseKernel")


def rows(lines):
    """One row per entry: world, kernel, arch, registers, frame, cumulative stack, spill
    stores and loads, and the spill stores and loads of the functions it calls (those
    ptxas kept apart, listed after the entry)."""
    out, current, frame = [], None, None
    for line in lines:
        m = ENTRY.search(line)
        if m:
            current, frame = [*label(m.group(1)), m.group(2)], None
            continue
        m = FRAME.search(line)
        if m and current is not None and frame is None:
            frame = [int(x) for x in m.groups()]
        elif m and current is None and out:
            out[-1][-2] += int(m.group(2))
            out[-1][-1] += int(m.group(3))
        m = USED.search(line)
        if m and current is not None:
            f = frame or [0, 0, 0]
            stack = int(m.group(2)) if m.group(2) else f[0]
            out.append([*current, int(m.group(1)), f[0], stack, f[1], f[2], 0, 0])
            current = None
    return [tuple(r) for r in out]


def main(args):
    if len(args) != 1:
        print("usage: ptxas_table.py BUILD.log")
        return 2
    with open(args[0], encoding="utf-8", errors="replace") as f:
        table = sorted(set(rows(f)), key=lambda r: (r[0], r[1] != "megakernel (whole graph)", -r[3], r[1], r[2]))
    if not table:
        print(f"{args[0]}: no ptxas report (was the build run with -Xptxas=-v, and not already up to date?)")
        return 1
    print("| world | kernel | arch | registers | stack frame B | cumulative stack B | spill stores B | spill loads B |"
          " callees' spill stores B | callees' spill loads B |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in table:
        print("| " + " | ".join(str(x) for x in r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
