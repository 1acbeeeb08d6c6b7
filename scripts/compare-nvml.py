#!/usr/bin/env python3
"""Compare gputriage's NVIDIA data with nvidia-smi, GPU by GPU (matched by PCI bus id).

Usage:
  compare-nvml.py GPUTRIAGE [--nvidia-smi PATH]
      runs `GPUTRIAGE snapshot --json` and `nvidia-smi -q -x` on this machine;
  compare-nvml.py --snapshot FILE --xml FILE
      compares saved outputs. FILE for --snapshot is the output of `gputriage snapshot --json`,
      or of `gputriage __probe nvidia` (the probe's section: {"data": {...}, ...});
  compare-nvml.py --self-test-xml FILE
      prints what it reads from an `nvidia-smi -q -x` file, as JSON, and exits.

Prints a table  field | gputriage | nvidia-smi | agree  and a last line "N of M fields agree";
exits 0 when every field agrees, 1 otherwise, 2 on a usage or input error.

Fields read from the hardware's current state (temperature, power draw, utilisation, memory
used, current clocks) change between the two calls; they are compared with a tolerance and
marked "~" in the table. A value both tools report as unknown (absent / "N/A") agrees.
Standard library only.
"""

import argparse
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

MIB = 1024 * 1024

# Strings nvidia-smi prints instead of a value.
UNKNOWN_TEXT = {"n/a", "[n/a]", "not supported", "[not supported]", "unknown", "", "none",
                "requested functionality has been deprecated", "[unknown error]"}


