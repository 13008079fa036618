#!/usr/bin/env python3
"""Checks that Package.swift says what the code does, target by target.

    contrib/check-package.py imports [ROOT]  # each target declares exactly the modules its sources import
    contrib/check-package.py limits [ROOT]   # no source file over 600 lines, no function over 100 (a report)
    contrib/check-package.py docs [ROOT]     # every type and test docs/ARCHITECTURE.md's "Where to change
                                             # what" table names exists

ROOT is the package's directory (this repository by default).

`imports` reads Package.swift itself (no `swift package dump-package`: that waits for the lock of a
build or test run in progress) and every Swift file under each target's directory, symbolic links
followed. A module counts as imported when some file of the target imports it (`import X`,
`public import X`, `@testable import X`, ...); the platform's own modules (Foundation, Glibc, Testing,
...) need no declaration. Exit status 1 lists what differs, in both directions.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Modules of the toolchain and the platform: imported without a package dependency.
SYSTEM = {
    "Foundation", "FoundationEssentials", "FoundationInternationalization", "FoundationNetworking",
    "FoundationXML", "Glibc", "Darwin", "Musl", "Dispatch", "Synchronization", "Testing", "XCTest",
    "_Concurrency", "Observation", "os", "RegexBuilder", "Android", "WinSDK",
}

TARGET_KINDS = ("target", "testTarget", "executableTarget", "systemLibrary")


def balanced(text, start):
    """The text from `start` (an opening parenthesis or bracket) to its match, inclusive."""
    pairs = {"(": ")", "[": "]"}
    stack = []
    i = start
    in_string = False
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "/" and text.startswith("//", i):
            i = text.index("\n", i)
            continue
        elif c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return text[start : i + 1]
        i += 1
    raise ValueError("unbalanced manifest at %d" % start)


def targets(manifest):
    """(kind, name, path, declared dependency names, defines) for every target of the manifest."""
    found = []
    for match in re.finditer(r"\.(%s)\(" % "|".join(TARGET_KINDS), manifest):
        body = balanced(manifest, match.end() - 1)
        name = re.search(r'name:\s*"([^"]+)"', body).group(1)
        path = re.search(r'path:\s*"([^"]+)"', body)
        declared = set()
        deps = re.search(r"dependencies:\s*\[", body)
        if deps:
            block = balanced(body, deps.end() - 1)
            # .product(name: "X", package: "p") and plain "X" (a target of this package).
            for product in re.finditer(r'\.product\(\s*name:\s*"([^"]+)"', block):
                declared.add(product.group(1))
            without_products = re.sub(r"\.product\([^)]*\)", "", block)
            for plain in re.finditer(r'"([^"]+)"', without_products):
                declared.add(plain.group(1))
            for named in re.finditer(r'\.target\(\s*name:\s*"([^"]+)"', block):
                declared.add(named.group(1))
        defines = set(re.findall(r'\.define\("([^"]+)"\)', body))
        kind = match.group(1)
        default = ("Tests/" if kind == "testTarget" else "Sources/") + name
        found.append((kind, name, path.group(1) if path else default, declared, defines))
    return found


IMPORT = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:public\s+|internal\s+|package\s+|private\s+|fileprivate\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.M)


def swift_files(directory):
    for base, _, files in os.walk(directory, followlinks=True):
        for file in sorted(files):
            if file.endswith(".swift"):
                yield os.path.join(base, file)


def imports(directory, defines=()):
    """Modules the Swift files under `directory` import, leaving out text in multi-line strings and
    branches of `#if NAME` / `#if !NAME` that the target's `defines` switch off (other conditions, such
    as `canImport`, count both branches)."""
    found = set()
    for path in swift_files(directory):
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        in_string = False
        # Per open #if: whether its current branch is active (None: unknown, counted).
        branches = []
        for line in lines:
            stripped = line.strip()
            if stripped.count('"""') % 2 == 1:
                in_string = not in_string
                continue
            if in_string:
                continue
            condition = re.match(r"#if\s+(!?)([A-Za-z_][A-Za-z0-9_]*)\s*$", stripped)
            if condition:
                negated, name = condition.groups()
                branches.append((name in defines) != bool(negated))
                continue
            if stripped.startswith("#if"):
                branches.append(None)
                continue
            if stripped.startswith("#else") and branches:
                branches[-1] = None if branches[-1] is None else not branches[-1]
                continue
            if stripped.startswith("#endif") and branches:
                branches.pop()
                continue
            if any(branch is False for branch in branches):
                continue
            match = IMPORT.match(line)
            if match:
                found.add(match.group(1))
    return found


PROVIDED = {"NIOSSL": {"CNIOBoringSSL"}}


