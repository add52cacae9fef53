#!/usr/bin/env python3
"""Registers, stack and spills of every CUDA kernel, as a Markdown table, from a build log
of nvcc with -Xptxas=-v (bench/ptxas_report.sh makes one; bench/gpu_check.sh's build.log
is one too). A kernel is named by its world (training, netsim, or a test's) and what it runs: the
megakernel (the whole graph) or one node's phase kernel (the kernel-per-node mode).
Usage: ptxas_table.py BUILD.log
"""
import re
import sys

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes cumulative stack size)?")


def identifiers(mangled, start):
    """The source names in a mangled name from `start` on: each is its length, then the name
    (a digit run after S or T belongs to a substitution or a template parameter)."""
    i = start
    while i < len(mangled):
        if not mangled[i].isdigit() or (i > 0 and mangled[i - 1] in "ST"):
            i += 1
            continue
        j = i
        while j < len(mangled) and mangled[j].isdigit():
            j += 1
        word = mangled[j:j + int(mangled[i:j])]
        if word[:1].isalpha() or word[:1] == "_" and word[1:2].isalpha():
            yield word
            i = j + len(word)
        else:
            i = j


def first_name(mangled, after, skip=("mv", "net", "train", "demo", "System")):
    """The first name of a mangled name after `after` that is none of the project's namespaces
    (the tests' `demo` among them) nor the System wrapper."""
    for word in identifiers(mangled, mangled.find(after) + len(after)):
        if word not in skip:
            return word
    return mangled[:60]


def label(mangled):
    """(world, kernel) of an entry function, read from its mangled name (c++filt gives up on
    some of these names): the world is the configuration type of its WorldView
    (TrainWorldConfig: training, NetSimConfig: netsim, another: a test's world)."""
    world = first_name(mangled, "WorldView")
    world = {"TrainWorldConfig": "training", "NetSimConfig": "netsim"}.get(world, "test")
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