def normalize_bus_id(text):
    """'00000000:00:06.0' / '0000:00:06.0' -> '0000:00:06.0'; None when it is no bus id."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])\s*",
                     text)
    if not m:
        return None
    domain, bus, dev, fn = (int(g, 16) for g in m.groups())
    return "%04x:%02x:%02x.%x" % (domain, bus, dev, fn)


# ---------------------------------------------------------------------------------------------
# nvidia-smi -q -x

def _text(node, path):
    """Text of the element at `path` below `node`, stripped; None when absent or unknown."""
    if node is None:
        return None
    el = node.find(path)
    if el is None or el.text is None:
        return None
    value = " ".join(el.text.split())
    if value.lower() in UNKNOWN_TEXT:
        return None
    return value


def _first(node, *paths):
    for path in paths:
        value = _text(node, path)
        if value is not None:
            return value
    return None


def _number(text):
    """Leading number of '143771 MiB', '700.00 W', '16x', '40 C', '0 %'; None if none."""
    if text is None:
        return None
    m = re.match(r"\s*(-?\d+(?:\.\d+)?)", text)
    if not m:
        return None
    value = float(m.group(1))
    return int(value) if value.is_integer() and "." not in m.group(1) else value


def parse_smi_xml(text):
    """Parses `nvidia-smi -q -x` output. Tolerates leading '#' lines (a fixture's provenance)."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].lstrip().startswith("#"):
        lines.pop(0)
    root = ET.fromstring("".join(lines))
    result = {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "gpus": {},
    }
    for gpu in root.findall("gpu"):
        bus_id = normalize_bus_id(gpu.get("id")) or normalize_bus_id(_text(gpu, "pci/pci_bus_id"))
        link = "pci/pci_gpu_link_info/"
        fields = {
            "name": _text(gpu, "product_name"),
            "uuid": _text(gpu, "uuid"),
            "serial": _text(gpu, "serial"),
            "vbios_version": _text(gpu, "vbios_version"),
            "memory_total_mib": _number(_text(gpu, "fb_memory_usage/total")),
            "memory_used_mib": _number(_text(gpu, "fb_memory_usage/used")),
            "power_limit_w": _number(_first(gpu, "gpu_power_readings/current_power_limit",
                                            "power_readings/enforced_power_limit",
                                            "power_readings/power_limit")),
            "power_draw_w": _number(_first(gpu, "gpu_power_readings/average_power_draw",
                                           "gpu_power_readings/power_draw",
                                           "gpu_power_readings/instant_power_draw",
                                           "power_readings/power_draw")),
            "temperature_c": _number(_text(gpu, "temperature/gpu_temp")),
            "utilization_gpu_percent": _number(_text(gpu, "utilization/gpu_util")),
            "utilization_memory_percent": _number(_text(gpu, "utilization/memory_util")),
            "ecc_mode": _text(gpu, "ecc_mode/current_ecc"),
            "persistence_mode": _text(gpu, "persistence_mode"),
            "compute_mode": _text(gpu, "compute_mode"),
            "mig_mode": _text(gpu, "mig_mode/current_mig"),
            "max_graphics_mhz": _number(_text(gpu, "max_clocks/graphics_clock")),
            "max_sm_mhz": _number(_text(gpu, "max_clocks/sm_clock")),
            "max_memory_mhz": _number(_text(gpu, "max_clocks/mem_clock")),
            "graphics_mhz": _number(_text(gpu, "clocks/graphics_clock")),
            "sm_mhz": _number(_text(gpu, "clocks/sm_clock")),
            "memory_mhz": _number(_text(gpu, "clocks/mem_clock")),
            "pcie_max_gen": _number(_text(gpu, link + "pcie_gen/max_link_gen")),
            "pcie_max_width": _number(_text(gpu, link + "link_widths/max_link_width")),
            "retired_pages_single_bit": _number(_text(
                gpu, "retired_pages/multiple_single_bit_retirement/retired_count")),
            "retired_pages_double_bit": _number(_text(
                gpu, "retired_pages/double_bit_retirement/retired_count")),
            "retired_pages_pending": _first(gpu, "retired_pages/pending_retirement",
                                            "retired_pages/pending_blacklist"),
            "remapped_rows_correctable": _number(_text(gpu, "remapped_rows/remapped_row_corr")),
            "remapped_rows_uncorrectable": _number(_text(gpu, "remapped_rows/remapped_row_unc")),
            "remapped_rows_pending": _text(gpu, "remapped_rows/remapped_row_pending"),
            "remapped_rows_failure": _text(gpu, "remapped_rows/remapped_row_failure"),
        }
        result["gpus"][bus_id or gpu.get("id") or "?"] = fields
    return result


# ---------------------------------------------------------------------------------------------
# gputriage JSON

def _enabled(value):
    if value is None:
        return None
    return "Enabled" if value else "Disabled"


def _yes_no(value):
    if value is None:
        return None
    return "Yes" if value else "No"


def _get(obj, *keys):
    for key in keys:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


COMPUTE_MODES = {"default": "Default", "exclusive_thread": "Exclusive_Thread",
                 "prohibited": "Prohibited", "exclusive_process": "Exclusive_Process"}


def gputriage_fields(nv):
    """The per-GPU nvidia object of gputriage, in nvidia-smi's terms and units."""
    total = _get(nv, "memory_total_bytes")
    used = _get(nv, "memory_used_bytes")
    limit = _get(nv, "power_limit_mw")
    draw = _get(nv, "power_draw_mw")
    mode = _get(nv, "compute_mode")
    return {
        "name": _get(nv, "name"),
        "uuid": _get(nv, "uuid"),
        "serial": _get(nv, "serial"),
        "vbios_version": _get(nv, "vbios_version"),
        "memory_total_mib": None if total is None else total // MIB,
        "memory_used_mib": None if used is None else used // MIB,
        "power_limit_w": None if limit is None else limit / 1000.0,
        "power_draw_w": None if draw is None else draw / 1000.0,
        "temperature_c": _get(nv, "temperature_c"),
        "utilization_gpu_percent": _get(nv, "utilization", "gpu_percent"),
        "utilization_memory_percent": _get(nv, "utilization", "memory_percent"),
        "ecc_mode": _enabled(_get(nv, "ecc", "mode_current")),
        "persistence_mode": _enabled(_get(nv, "persistence_mode")),
        "compute_mode": None if mode is None else COMPUTE_MODES.get(mode, mode),
        "mig_mode": _enabled(_get(nv, "mig_mode", "current")),
        "max_graphics_mhz": _get(nv, "clocks", "max_graphics_mhz"),
        "max_sm_mhz": _get(nv, "clocks", "max_sm_mhz"),
        "max_memory_mhz": _get(nv, "clocks", "max_memory_mhz"),
        "graphics_mhz": _get(nv, "clocks", "graphics_mhz"),
        "sm_mhz": _get(nv, "clocks", "sm_mhz"),
        "memory_mhz": _get(nv, "clocks", "memory_mhz"),
        "pcie_max_gen": _get(nv, "pcie", "max_gen"),
        "pcie_max_width": _get(nv, "pcie", "max_width"),
        "retired_pages_single_bit": _get(nv, "retired_pages", "single_bit_ecc"),
        "retired_pages_double_bit": _get(nv, "retired_pages", "double_bit_ecc"),
        "retired_pages_pending": _yes_no(_get(nv, "retired_pages", "pending")),
        "remapped_rows_correctable": _get(nv, "remapped_rows", "correctable"),
        "remapped_rows_uncorrectable": _get(nv, "remapped_rows", "uncorrectable"),
        "remapped_rows_pending": _yes_no(_get(nv, "remapped_rows", "pending")),
        "remapped_rows_failure": _yes_no(_get(nv, "remapped_rows", "failure")),
    }


def parse_gputriage(doc):
    """Accepts a snapshot (gpus[].nvidia, software.nvidia) or the nvidia probe's section."""
    if isinstance(doc, dict) and isinstance(doc.get("data"), dict):
        doc = doc["data"]  # `gputriage __probe nvidia`
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    gpus = {}
    if "software" in doc:  # snapshot
        system = _get(doc, "software", "nvidia") or {}
        for gpu in doc.get("gpus") or []:
            if isinstance(gpu, dict) and gpu.get("vendor") == "nvidia":
                bus = normalize_bus_id(gpu.get("pci_address")) or gpu.get("pci_address")
                gpus[bus] = gputriage_fields(gpu.get("nvidia") or {})
    else:  # probe data
        system = doc
        for gpu in doc.get("gpus") or []:
            if isinstance(gpu, dict):
                bus = normalize_bus_id(gpu.get("pci_address")) or gpu.get("pci_address")
                gpus[bus] = gputriage_fields(gpu)
    return {
        "driver_version": system.get("driver_version"),
        "cuda_version": system.get("cuda_driver_version"),
        "gpus": gpus,
    }


# ---------------------------------------------------------------------------------------------
# comparison

# (field, tolerance): tolerance None = exact; a number = absolute; (abs, fraction) = the larger
# of both. Exact string fields compare case-insensitively where marked with "ci".
GPU_FIELDS = [
    ("name", None), ("uuid", None), ("serial", None), ("vbios_version", "ci"),
    ("memory_total_mib", None), ("power_limit_w", 0.01), ("ecc_mode", "ci"),
    ("persistence_mode", "ci"), ("compute_mode", "ci"), ("mig_mode", "ci"),
    ("max_graphics_mhz", None), ("max_sm_mhz", None), ("max_memory_mhz", None),
    ("pcie_max_gen", None), ("pcie_max_width", None),
    ("retired_pages_single_bit", None), ("retired_pages_double_bit", None),
    ("retired_pages_pending", "ci"),
    ("remapped_rows_correctable", None), ("remapped_rows_uncorrectable", None),
    ("remapped_rows_pending", "ci"), ("remapped_rows_failure", "ci"),
    # Current state: changes between the two calls.
    ("temperature_c", ("~", 5, 0.0)), ("power_draw_w", ("~", 50.0, 0.25)),
    ("utilization_gpu_percent", ("~", 25, 0.0)), ("utilization_memory_percent", ("~", 25, 0.0)),
    ("memory_used_mib", ("~", 512, 0.05)),
    ("memory_mhz", ("~", 300, 0.25)),
    # Current graphics/SM clocks jump between idle (345 MHz on the H200) and boost (1980 MHz)
    # within milliseconds, and nvidia-smi's own queries wake the GPU: shown, not compared.
    ("graphics_mhz", "info"), ("sm_mhz", "info"),
]


def agree(ours, theirs, rule):
    """(agrees, how) for one value pair under `rule`."""
    if ours is None and theirs is None:
        return True, "both unknown"
    if ours is None or theirs is None:
        return False, ""
    if rule is None:
        if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)):
            return ours == theirs, ""
        return str(ours) == str(theirs), ""
    if rule == "ci":
        return str(ours).lower() == str(theirs).lower(), ""
    if rule == "info":
        return None, "changes with load; not compared"
    try:
        a, b = float(ours), float(theirs)
    except (TypeError, ValueError):
        return False, ""
    if isinstance(rule, tuple):
        _, absolute, fraction = rule
        limit = max(absolute, fraction * max(abs(a), abs(b)))
        return abs(a - b) <= limit, "~%g" % limit
    return abs(a - b) <= rule, ""


