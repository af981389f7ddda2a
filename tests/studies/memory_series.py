#!/usr/bin/env python3
"""Memory and disk of a running campaign over time, for #16's flat-memory criterion.

    tests/studies/memory_series.py OUT [--every SECONDS] [--until-gone]
    tests/studies/memory_series.py OUT --summary [--fit-from MINUTES]

Every SECONDS (default 60) it appends one row per client to OUT/memory.csv, read from the
client reports that the clients rewrite every minute (OUT/clients/client-N.json): resident
memory by kind, the malloc heap's bytes in use and free, the seed cache, the corpus entries and
the output directory's bytes. It stops when no report changed for 5 minutes (--until-gone) or
when killed. --summary prints, per client, the lowest RSS of each 10-minute window (a window's
minimum is what the client holds; single samples also catch a seed parse in flight) and the
ratio of the last window to the first one and to the one that starts at 10 minutes, and the
samples nearest 10 and 120 minutes (the issue's criterion) with their ratio. Which seeds
the chains stand on moves a client's RSS by megabytes (csmith seeds differ fourfold in size), so
it also fits, from 10 minutes on (--fit-from), RSS, heap in use and shared memory against time
and the seed cache's estimated bytes: the time coefficient is the growth an hour at equal cached
seeds (LLMP's pages of 1 MiB fill during the first half hour or so, then are reused).
"""
import csv
import glob
import json
import os
import sys
import time

FIELDS = ["seconds", "client", "executions", "corpus", "rss", "anonymous", "shared_memory", "file",
          "heap_in_use", "heap_free", "returned_by_trims", "seed_cache_seeds", "seed_cache_bytes", "out_bytes"]


def directory_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def sample(out, started):
    rows = []
    out_bytes = directory_bytes(out)
    for path in sorted(glob.glob(os.path.join(out, "clients", "client-*.json"))):
        try:
            report = json.load(open(path))
        except (OSError, ValueError):
            continue
        memory = report.get("memory", {})
        cache = report.get("seed_cache", [0, 0])
        rows.append({
            "seconds": round(time.time() - started),
            "client": os.path.basename(path)[len("client-"):-len(".json")],
            "executions": report["executions"],
            "corpus": report["corpus"],
            "rss": report.get("rss_bytes", 0),
            "anonymous": memory.get("anonymous_bytes", 0),
            "shared_memory": memory.get("shared_memory_bytes", 0),
            "file": memory.get("file_bytes", 0),
            "heap_in_use": memory.get("heap_in_use_bytes", 0),
            "heap_free": memory.get("heap_free_bytes", 0),
            "returned_by_trims": memory.get("returned_by_trims_bytes", 0),
            "seed_cache_seeds": cache[0],
            "seed_cache_bytes": cache[1],
            "out_bytes": out_bytes,
        })
    return rows


def record(out, every, until_gone):
    path = os.path.join(out, "memory.csv")
    new = not os.path.exists(path)
    started = time.time()
    last_change = time.time()
    last_seen = None
    with open(path, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        while True:
            rows = sample(out, started)
            seen = [(r["client"], r["executions"], r["rss"]) for r in rows]
            if seen != last_seen:
                last_seen, last_change = seen, time.time()
            elif until_gone and time.time() - last_change > 300:
                return
            writer.writerows(rows)
            handle.flush()
            time.sleep(every)


def solve3(m, v):
    """Solves the 3x3 system m x = v by Cramer's rule (None when singular)."""
    def det(a):
        return (a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
                - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
                + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]))
    d = det(m)
    if abs(d) < 1e-12:
        return None
    return [det([[v[r] if c == k else m[r][c] for c in range(3)] for r in range(3)]) / d for k in range(3)]


def fit(samples, field):
    """Least squares of `field` (MB) on hours and cached seeds (MB): (per hour, per seed MB)."""
    xs = [(1.0, int(r["seconds"]) / 3600, int(r["seed_cache_bytes"]) / 1e6) for r in samples]
    ys = [int(r[field]) / 1e6 for r in samples]
    normal = [[sum(x[i] * x[j] for x in xs) for j in range(3)] for i in range(3)]
    rhs = [sum(x[i] * y for x, y in zip(xs, ys)) for i in range(3)]
    solution = solve3(normal, rhs)
    return None if solution is None else (solution[1], solution[2])


def summary(out, fit_from):
    rows = list(csv.DictReader(open(os.path.join(out, "memory.csv"))))
    for client in sorted({r["client"] for r in rows}):
        windows = {}
        for r in rows:
            if r["client"] == client:
                window = int(r["seconds"]) // 600
                windows.setdefault(window, []).append(r)
        print(f"client {client}: lowest RSS per 10-minute window (MB; heap in use, heap free, seeds cached)")
        for window, samples in sorted(windows.items()):
            low = min(samples, key=lambda r: int(r["rss"]))
            print(f"  {window * 10:4d}-{window * 10 + 10:<4d} min  {int(low['rss']) / 1e6:6.1f}  "
                  f"(in use {int(low['heap_in_use']) / 1e6:.1f}, free {int(low['heap_free']) / 1e6:.1f}, "
                  f"shmem {int(low['shared_memory']) / 1e6:.1f}, {low['seed_cache_seeds']} seeds, "
                  f"corpus {low['corpus']}, out {int(low['out_bytes']) / 1e6:.0f} MB)")
        if len(windows) > 1:
            lowest = {w: min(int(r["rss"]) for r in samples) for w, samples in windows.items()}
            last = lowest[max(windows)]
            print(f"  last window / first window: {last / max(lowest[min(windows)], 1):.2f}")
            # The first window's lowest sample is the client before its first seed; from 10
            # minutes on it holds a full rotation of chains.
            if 1 in lowest and max(windows) > 1:
                print(f"  last window / 10-20 min window: {last / max(lowest[1], 1):.2f}")
        # #16's criterion itself: the samples nearest 10 and 120 minutes (or the last one).
        own = [r for r in rows if r["client"] == client]
        end = min(120 * 60, max(int(r["seconds"]) for r in own))
        early, late = (min(own, key=lambda r: abs(int(r["seconds"]) - at)) for at in (600, end))
        if late is not early:
            print(f"  samples nearest 10 and {end / 60:.0f} minutes: {int(early['rss']) / 1e6:.1f} MB at "
                  f"{early['seconds']} s, {int(late['rss']) / 1e6:.1f} MB at {late['seconds']} s "
                  f"({int(late['rss']) / max(int(early['rss']), 1):.2f})")
        warm = [r for r in rows if r["client"] == client and int(r["seconds"]) >= fit_from * 60]
        if len(warm) >= 10:
            fits = {field: fit(warm, field) for field in ("rss", "heap_in_use", "shared_memory")}
            if all(fits.values()):
                print(f"  fitted from {fit_from:g} minutes on, at equal cached seeds: "
                      + ", ".join(f"{field} {per_hour:+.2f} MB an hour" for field, (per_hour, _) in fits.items())
                      + f"; each MB of cached seeds is {fits['rss'][1]:.2f} MB of RSS")


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    out = args[0]
    if "--summary" in args:
        summary(out, float(args[args.index("--fit-from") + 1]) if "--fit-from" in args else 10.0)
        return
    every = float(args[args.index("--every") + 1]) if "--every" in args else 60.0
    record(out, every, "--until-gone" in args)


if __name__ == "__main__":
    main()
