#!/usr/bin/env python3
"""BENCHMARKS.md's summary table, made from BENCHMARKS.jsonl.

    build-aux/bench-summary.py [--record target/bench/window-latest.jsonl ...]

With --record, a run's figures (the JSON lines a bench wrote) are first
appended to BENCHMARKS.jsonl, which keeps every recorded run. Then the table
between BENCHMARKS.md's `<!-- summary -->` and `<!-- /summary -->` is made
anew: one line per figure that has a goal, from its last recorded run (what
was measured, the floor of the same run, the ratio, the goal), and whether
the goal is met: a goal is met when its last three recorded runs each met
it. The figures without a goal follow in a table of their own.
"""

import datetime
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
JSONL = ROOT / "BENCHMARKS.jsonl"
MD = ROOT / "BENCHMARKS.md"
BEGIN, END = "<!-- summary -->", "<!-- /summary -->"

# Commands of the figures recorded before lines named their command.
COMMANDS = {
    "core": "cargo bench --bench core",
    "window": "GSK_RENDERER=cairo xvfb-run -a cargo bench --bench window",
    "window-wayland": "build-aux/bench-wayland.sh",
}


def number(v, unit=""):
    if v is None:
        return "—"
    if v == int(v):
        text = f"{v:,.0f}"
    elif abs(v) >= 100:
        text = f"{v:,.0f}"
    elif abs(v) >= 10:
        text = f"{v:.1f}"
    else:
        text = f"{v:.2f}"
    return f"{text} {unit}".strip()


def met(line, goal):
    return line.get("ratio", line["value"]) <= goal + 1e-9


def main(argv):
    if argv[:1] == ["--record"]:
        with JSONL.open("a") as out:
            for path in argv[1:]:
                for line in pathlib.Path(path).read_text().splitlines():
                    if line.strip():
                        json.loads(line)  # only whole JSON lines go in
                        out.write(line.strip() + "\n")
    elif argv:
        print(__doc__, file=sys.stderr)
        return 2
    runs = {}
    for line in JSONL.read_text().splitlines():
        if line.strip():
            d = json.loads(line)
            runs.setdefault((d["bench"], d["figure"]), []).append(d)
    with_goal, without = [], []
    for (bench, figure), lines in runs.items():
        last = lines[-1]
        command = last.get("command") or COMMANDS.get(bench, bench)
        when = datetime.datetime.fromtimestamp(last["time"], datetime.timezone.utc).strftime("%Y-%m-%d")
        what = figure if bench in ("core", "window") else f"{figure} ({bench})"
        measured = f"{number(last['value'], last.get('unit', ''))} ({when}, {last.get('commit', '?')})"
        floor = number(last.get("floor"), last.get("unit", "")) if "floor" in last else "—"
        ratio = number(last.get("ratio")) if "ratio" in last else "—"
        if last.get("goal") is None:
            without.append(f"| {what} | {measured} | {floor} | {ratio} | `{command}` |")
            continue
        goal = f"≤ {number(last['goal'])}" + ("" if "ratio" in last else f" {last.get('unit', '')}")
        # Each run against today's goal (older lines may have had another).
        outcomes = [met(d, last["goal"]) for d in lines[-3:]]
        marks = "".join("✓" if o else "✗" for o in outcomes)
        # "?": every recorded run met it, but there are fewer than three.
        verdict = "✗" if not all(outcomes) else "✓" if len(outcomes) == 3 else "?"
        with_goal.append(f"| {what} | {measured} | {floor} | {ratio} | {goal} | {verdict} {marks} | `{command}` |")
    table = [
        BEGIN,
        "",
        "Each figure's last recorded run; ✓ when its last three recorded runs",
        "each met the goal, ? when fewer than three were recorded and all met it",
        "(the marks after it are those runs, oldest first).",
        "",
        "| what | measured (last run) | floor | ratio | goal | met | command |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *with_goal,
        "",
        "Figures kept without a goal (floors, and what explains the others):",
        "",
        "| what | measured (last run) | floor | ratio | command |",
        "| --- | --- | --- | --- | --- |",
        *without,
        "",
        END,
    ]
    text = MD.read_text()
    if BEGIN not in text or END not in text:
        print(f"{MD.name} has no {BEGIN} … {END}", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    MD.write_text(head + "\n".join(table) + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
