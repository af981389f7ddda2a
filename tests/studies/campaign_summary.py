#!/usr/bin/env python3
"""What campaigns did, for the hunt log and the notes: executions, seeds, invalid variants by
family, seed-making share, and raw findings by configuration and kind, with the triage's bugs.

    tests/studies/campaign_summary.py OUT [OUT ...]

Reads OUT/clients/client-N.json, OUT/findings/*/finding.json, OUT/triage/bugs/bugs.json
and OUT/mcmc/client-N.csv; prints one block per campaign directory and a total.
"""
import collections
import csv
import glob
import json
import os
import sys


def summary(out):
    clients = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "clients", "client-*.json")))]
    findings = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "findings", "*", "finding.json")))]
    bugs_file = os.path.join(out, "triage", "bugs", "bugs.json")
    bugs = json.load(open(bugs_file)) if os.path.exists(bugs_file) else []
    invalid = collections.Counter()
    for client in clients:
        for family, count in client.get("invalid", {}).get("by_family", {}).items():
            invalid[family] += count
    proposals = collections.Counter()
    accepted_by_length = collections.defaultdict(list)
    for path in glob.glob(os.path.join(out, "mcmc", "client-*.csv")):
        for row in csv.DictReader(open(path)):
            proposals[row["family"]] += 1
            if row["accepted"] == "1":
                accepted_by_length[int(row["chain_length"])].append(float(row["distance"]))
    # Reports count the seeds made; the store keeps only those of live chains (older
    # reports lack the count: then the store is all there is).
    if clients and all("accepted" in c.get("seed_making", {}) for c in clients):
        seeds = sum(c["seed_making"]["accepted"] for c in clients)
    else:
        seeds = len(glob.glob(os.path.join(out, "seeds", "*", "seed.c")))
    wall = max((c.get("wall_seconds", 0) for c in clients), default=0)
    making = sum(c.get("seed_making", {}).get("seconds", 0) for c in clients)
    candidates = sum(c.get("seed_making", {}).get("candidates", 0) for c in clients)
    sanitizers = sum(c.get("seed_making", {}).get("sanitizer_seconds", 0) for c in clients)
    by_config = collections.Counter((f["configuration"], f["kind"]) for f in findings)
    return {
        "out": out,
        "executions": sum(c["executions"] for c in clients),
        "wall": wall,
        "cores": len(clients),
        "seeds": seeds,
        "proposals": proposals,
        "invalid": invalid,
        "making": making,
        "candidates": candidates,
        "sanitizers": sanitizers,
        "rss": [c.get("rss_bytes", 0) for c in clients],
        "repeated": sum(c.get("repeated_texts", 0) for c in clients),
        "reused": sum(c.get("reused_runs", 0) for c in clients),
        "findings": by_config,
        "bugs": bugs,
        "distance": accepted_by_length,
        "corpus_bytes": sum(os.path.getsize(p) for p in glob.glob(os.path.join(out, "corpus", "*"))
                            + glob.glob(os.path.join(out, "corpus", ".*"))),
        "accepted": sum(c.get("mcmc", {}).get("accepted", 0) for c in clients),
    }


def show(s):
    print(f"== {s['out']}: {s['executions']} executions in {s['wall'] / 60:.0f} min on {s['cores']} cores, "
          f"{s['seeds']} seeds accepted of {s['candidates']} candidates")
    share = 100 * s["making"] / max(s["wall"] * s["cores"], 1e-9)
    print(f"   seed making {s['making']:.0f} s ({share:.1f}% of the cores' time; sanitizers {s['sanitizers']:.0f} s), "
          f"{s['making'] * 1000 / max(s['candidates'], 1):.0f} ms per candidate")
    print("   proposals by family: " + ", ".join(f"{k} {v}" for k, v in sorted(s["proposals"].items())))
    print("   invalid by family: " + (", ".join(f"{k} {v}" for k, v in sorted(s["invalid"].items())) or "none"))
    print(f"   repeated texts not run {s['repeated']}, binaries reused {s['reused']}, client RSS at stop "
          + ", ".join(f"{r / 1e6:.0f} MB" for r in s["rss"]))
    print(f"   corpus {s['corpus_bytes']} bytes for {s['accepted']} accepted states "
          f"({s['corpus_bytes'] / max(s['accepted'], 1):.0f} bytes each)")
    buckets = [(1, 2), (2, 5), (5, 10), (10, 20), (20, 50), (50, 100), (100, 10**9)]
    parts = []
    for low, high in buckets:
        values = [d for length, ds in s["distance"].items() if low <= length < high for d in ds]
        if values:
            parts.append(f"{low}+: {sum(values) / len(values):.3f} ({len(values)})")
    print("   mean distance of accepted states by chain length: " + ", ".join(parts))
    print("   raw findings: " + (", ".join(f"{c} {k} {n}" for (c, k), n in sorted(s["findings"].items())) or "none"))
    for bug in s["bugs"]:
        print(f"   bug: {json.dumps(bug)[:300]}")


def main():
    total = collections.Counter()
    for out in sys.argv[1:]:
        s = summary(out)
        show(s)
        total["executions"] += s["executions"]
        total["seeds"] += s["seeds"]
        total["findings"] += sum(s["findings"].values())
        total["bugs"] += len(s["bugs"])
    if len(sys.argv) > 2:
        print(f"== total: {total['executions']} executions, {total['seeds']} seeds, "
              f"{total['findings']} raw findings, {total['bugs']} bugs")


if __name__ == "__main__":
    main()
