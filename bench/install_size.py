#!/usr/bin/env python3
"""What a set of scripts/install-deps installs on a fresh Debian 12: the packages apt would add
beyond Debian's required/important base, and their Installed-Size summed.

  bench/install_size.py [--top N] SET...        e.g. bench/install_size.py --build --test

apt's closure is simulated from an empty package state (`apt-get -s` with an empty dpkg status,
--no-install-recommends as install-deps does), once for the base (the packages of priority
required or important) and once for the base with the set; the difference is what the set adds.
Nothing is installed; the package lists must be current (apt-get update)."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def base_packages():
    names = []
    with open("/var/lib/dpkg/status", encoding="utf-8", errors="replace") as f:
        for block in f.read().split("\n\n"):
            priority = re.search(r"^Priority: (\S+)", block, re.M)
            name = re.search(r"^Package: (\S+)", block, re.M)
            if priority and name and priority.group(1) in ("required", "important"):
                names.append(name.group(1))
    return names


def closure(packages):
    out = subprocess.run(["apt-get", "-s", "-o", "Dir::State::status=/dev/null", "install",
                          "--no-install-recommends"] + packages, capture_output=True, text=True)
    if out.returncode:
        sys.exit("install_size: apt-get -s failed:\n" + out.stdout[-2000:] + out.stderr)
    return dict(re.findall(r"^Inst (\S+) \((\S+)", out.stdout, re.M))


def installed_kib(name, version):
    show = subprocess.run(["apt-cache", "show", f"{name}={version}"], capture_output=True, text=True).stdout
    m = re.search(r"^Installed-Size: (\d+)", show, re.M)
    return int(m.group(1)) if m else 0


def set_packages(options):
    """The packages install-deps names for OPTIONS, as it computes them (--print-packages)."""
    out = subprocess.run([os.path.join(HERE, "..", "scripts", "install-deps"), "--print-packages"] + options,
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit("install_size: scripts/install-deps --print-packages failed: " + out.stderr)
    return out.stdout.split()


def main():
    args = sys.argv[1:]
    top = 10
    if args[:1] == ["--top"]:
        top, args = int(args[1]), args[2:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    packages = set_packages(args)
    base = base_packages()
    before = closure(base)
    after = closure(base + packages)
    added = {n: v for n, v in after.items() if n not in before}
    sizes = sorted(((installed_kib(n, v), n) for n, v in added.items()), reverse=True)
    total = sum(k for k, _ in sizes)
    print(f"install-deps {' '.join(args)}: {len(added)} packages, {total / 1024:,.0f} MiB "
          f"({total * 1024 / 1e9:.2f} GB) beyond the required/important base")
    for kib, name in sizes[:top]:
        print(f"  {kib / 1024:8.1f} MiB  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
