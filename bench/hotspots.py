#!/usr/bin/env python3
"""Summarises CPU samples in async-profiler's folded ("collapsed") stack format as text.

Usage: hotspots.py STACKS.collapsed [--top N] [--alloc REQUESTS]

Each line of the input is "root;caller;...;leaf COUNT". Prints:
- where the samples were, by code group of each sample's leaf frame: Corral's own code, Pekko
  HTTP, Pekko streams, Pekko actors and dispatchers, the Prometheus client, logging, Scala, the
  JDK's NIO, other JDK code, the JVM itself (GC, JIT compiler, runtime: C++ frames), the kernel
  and native libraries;
- the top methods by self samples (the leaf);
- Corral's methods by total samples (anywhere on the stack, once per sample): where Corral's own
  share of a request goes.
With --alloc, the stacks are an allocation profile (event=alloc, dumped with "total": each line's
count is bytes, its leaf the allocated class): the same tables in bytes per request (REQUESTS:
how many were made while profiled), the allocating method standing for the leaf, plus the
allocated classes.
Python 3 standard library only.
"""
import argparse
import collections
import re
import sys

GROUPS = [
    ("corral", ("dev.corral.",)),
    ("pekko-http", ("org.apache.pekko.http.", "org.parboiled2.")),
    ("pekko-stream", ("org.apache.pekko.stream.",)),
    ("pekko-actor/dispatch", ("org.apache.pekko.actor.", "org.apache.pekko.dispatch.", "org.apache.pekko.util.",
                              "org.apache.pekko.io.", "org.apache.pekko.event.")),
    ("other pekko", ("org.apache.pekko.",)),
    ("prometheus", ("io.prometheus.",)),
    ("logging", ("ch.qos.logback.", "org.slf4j.")),
    ("scala", ("scala.",)),
    ("jdk nio/net", ("sun.nio.", "java.nio.", "sun.net.", "java.net.")),
    ("jdk other", ("java.", "jdk.", "sun.", "com.sun.")),
]

ANNOTATION = re.compile(r"_\[[a-z0-9]+\]$")


def clean(frame):
    return ANNOTATION.sub("", frame).replace("/", ".")


def group(name):
    for label, prefixes in GROUPS:
        if name.startswith(prefixes):
            return label
    if "::" in name or name.startswith(("Interpreter", "JVM_", "Unsafe_", "[")):
        return "jvm (gc, jit, runtime)"
    if "." not in name:
        return "kernel/native"
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stacks")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--alloc", type=int, metavar="REQUESTS",
                    help="an allocation profile in bytes, made while REQUESTS requests were served")
    args = ap.parse_args()
    classes = collections.Counter()
    selfs = collections.Counter()
    groups = collections.Counter()
    corral_total = collections.Counter()
    n = 0
    with open(args.stacks, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            c = int(count)
            frames = [clean(x) for x in stack.split(";")]
            n += c
            if args.alloc and len(frames) > 1:
                classes[frames[-1]] += c
                frames = frames[:-1]  # the allocating method stands for the allocated class
            selfs[frames[-1]] += c
            groups[group(frames[-1])] += c
            for name in set(frames):
                if name.startswith("dev.corral."):
                    corral_total[name] += c
    if n == 0:
        print("no samples in " + args.stacks, file=sys.stderr)
        return 1
    if args.alloc:
        per = max(args.alloc, 1)
        unit, cell = "bytes per request", lambda c: f"{c / per:.0f} ({100.0 * c / n:.1f}%)"
        print(f"{n / per:.0f} bytes allocated per request ({n} bytes, {args.alloc} requests)\n")
        kinds = ("allocating method", "allocating methods", "allocations")
    else:
        unit, cell = "share", lambda c: f"{100.0 * c / n:.1f}%"
        print(f"{n} CPU samples\n")
        kinds = ("leaf frame", "methods by self samples", "samples")
    print(f"| code group ({kinds[0]}) | {unit} |\n|---|---|")
    for label, c in groups.most_common():
        print(f"| {label} | {cell(c)} |")
    print(f"\n| top {args.top} {kinds[1]} | {unit} |\n|---|---|")
    for name, c in selfs.most_common(args.top):
        print(f"| `{name}` | {cell(c)} |")
    print(f"\n| Corral's methods by total {kinds[2]} (on the stack) | {unit} |\n|---|---|")
    for name, c in corral_total.most_common(args.top):
        print(f"| `{name}` | {cell(c)} |")
    if args.alloc:
        print(f"\n| top {args.top} allocated classes | {unit} |\n|---|---|")
        for name, c in classes.most_common(args.top):
            print(f"| `{name}` | {cell(c)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
