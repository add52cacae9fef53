#!/usr/bin/env python3
"""Regenerates the figures README.md quotes from the runs that produce them.

Every figure sits between markers in README.md:
  <!-- fig:NAME -->text<!-- /fig -->    results (deterministic): rewritten, and compared by --check
  <!-- time:NAME -->text<!-- /time -->  wall times of this machine: rewritten, never compared

Usage: scripts/figures.py [--multiverse PATH] [--check] [--all]
  --multiverse  the binary to run (default build/release/experiments/multiverse)
  --check       rewrite nothing; exit 1 when a fig block differs from what the runs give
  --all         also run the slow studies (collective_tuning: about 40 s at packet level)
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")


def run(mv, study, out, *extra):
    """Runs a sweep into `out`; returns (stdout, wall seconds, summary rows)."""
    start = time.monotonic()
    proc = subprocess.run([mv, "--experiments", os.path.join(ROOT, study), "--out", out, *extra],
                          capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit("figures: %s failed (exit %d):\n%s%s" % (study, proc.returncode, proc.stdout, proc.stderr))
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        return proc.stdout, wall, json.load(f)["experiments"]


def seconds(wall):
    return "about %d s" % round(wall) if wall >= 2 else "about %.1f s" % wall


def by_name(rows):
    return {r["name"]: r for r in rows}


def quickstart(mv, tmp, figs, times):
    out, wall, rows = run(mv, "examples/quickstart.yaml", os.path.join(tmp, "quickstart"), "--top", "3")
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if re.match(r"^\s*#\s+name\s", line))
    figs["quickstart-table"] = "\n" + "\n".join(["```"] + lines[head:head + 4] + ["```"]) + "\n"
    best = min((r for r in rows if r["status"] == "ok"), key=lambda r: r["iteration_ms"])
    s = best["swept"]
    figs["quickstart-best"] = "TP %s, PP %s, DP %s" % (s["parallelism.tp"], s["parallelism.pp"], s["parallelism.dp"])
    figs["quickstart-count"] = "%d experiments" % len(rows)
    # Packet against analytical level, per split: pipelined splits hide their DP all-reduce.
    pairs = {}
    for r in rows:
        pairs.setdefault(r["name"].rsplit("-", 1)[0], {})[r["swept"]["network.fidelity"]] = r
    piped, flat = [], []
    for name, p in sorted(pairs.items()):
        diff = 100 * abs(p["packet"]["iteration_ms"] / p["analytical"]["iteration_ms"] - 1)
        (piped if int(p["packet"]["swept"]["parallelism.pp"]) > 1 else flat).append((diff, name))
    figs["quickstart-agreement"] = (
        "analytical and packet level agree within %.3f %% for the %d splits with pipeline stages; without them the "
        "DP all-reduce is exposed and packet level is up to %.0f %% slower (%s)"
        % (max(piped)[0], len(piped), max(flat)[0], max(flat)[1]))
    times["quickstart"] = seconds(wall)


def topology_search(mv, tmp, figs, times):
    _, wall, rows = run(mv, "examples/studies/topology_search.yaml", os.path.join(tmp, "topology"), "--quiet")
    it = {}
    for r in rows:
        for key in ("spine-leaf-1to1", "spine-leaf-2to1", "spine-leaf-4to1", "rail-rail", "fat-tree"):
            if key in r["name"]:
                it[key] = r["iteration_ms"]
    cost = lambda k: 100.0 * (it[k] / it["spine-leaf-1to1"] - 1)
    figs["topology_search"] = ("one DP-heavy job on a fat-tree, a rail-optimised fabric and spine-leaf fabrics at "
                               "1:1, 2:1, 4:1: the ring all-reduce's iteration (each DP group in 2 channels, one per GPU it has "
                               "on a server) is %.1f ms "
                               "at 1:1, %+.1f %% at 2:1, %+.0f %% at 4:1 (%.1f ms); %.1f ms on the rail-optimised "
                               "fabric, where every channel's hops between servers stay on their rail; %.1f ms on "
                               "the fat-tree"
                               % (it["spine-leaf-1to1"], cost("spine-leaf-2to1"), cost("spine-leaf-4to1"),
                                  it["spine-leaf-4to1"], it["rail-rail"], it["fat-tree"]))
    times["topology_search"] = "< 1 s" if wall < 1 else seconds(wall)


def parallelism_sizes(mv, tmp, figs, times):
    _, wall, rows = run(mv, "examples/studies/parallelism_sizes.yaml", os.path.join(tmp, "sizes"), "--quiet")
    oom = sum(1 for r in rows if r["status"] == "oom")
    best = max((r for r in rows if r["status"] == "ok"), key=lambda r: r["mfu"])
    s = best["swept"]
    figs["parallelism_sizes"] = ("LLaMA-2 70B on 64 H100s: %d TP/PP/DP/vpp/recompute splits, %d of them OOM (reported, "
                                 "not simulated); best MFU %.1f %% with TP %s, PP %s, DP %s, vpp %s, %s recompute"
                                 % (len(rows), oom, 100 * best["mfu"], s["parallelism.tp"], s["parallelism.pp"],
                                    s["parallelism.dp"], s["parallelism.vpp"], s["parallelism.recompute"]))
    times["parallelism_sizes"] = seconds(wall)


def zero_stages(mv, tmp, figs, times):
    _, wall, rows = run(mv, "examples/studies/zero_stages.yaml", os.path.join(tmp, "zero"), "--quiet")
    r = by_name(rows)

    def stage(name):
        x = r[name]
        if x["status"] != "ok":
            return "%s needs %.0f GiB" % (x["status"].upper(), x["peak_memory_gib"])
        return "%.0f ms in %.1f GiB" % (x["iteration_ms"], x["peak_memory_gib"])

    parts = []
    for split, label in (("tp1-dp64", "DP 64"), ("tp2-dp32", "TP 2 × DP 32")):
        parts.append("%s: %s" % (label, ", ".join("ZeRO-%d %s" % (z, stage("%s-zero%d" % (split, z))) for z in range(4))))
    figs["zero_stages"] = "Llama-3 8B (8k tokens) on 64 H100s at 400 Gb/s, each ZeRO stage; " + "; ".join(parts)
    times["zero_stages"] = "< 1 s" if wall < 1 else seconds(wall)


def long_context(mv, tmp, figs, times):
    _, wall, rows = run(mv, "examples/studies/long_context.yaml", os.path.join(tmp, "long"), "--quiet")
    r = by_name(rows)

    def split(cp, dp, rate):
        x = r["cp%d-dp%d-%s" % (cp, dp, rate)]
        if x["status"] != "ok":
            return "%s needs %.0f GiB" % (x["status"].upper(), x["peak_memory_gib"])
        exposed = " (%.0f ms exposed CP)" % x["exposed_cp_ms"] if x["exposed_cp_ms"] >= 0.5 else ""
        return "%.0f ms%s" % (x["iteration_ms"], exposed)

    parts = ["CP 1 %s" % split(1, 8, "400Gbps")]
    for rate in ("400Gbps", "100Gbps", "25Gbps"):
        label = rate.replace("Gbps", " Gb/s")
        parts.append("%s: %s" % (label, ", ".join("CP %d %s" % (cp, split(cp, 8 // cp, rate)) for cp in (2, 4, 8))))
    figs["long_context"] = "Llama-3 8B at 64k tokens on 64 H100s, TP 8 × CP × DP: " + "; ".join(parts)
    times["long_context"] = "< 1 s" if wall < 1 else seconds(wall)


def cc_comparison(mv, tmp, figs, times):
    _, wall, rows = run(mv, "examples/studies/cc_comparison.yaml", os.path.join(tmp, "cc"), "--quiet")
    r = by_name(rows)
    thousands = lambda n: "%.1f M" % (n / 1e6) if n >= 1e6 else "%d k" % round(n / 1e3) if n >= 1e4 else "%d" % n
    figs["cc_comparison"] = (
        "DCQCN, HPCC and DCTCP for a halving-doubling all-reduce across a 4:1 oversubscribed spine-leaf: iteration "
        "%.0f ms with DCTCP (%s ECN marks), %.0f ms with DCQCN (%s CNPs), %.0f ms with HPCC (%s marks, η = 0.95 "
        "leaves headroom)"
        % (r["dctcp"]["iteration_ms"], thousands(r["dctcp"]["ecn_marks"]), r["dcqcn"]["iteration_ms"],
           thousands(r["dcqcn"]["cnps"]), r["hpcc"]["iteration_ms"], thousands(r["hpcc"]["ecn_marks"])))
    times["cc_comparison"] = seconds(wall)


def collective_tuning(mv, tmp, figs, times):
    _, wall, rows = run(mv, "examples/studies/collective_tuning.yaml", os.path.join(tmp, "collectives"), "--quiet")
    r = by_name(rows)
    algorithms = [("ring", "ring"), ("hierarchical", "hierarchical"), ("halving_doubling", "halving-doubling"),
                  ("tree", "tree")]
    parts = ["%s %.1f → %.1f ms" % (label, r[a + "-ecmp"]["iteration_ms"], r[a + "-spray"]["iteration_ms"])
             for a, label in algorithms]
    figs["collective_tuning"] = (
        "ring, double binary tree, halving-doubling and hierarchical all-reduce over 8 servers on a 1:1 spine-leaf "
        "(DCQCN), iteration with ECMP → with packet spraying: %s; ECMP's hash collisions on the spine uplinks cost "
        "the ring %d ECN marks, spraying %d" % (", ".join(parts), r["ring-ecmp"]["ecn_marks"],
                                               r["ring-spray"]["ecn_marks"]))
    times["collective_tuning"] = seconds(wall)


QUICK = [quickstart, topology_search, parallelism_sizes, zero_stages, long_context, cc_comparison]
SLOW = [collective_tuning]
BLOCK = re.compile(r"<!-- (fig|time):([\w-]+) -->(.*?)<!-- /\1 -->", re.S)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--multiverse", default=os.path.join(ROOT, "build/release/experiments/multiverse"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args()
    if not os.access(args.multiverse, os.X_OK):
        sys.exit("figures: no multiverse binary at %s (build it, or give --multiverse)" % args.multiverse)
    figs, times = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for study in QUICK + (SLOW if args.all else []):
            study(os.path.abspath(args.multiverse), tmp, figs, times)
    with open(README, encoding="utf-8") as f:
        text = f.read()
    stale = []

    def replace(m):
        kind, name, old = m.group(1), m.group(2), m.group(3)
        new = (figs if kind == "fig" else times).get(name)
        if new is None:
            return m.group(0)  # a slow study not run this time
        if kind == "fig" and new != old:
            stale.append((name, old, new))
        return "<!-- %s:%s -->%s<!-- /%s -->" % (kind, name, new, kind)

    updated = BLOCK.sub(replace, text)
    missing = sorted(set(figs) - {m.group(2) for m in BLOCK.finditer(text) if m.group(1) == "fig"})
    if missing:
        sys.exit("figures: README.md has no block for " + ", ".join(missing))
    if args.check:
        for name, old, new in stale:
            print("figures: README.md's '%s' is stale:" % name)
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "README.md", "run"))
            print()
        if stale:
            print("figures: run scripts/figures.py to rewrite them")
            return 1
        print("figures: %d README figures match their runs" % len(figs))
        return 0
    with open(README, "w", encoding="utf-8") as f:
        f.write(updated)
    print("figures: %d figures written (%d changed), wall times: %s"
          % (len(figs), len(stale), ", ".join("%s %s" % kv for kv in sorted(times.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