def fmt_value(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return "%g" % value
    return str(value)


def compare(ours, theirs, out):
    rows = []
    for field, key in (("driver_version", "driver_version"), ("cuda_version", "cuda_version")):
        ok, how = agree(ours[key], theirs[key], None)
        rows.append((field, ours[key], theirs[key], ok, how))
    for bus in sorted(set(ours["gpus"]) | set(theirs["gpus"]), key=str):
        a = ours["gpus"].get(bus)
        b = theirs["gpus"].get(bus)
        if a is None or b is None:
            rows.append(("%s present" % bus, "yes" if a else "no", "yes" if b else "no",
                         False, ""))
            continue
        for field, rule in GPU_FIELDS:
            ok, how = agree(a.get(field), b.get(field), rule)
            label = "%s %s%s" % (bus, field, " ~" if isinstance(rule, tuple) else "")
            rows.append((label, a.get(field), b.get(field), ok, how))

    widths = [max(len(r[0]) for r in rows + [("field",)]),
              max(len(fmt_value(r[1])) for r in rows + [(None, "gputriage")]),
              max(len(fmt_value(r[2])) for r in rows + [(None, None, "nvidia-smi")])]
    line = "%-*s  %-*s  %-*s  %s"
    print(line % (widths[0], "field", widths[1], "gputriage", widths[2], "nvidia-smi", "agree"),
          file=out)
    for label, a, b, ok, how in rows:
        verdict = ("n/a" if ok is None else "yes" if ok else "NO") + (" (%s)" % how if how else "")
        print(line % (widths[0], label, widths[1], fmt_value(a), widths[2], fmt_value(b),
                      verdict), file=out)
    compared = [r for r in rows if r[3] is not None]
    agreed = sum(1 for r in compared if r[3])
    print("%d of %d fields agree (%d shown, not compared)" % (agreed, len(compared),
                                                             len(rows) - len(compared)), file=out)
    return agreed == len(compared) and rows


def run(argv, what):
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SystemExit("compare-nvml: cannot run %s (%s): %s" % (what, " ".join(argv), e))
    if done.returncode != 0 and not done.stdout:
        raise SystemExit("compare-nvml: %s exited %d: %s" % (
            " ".join(argv), done.returncode, done.stderr.decode(errors="replace").strip()))
    return done.stdout.decode(errors="replace")


def read_file(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise SystemExit("compare-nvml: %s" % e)


def main(args):
    parser = argparse.ArgumentParser(
        description="Compare gputriage's NVIDIA data with nvidia-smi -q -x.")
    parser.add_argument("gputriage", nargs="?", help="the gputriage binary (live mode)")
    parser.add_argument("--nvidia-smi", default="nvidia-smi", help="nvidia-smi to run")
    parser.add_argument("--snapshot", help="saved `gputriage snapshot --json` (or probe) output")
    parser.add_argument("--xml", help="saved `nvidia-smi -q -x` output")
    parser.add_argument("--self-test-xml", metavar="FILE",
                        help="print the values read from FILE as JSON and exit")
    opts = parser.parse_args(args)

    try:
        if opts.self_test_xml:
            print(json.dumps(parse_smi_xml(read_file(opts.self_test_xml)), indent=2,
                             sort_keys=True))
            return 0
        if opts.snapshot or opts.xml:
            if not (opts.snapshot and opts.xml):
                parser.error("--snapshot and --xml go together")
            snapshot_text, xml_text = read_file(opts.snapshot), read_file(opts.xml)
        elif opts.gputriage:
            snapshot_text = run([opts.gputriage, "snapshot", "--json"], "gputriage")
            xml_text = run([opts.nvidia_smi, "-q", "-x"], "nvidia-smi")
        else:
            parser.error("give the gputriage binary, or --snapshot and --xml")
        ours = parse_gputriage(json.loads(snapshot_text))
        theirs = parse_smi_xml(xml_text)
    except (ValueError, ET.ParseError) as e:
        print("compare-nvml: cannot read the input: %s" % e, file=sys.stderr)
        return 2
    return 0 if compare(ours, theirs, sys.stdout) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
