#!/usr/bin/env python3
"""Judges an Autobahn fuzzing server's reports for one client: every case the client ran must have a
verdict, and every verdict must be OK, NON-STRICT or INFORMATIONAL (closing: OK or INFORMATIONAL).

usage: autobahn_verdicts.py REPORT_DIR CASES [AGENT]

REPORT_DIR is where the server wrote its reports (index.json and one AGENT_case_*.json per case);
CASES is how many cases the server offered (its getCaseCount) and the client ran; AGENT defaults to
"ferry". Prints a table of verdicts per section, then every case that did not pass and every case that
has no verdict. Exit status 0 only when CASES cases have a verdict and all of them passed; 1 otherwise
(a missing report is a failure, never a pass); 2 for bad usage.
"""
import collections
import json
import os
import sys

PASSED = ("OK", "NON-STRICT", "INFORMATIONAL")
CLOSED = ("OK", "INFORMATIONAL", None)
SECTIONS = {
    1: "framing", 2: "pings and pongs", 3: "reserved bits", 4: "opcodes", 5: "fragmentation",
    6: "UTF-8", 7: "closing", 9: "limits and performance", 10: "auto-fragmentation",
    12: "permessage-deflate, server compresses", 13: "permessage-deflate, both compress",
}


def order(case_id):
    return [int(part) for part in case_id.split(".")]


def judge(directory, expected, agent="ferry"):
    """(lines to print, passed?)"""
    lines, missing, bad = [], [], []
    index_path = os.path.join(directory, "index.json")
    try:
        with open(index_path) as f:
            index = json.load(f)
    except (OSError, ValueError) as error:
        return [f"no verdicts: the server's index {index_path} could not be read ({error})",
                f"judged 0 of {expected} cases"], False
    listed = index.get(agent, {})
    verdicts = collections.defaultdict(collections.Counter)
    judged = 0
    for case_id in sorted(listed, key=order):
        path = os.path.join(directory, listed[case_id].get("reportfile", ""))
        try:
            with open(path) as f:
                case = json.load(f)
            behavior, closing = case["behavior"], case.get("behaviorClose")
        except (OSError, ValueError, KeyError) as error:
            missing.append(f"{case_id} (its report {os.path.basename(path)} could not be read: {error})")
            continue
        judged += 1
        verdicts[int(case_id.split(".")[0])][behavior] += 1
        if behavior not in PASSED or closing not in CLOSED:
            bad.append(f"{case_id} {behavior} {closing} {case.get('result', '')}".rstrip())
    lines.append("| section | verdicts |")
    lines.append("| --- | --- |")
    for section in sorted(verdicts):
        name = f"{section} {SECTIONS[section]}" if section in SECTIONS else str(section)
        lines.append(f"| {name} | " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts[section].items())) + " |")
    lines += [f"not passed: {case}" for case in bad]
    lines += [f"no verdict: {case}" for case in missing]
    if len(listed) < expected:
        # The index lists the cases the server judged, by id; one it never judged has no id to name.
        lines.append(f"no verdict: {expected - len(listed)} of the {expected} cases the client ran are not in "
                     f"the server's index (it lists {len(listed)})")
    elif len(listed) > expected:
        lines.append(f"the server's index lists {len(listed)} cases for {agent!r}, more than the {expected} run")
    lines.append(f"judged {judged} of {expected} cases")
    return lines, judged == expected == len(listed) and not bad


def main(argv):
    if len(argv) not in (3, 4) or not argv[2].isdigit():
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    lines, passed = judge(argv[1], int(argv[2]), argv[3] if len(argv) == 4 else "ferry")
    print("\n".join(lines))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
