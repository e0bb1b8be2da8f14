#!/usr/bin/env python3
"""The README's "ZooKeeper vs Redis vs etcd" table from one chaos test-all
folder (the lock services of --service): for each subject, its
pause-holder cells, unfenced (double writes per minute of workload) and
fenced (acquisitions per second).

usage: scripts/service-table.py RESULTS/test-all/<timestamp>
"""
import glob
import json
import os
import sys

SUBJECTS = [("zookeeper", "seed", "seed_pause-holder_fencing-off_compare", "seed_pause-holder_fencing-on"),
            ("redis", "redis-lock", "redis-lock_pause-holder_fencing-off", "redis-lock_pause-holder_fencing-on"),
            ("redis", "redlock", "redlock_pause-holder_fencing-off", "redlock_pause-holder_fencing-on"),
            ("etcd", "etcd-mutex", "etcd-mutex_pause-holder_fencing-off", "etcd-mutex_pause-holder_fencing-on")]


def run(folder, cell):
    """The cell's run: double writes, ok acquires, workload seconds, session timeout."""
    runs = sorted(glob.glob(os.path.join(folder, cell, "2*", "results.json")))
    if not runs:
        return None
    d = os.path.dirname(runs[-1])
    res = json.load(open(runs[-1]))
    status = json.load(open(os.path.join(d, "status.json")))
    test = json.load(open(os.path.join(d, "test.json")))
    dw = res["checkers"]["double-writer"]
    doubles = sum(dw.get("violation_counts", {}).values())
    acquires = res["checkers"]["stats"]["ops"]["acquire"]["ok"]
    secs = status["workload_ns"] / 1e9
    return doubles, acquires, secs, test["session_timeout"] / 1e9


def main():
    folder = sys.argv[1]
    print("| service | subject | session / TTL | double writes per minute, unfenced | acquisitions per second, unfenced | acquisitions per second, fenced |")
    print("| --- | --- | --- | --- | --- | --- |")
    for service, subject, off, on in SUBJECTS:
        u, f = run(folder, off), run(folder, on)
        if u is None:
            continue
        fenced = "-" if f is None else f"{f[1] / f[2]:.1f}"
        print(f"| {service} | {subject} | {u[3]:g} s | {u[0] * 60 / u[2]:.1f} ({u[0]} in {u[2]:.1f} s) | {u[1] / u[2]:.1f} | {fenced} |")


if __name__ == "__main__":
    main()
