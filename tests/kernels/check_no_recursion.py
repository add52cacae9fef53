#!/usr/bin/env python3
"""Fails when device code calls itself, directly or through other functions.

A GPU thread's stack is a few kB: the executor reserves it from the kernel's frame as ptxas
reports it (kernels/cuda/cuda_executor.cuh), and ptxas reported a fixed size (1,056 B) for the
training megakernel while its collective transfers recursed, one level per NVLink hop. Such a
recursion overflows the stack on a real device only, as deep as the simulated work goes. Reads
PTX files (those nvcc keeps while it compiles systems/cuda; a folder stands for every .ptx
file in it), builds the graph of direct calls between the functions each defines, and
reports a cycle; an indirect call (through a register) fails too, since its callee is
unknown.
Usage: check_no_recursion.py FILE.ptx|FOLDER...  (CMake lists separated by ';' too)
"""
import glob
import os
import re
import shutil
import subprocess
import sys

HEADER = re.compile(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$.]+)\s*\(")
CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([\w$.%]+)")


def shorten(name):
    """A demangled name with its template arguments left out."""
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
            if depth == 1:
                out.append("<...>")
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def demangle(names):
    """Readable names when c++filt exists, the PTX names otherwise."""
    if shutil.which("c++filt") is None:
        return names
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=False).stdout
    lines = out.splitlines()
    return [shorten(n) for n in lines] if len(lines) == len(names) else names


def call_graph(text):
    """(entries, callees of each defined function) of one PTX text."""
    graph, entries = {}, []
    for m in HEADER.finditer(text):
        close = text.find(")", m.end())
        body = close + 1
        while body < len(text) and text[body] not in "{;":
            body += 1
        if body >= len(text) or text[body] == ";":
            continue  # a declaration
        depth, end = 0, body
        for end in range(body, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        name = m.group(2)
        if m.group(1) == "entry":
            entries.append(name)
        calls = " ".join(text[body:end].split())
        graph.setdefault(name, set()).update(c.group(1) for c in CALL.finditer(calls))
    return entries, graph


def find_cycle(graph):
    """A list of functions forming a cycle, or None."""
    state, stack = {}, []

    def visit(f):
        state[f] = 1
        stack.append(f)
        for g in sorted(graph.get(f, ())):
            if state.get(g) == 1:
                return stack[stack.index(g):] + [g]
            if state.get(g) is None:
                cycle = visit(g)
                if cycle:
                    return cycle
        stack.pop()
        state[f] = 2
        return None

    sys.setrecursionlimit(100000)
    for f in sorted(graph):
        if state.get(f) is None:
            cycle = visit(f)
            if cycle:
                return cycle
    return None


def main(args):
    paths = [p for a in args for p in a.split(";") if p]
    if not paths:
        print("usage: check_no_recursion.py FILE.ptx|FOLDER... (CMake lists separated by ';' too)")
        return 2
    files = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(glob.glob(os.path.join(path, "*.ptx")))
            if not found:
                print(f"FAIL: no .ptx file in {path}")
                return 1
            files += found
        else:
            files.append(path)
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if re.search(r"^\.version", text, re.MULTILINE) is None:
            print(f"FAIL: {path} is not PTX")
            return 1
        entries, graph = call_graph(text)
        if not entries:
            print(f"FAIL: {path} has no kernel entry")
            return 1
        indirect = sorted(f for f, callees in graph.items() if any(c.startswith("%") for c in callees))
        if indirect:
            print(f"FAIL: {path}: an indirect call in {demangle(indirect[:1])[0][:300]}")
            return 1
        cycle = find_cycle(graph)
        if cycle:
            print(f"FAIL: {path}: device code recurses:")
            for name in demangle(cycle):
                print(f"  {name[:300]}")
            return 1
        calls = sum(len(c) for c in graph.values())
        print(f"{path.split('/')[-1]}: {len(entries)} kernel entries, {len(graph)} functions, {calls} direct calls, no recursion")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
