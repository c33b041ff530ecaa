"""Summarises a conformance run (scripts/conformance.sh): one row per test area (test file) with what
Kafka does there (the file's first docstring line: each test asserts Kafka's behaviour, so "passed"
means "behaves as Kafka"), and how many tests passed, failed, were skipped or deselected.

usage: conformance_table.py JUNIT_XML [DESELECTED_LIST] [REASON]
Prints the table and the failed tests; exits 1 if any test failed or errored, or none passed.
"""
import ast
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

E2E = Path(__file__).resolve().parent


def behaviour(area: str) -> str:
    try:
        doc = ast.get_docstring(ast.parse((E2E / f"{area}.py").read_text())) or ""
    except (OSError, SyntaxError):
        return ""
    first = " ".join(doc.split("\n\n")[0].split())
    return first if len(first) <= 90 else first[:87] + "..."


def area_of(classname: str) -> str:
    # junit classnames look like "tests.e2e.test_groups" or "test_groups.SomeClass"
    parts = classname.split(".")
    return next((p for p in parts if p.startswith("test_")), parts[-1])


def main() -> int:
    xml = Path(sys.argv[1])
    deselected_file = Path(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else None
    reason = sys.argv[3] if len(sys.argv) > 3 else "deselected"
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    failures: list[tuple[str, str]] = []
    try:
        root = ET.parse(xml).getroot()
    except (OSError, ET.ParseError) as e:
        # pytest died before writing its report (or wrote half of it): no result, not a traceback.
        print(f"no usable junit report at {xml}: {e}")
        return 1
    for case in root.iter("testcase"):
        area = area_of(case.get("classname", "?"))
        kinds = {child.tag for child in case}
        if "failure" in kinds or "error" in kinds:
            counts[area]["failed"] += 1
            node = next(c for c in case if c.tag in ("failure", "error"))
            msg = (node.get("message") or "").splitlines()
            failures.append((f"{area}::{case.get('name')}", msg[0][:150] if msg else ""))
        elif "skipped" in kinds:
            counts[area]["skipped"] += 1
        else:
            counts[area]["passed"] += 1
    if deselected_file and deselected_file.exists():
        for line in deselected_file.read_text().splitlines():
            if "::" in line:
                counts[area_of(line.split("::")[0].replace("/", ".").removesuffix(".py"))]["deselected"] += 1

    cols = ("passed", "failed", "skipped", "deselected")
    rows = [(a, behaviour(a), *[counts[a][c] for c in cols]) for a in sorted(counts)]
    total = ("total", "", *[sum(counts[a][c] for a in counts) for c in cols])
    head = ("area", "Kafka's behaviour (expected result)", *cols)
    widths = [max(len(str(r[i])) for r in [head, total, *rows]) for i in range(len(head))]

    def line(r):
        return " | ".join(str(v).ljust(w) if i < 2 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths)))

    print(line(head))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    print("-+-".join("-" * w for w in widths))
    print(line(total))
    if total[5]:
        print(f"\ndeselected: {total[5]} test(s) ({reason})")
    if failures:
        print("\nfailed (the broker did not behave as Kafka does):")
        for name, msg in failures:
            print(f"  {name}: {msg}")
    if not total[2] and not total[3]:
        print("\nnothing passed: no test ran against the broker")
        return 1
    return 1 if total[3] else 0


if __name__ == "__main__":
    sys.exit(main())