def check_imports():
    with open(os.path.join(ROOT, "Package.swift"), encoding="utf-8") as handle:
        manifest = handle.read()
    problems = []
    checked = 0
    for kind, name, path, declared, defines in targets(manifest):
        if kind == "systemLibrary":
            continue
        directory = os.path.join(ROOT, path)
        if not os.path.isdir(directory):
            problems.append("%s: its directory %s does not exist" % (name, path))
            continue
        used = imports(directory, defines) - SYSTEM - {name}
        # Modules a product brings that are not products of their own (FerryQUIC reaches BoringSSL's QUIC
        # interface through the CNIOBoringSSL module NIOSSL ships): importing one uses the product.
        for product, modules in PROVIDED.items():
            if product in declared and used & modules:
                used = (used - modules) | {product}
        missing = sorted(used - declared)
        unused = sorted(declared - used)
        checked += 1
        if missing:
            problems.append("%s imports what Package.swift does not declare: %s" % (name, ", ".join(missing)))
        if unused:
            problems.append("%s declares what none of its files imports: %s" % (name, ", ".join(unused)))
    for problem in problems:
        print(problem)
    print("checked %d targets: %s" % (checked, "%d differences" % len(problems) if problems else "Package.swift matches the imports"))
    return 1 if problems else 0


FUNCTION = re.compile(r"^(\s*)(?:@[\w()\":, .]+\s+)*(?:(?:public|internal|private|fileprivate|package|static|class|final|override|mutating|nonisolated|convenience|required|@MainActor|@inlinable|@discardableResult)\s+)*(?:func\s+[^\s(<]+|init[?!]?|deinit|(?:var|subscript)\s[^{=]*\{$)")


def has_body(lines, start):
    """Whether the declaration at `start` opens a body: a `{` before a blank line, a comment or another
    declaration (a `@_silgen_name` function has none)."""
    for k in range(start, min(start + 12, len(lines))):
        line = lines[k].split("//")[0]
        if "{" in line:
            return True
        if k > start and (not lines[k].strip() or lines[k].strip().startswith(("///", "@", "func ", "private ", "public "))):
            return False
    return False


def long_functions(path, limit):
    """(line, name, length) of each function in `path` longer than `limit` lines (by its braces)."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    found = []
    i = 0
    while i < len(lines):
        match = FUNCTION.match(lines[i])
        if not match or not has_body(lines, i):
            i += 1
            continue
        depth = 0
        started = False
        j = i
        while j < len(lines):
            # Strings first: a URL's "//" is not a comment.
            code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', lines[j]).split("//")[0]
            depth += code.count("{") - code.count("}")
            if "{" in code:
                started = True
            if started and depth <= 0:
                break
            j += 1
        length = j - i + 1
        if length > limit:
            found.append((i + 1, lines[i].strip()[:80], length))
        i = j + 1 if started else i + 1
    return found


def check_limits(file_limit=600, function_limit=100):
    over = []
    for top in ("Sources",):
        for path in swift_files(os.path.join(ROOT, top)):
            relative = os.path.relpath(path, ROOT)
            with open(path, encoding="utf-8") as handle:
                count = handle.read().count("\n")
            if count > file_limit:
                over.append("%s: %d lines (limit %d)" % (relative, count, file_limit))
            for line, name, length in long_functions(path, function_limit):
                over.append("%s:%d: %s is %d lines (limit %d)" % (relative, line, name, length, function_limit))
    for problem in over:
        print(problem)
    print("%d over the limits" % len(over))
    return 1 if over else 0


def check_docs():
    """Every `Name` in the "Where to change what" table is a type declared under Sources/, or (ending in
    Tests) a test file under Tests/."""
    with open(os.path.join(ROOT, "docs/ARCHITECTURE.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.find("## Where to change what")
    if start < 0:
        print("docs/ARCHITECTURE.md has no \"Where to change what\" section")
        return 1
    end = text.find("\n## ", start + 1)
    table = text[start : end if end > 0 else len(text)]
    names = sorted(set(re.findall(r"`([A-Z][A-Za-z0-9]+)(?:\.[A-Za-z]+)?`", table)))
    declared = set()
    for path in swift_files(os.path.join(ROOT, "Sources")):
        with open(path, encoding="utf-8") as handle:
            declared.update(re.findall(r"\b(?:struct|class|enum|protocol|actor|typealias)\s+([A-Za-z_][A-Za-z0-9_]*)", handle.read()))
    tests = {os.path.basename(path)[: -len(".swift")] for path in swift_files(os.path.join(ROOT, "Tests"))}
    missing = [name for name in names if name not in (tests if name.endswith("Tests") else declared)]
    for name in missing:
        print("docs/ARCHITECTURE.md names %s, which does not exist" % name)
    print("checked %d names in \"Where to change what\": %s" % (len(names), "%d missing" % len(missing) if missing else "all exist"))
    return 1 if missing else 0


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "imports"
    if len(sys.argv) > 2:
        ROOT = os.path.abspath(sys.argv[2])
    if what == "imports":
        sys.exit(check_imports())
    if what == "limits":
        sys.exit(check_limits())
    if what == "docs":
        sys.exit(check_docs())
    print(__doc__)
    sys.exit(2)
