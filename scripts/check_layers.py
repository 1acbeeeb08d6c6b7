#!/usr/bin/env python3
"""Checks the module layering of gputriage against the table in docs/architecture.md.

Three things must agree, and this script fails (exit 1, one line per problem) where they do not:
  1. every `#include "module/..."` of a source under src/ (and of tests/integration, fuzz/, bench/)
     names a module its own module may use: itself or an allowed dependency in the table;
  2. every module's DEPS in CMakeLists.txt (gt_module ... DEPS gt_x ...) are allowed arrows too,
     and every arrow the includes use is declared there (so the per-module include roots of
     cmake/modules.cmake let the build see it);
  3. a header with a "// Private to src/<dir>" line is included only from src/<dir>, and no
     include climbs out with "..".

Usage: scripts/check-layers [--root DIR] [--graph]
  --graph  print the dependencies the includes actually use, one module per line, and exit.
"""
import argparse
import os
import re
import sys

TABLE_BEGIN = "<!-- layers:begin -->"
TABLE_END = "<!-- layers:end -->"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
PRIVATE = re.compile(r"^// Private to (src/[A-Za-z0-9_/]+)[:. ]")


def read_table(path):
    """{module: set(allowed deps)} and {module: directory} from the markdown table."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        sys.exit(f"check-layers: {path}: {e.strerror}")
    if TABLE_BEGIN not in text or TABLE_END not in text:
        sys.exit(f"check-layers: {path}: no table between {TABLE_BEGIN} and {TABLE_END}")
    body = text.split(TABLE_BEGIN, 1)[1].split(TABLE_END, 1)[0]
    allowed, dirs = {}, {}
    for n, line in enumerate(body.splitlines(), 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("Module", "") or set(cells[0]) <= set("-: "):
            continue
        module = cells[0].strip("`")
        directory = cells[1].strip("`")
        deps = {d.strip().strip("`") for d in cells[2].split(",") if d.strip() not in ("", "—", "-")}
        if module in allowed:
            sys.exit(f"check-layers: {path}: module {module} is listed twice")
        allowed[module], dirs[module] = deps, directory
    for module, deps in allowed.items():
        for d in deps:
            if d not in allowed:
                sys.exit(f"check-layers: {path}: {module} may use '{d}', which is not a module of the table")
    return allowed, dirs


def module_of(rel_dir, dirs):
    """The module whose directory is the longest prefix of rel_dir (a path under the root)."""
    best = None
    for module, d in dirs.items():
        if rel_dir == d or rel_dir.startswith(d + "/"):
            if best is None or len(d) > len(dirs[best]):
                best = module
    return best


def include_target(include, dirs):
    """The module a quoted include names ("core/x.h" -> core), or None for a local header."""
    if "/" not in include:
        return None
    return module_of("src/" + os.path.dirname(include), dirs)


def closure(allowed, module):
    seen, todo = set(), [module]
    while todo:
        for d in allowed[todo.pop()]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def cmake_deps(root, dirs):
    """{module: set(module deps)} from CMakeLists.txt: gt_module(NAME DIR DEPS ...) calls, and the
    target_link_libraries of the executables (EXECUTABLES). A module's name is its CMake name."""
    text = open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8").read()
    out = {}
    for m in re.finditer(r"gt_module\(\s*(\w+)\s+(\S+)\s+DEPS([^)]*)\)", text):
        name, directory, deps = m.group(1), m.group(2), m.group(3)
        if dirs.get(name) != directory:
            out["?" + name] = set()
            continue
        out[name] = {t[3:] for t in deps.split() if t.startswith("gt_") and t[3:] in dirs}
    for module, target in EXECUTABLES.items():
        m = re.search(r"target_link_libraries\(\s*" + re.escape(target) + r"\s+PRIVATE([^)]*)\)", text)
        if m:
            out[module] = {t[3:] for t in m.group(1).split() if t.startswith("gt_") and t[3:] in dirs}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--graph", action="store_true")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    allowed, dirs = read_table(os.path.join(root, "docs", "architecture.md"))
    for tree in ("fuzz", "bench"):
        FIXED_TREES[tree] = set(allowed) - set(EXECUTABLES)
    problems = []

    # Private headers, from their own marker line.
    private = {}
    for module, d in dirs.items():
        folder = os.path.join(root, d)
        if not os.path.isdir(folder):
            problems.append(f"docs/architecture.md: module {module}: {d} does not exist")
            continue
        for name in os.listdir(folder):
            if not name.endswith(".h"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                for line in f:
                    m = PRIVATE.match(line)
                    if m:
                        private[os.path.relpath(os.path.join(folder, name), os.path.join(root, "src"))] = m.group(1)
                        break

    used = {m: set() for m in allowed}
    scanned = 0
    # Which trees are checked, and as which module their files count.
    trees = [("src", None), ("tests/integration", "tests/integration"), ("fuzz", "fuzz"), ("bench", "bench")]
    for top, fixed in trees:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(dirpath, root)
            for name in sorted(files):
                if not name.endswith((".cc", ".h", ".cpp")):
                    continue
                rel = os.path.join(rel_dir, name)
                owner = fixed or module_of(rel_dir, dirs)
                if owner is None:
                    problems.append(f"{rel}: in no module of docs/architecture.md")
                    continue
                scanned += 1
                is_test = name.endswith("_test.cc")
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        if ".." in inc.split("/"):
                            problems.append(f"{rel}:{n}: #include \"{inc}\" climbs out of the include roots")
                            continue
                        target = include_target(inc, dirs)
                        if target is None:
                            continue
                        if inc in private and not rel_dir.startswith(private[inc]):
                            problems.append(f"{rel}:{n}: #include \"{inc}\": the header is private to {private[inc]}")
                        if target == owner:
                            continue
                        if owner in allowed:
                            # A module's tests link the module and may use what it reaches.
                            ok = target in (closure(allowed, owner) if is_test else allowed[owner])
                            if not is_test:
                                used[owner].add(target)
                        else:
                            ok = target in allowed.get(owner, set()) or target in FIXED_TREES.get(owner, set())
                        if not ok:
                            problems.append(f"{rel}:{n}: #include \"{inc}\": {owner} may not use {target} "
                                            f"(docs/architecture.md allows: {', '.join(sorted(allowed.get(owner, FIXED_TREES.get(owner, set())))) or 'nothing'})")

    if args.graph:
        for module in allowed:
            print(f"{module}: {', '.join(sorted(used[module])) or '-'}")
        return 0

    declared = cmake_deps(root, dirs)
    for module, deps in declared.items():
        if module.startswith("?"):
            problems.append(f"CMakeLists.txt: gt_module({module[1:]}): not a module of docs/architecture.md "
                            "(or its directory differs from the table's)")
            continue
        for d in sorted(deps - allowed[module]):
            problems.append(f"CMakeLists.txt: {module} links gt_{d}: {module} may not use {d} (docs/architecture.md)")
        for d in sorted(used[module] - deps - {module}):
            problems.append(f"CMakeLists.txt: {module} includes {d} but does not link gt_{d}")

    for p in problems:
        print(p)
    if problems:
        print(f"check-layers: {len(problems)} problem(s) in {scanned} files", file=sys.stderr)
        return 1
    print(f"check-layers: {scanned} files, {len(allowed)} modules: every include follows docs/architecture.md")
    return 0


# Trees outside src/ and what they may include: the integration tests drive the built binary and
# read its output with core and store; fuzz targets and benchmarks may exercise any library.
FIXED_TREES = {"tests/integration": {"core", "store"}, "fuzz": None, "bench": None}
# Modules built as executables rather than gt_module libraries: module -> CMake target.
EXECUTABLES = {"cli": "gputriage", "probe": "gputriage-probe"}

if __name__ == "__main__":
    sys.exit(main())
