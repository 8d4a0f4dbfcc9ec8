"""Compiled-transform throughput against naive string code doing the same work.

Run: ``.venv/bin/python benchmarks/bench_transform.py [--subjects N] [--repeats R]``. Prints, per case, the
median subjects/s of R repeats for the compiled ``Transform.apply`` and for a baseline that re-parses
the destination template for every subject (what code without a compile step does), and their ratio.
Target (issue #3): >= 400k subjects/s single-core for the first case.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nats_conformance.reference import compile_transform
from nats_conformance.reference.partition import fnv1a32

CASES = {
    "wildcard+partition": ("foo.*.*", "bar.{{wildcard(2)}}.{{partition(10,1,2)}}"),
    "every function": (
        "foo.*.*",
        "bar.$1.{{wildcard(2)}}.{{partition(10,1,2)}}.{{partition(7)}}.{{split(1,-)}}"
        ".{{splitFromLeft(1,2)}}.{{splitFromRight(2,2)}}.{{sliceFromLeft(1,3)}}.{{sliceFromRight(2,3)}}"
        ".{{random(5)}}.>",
    ),
}
_FUNCTION = re.compile(r"\{\{\s*(\w+)\s*\((.*)\)\s*\}\}")


def naive_apply(source: str, destination: str, subject: str, rng: random.Random) -> str:
    """Baseline: parse the template and locate wildcards anew for every subject, then build the output."""
    stoks = source.split(".")
    tokens = subject.split(".")
    wildcards = [tokens[i] for i, t in enumerate(stoks) if t == "*"]
    out: list[str] = []
    for token in destination.split("."):
        if token == ">":
            out.extend(tokens[len(stoks) - 1 :])
            continue
        if token.startswith("$"):
            out.append(wildcards[int(token[1:]) - 1])
            continue
        match = _FUNCTION.fullmatch(token)
        if match is None:
            out.append(token)
            continue
        name = match.group(1).lower()
        args = [a.strip() for a in match.group(2).split(",")]
        if name == "wildcard":
            out.append(wildcards[int(args[0]) - 1])
        elif name == "partition":
            key = "".join(wildcards[int(a) - 1] for a in args[1:]) if len(args) > 1 else subject
            out.append(str(fnv1a32(key.encode()) % int(args[0])))
        elif name == "random":
            out.append(str(rng.randrange(int(args[0]))))
        else:
            value = wildcards[int(args[0]) - 1]
            n = int(args[1]) if name != "split" else 0
            if name == "split":
                pieces, text = value.split(args[1]), ""
                for j, piece in enumerate(pieces):  # the server's joining rule, written plainly
                    text += piece
                    if j < len(pieces) - 1 and pieces[j + 1] and (j or piece):
                        text += "."
                out.append(text)
            elif name == "splitfromleft":
                out.append(f"{value[:n]}.{value[n:]}" if 0 < n < len(value) else value)
            elif name == "splitfromright":
                out.append(f"{value[:-n]}.{value[-n:]}" if 0 < n < len(value) else value)
            elif name == "slicefromleft":
                out.append(".".join(value[i : i + n] for i in range(0, len(value), n)))
            else:
                first = len(value) % n or n
                out.append(
                    ".".join([value[:first]] + [value[i : i + n] for i in range(first, len(value), n)])
                )
    return ".".join(out)


def make_subjects(source: str, count: int, rng: random.Random) -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
    subjects = []
    for _ in range(count):
        toks = [
            "".join(rng.choices(alphabet, k=rng.randint(4, 12))) if t == "*" else t
            for t in source.replace(">", "*").split(".")
        ]
        if source.endswith(">"):
            toks.append("tail")
        subjects.append(".".join(toks))
    return subjects


def throughput(run: Callable[[list[str]], object], subjects: list[str], repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(subjects)
        rates.append(len(subjects) / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(1)
    print(f"{'case':<20} {'compiled/s':>12} {'naive/s':>12} {'ratio':>7}   ({args.repeats} repeats, median)")
    for name, (source, destination) in CASES.items():
        src = source if not destination.endswith(">") else source + ".>"
        transform = compile_transform(src, destination)
        subjects = make_subjects(src, args.subjects, rng)
        for s in subjects[:2000]:  # the baseline must compute the same thing (any random draw)
            assert transform.accepts(s, naive_apply(src, destination, s, rng)), s
        apply = transform.apply

        def compiled(batch: list[str], apply: Callable[..., str] = apply) -> object:
            return [apply(s, rng) for s in batch]

        def naive(batch: list[str], src: str = src, destination: str = destination) -> object:
            return [naive_apply(src, destination, s, rng) for s in batch]

        fast = throughput(compiled, subjects, args.repeats)
        slow = throughput(naive, subjects, args.repeats)
        print(f"{name:<20} {fast:>12,.0f} {slow:>12,.0f} {fast / slow:>6.1f}x")


if __name__ == "__main__":
    main()
