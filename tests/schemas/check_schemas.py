#!/usr/bin/env python3
"""Checks every --json output of gputriage and every crash-bundle file against docs/schemas.

Usage: check_schemas.py GPUTRIAGE [BUILD_DIR]

Runs the real binary on real inputs from the repository (the captured H200 tree, the knowledge
base's example logs, the Python and kernel-log fixtures, crash bundles written by `gputriage run`)
with GPUTRIAGE_HOME in a temporary directory, and validates each output against its schema twice:
as published (forward-compatible: members the schema does not list are allowed), then closed (every
object that lists its members gets additionalProperties/unevaluatedProperties false), so a member the
tool writes that the schema does not describe fails here. BUILD_DIR (optional) adds the build's test
programs and GPU code objects as inputs (tests/inspect, tests/libs, tests/gpu) when they were built.
Also checks that every schema is a valid draft 2020-12 schema and that every schema file is used.

Exit status: 0 when everything matched, 1 on a mismatch (each names the output, the schema and the
failing path), 77 when python3-jsonschema is not installed (ctest SKIP_RETURN_CODE).
"""

import concurrent.futures
import copy
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
SCHEMA_DIR = os.path.join(SOURCE, "docs", "schemas")

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError as e:  # jsonschema missing, or older than 4.0 (no draft 2020-12)
    print(f"SKIP: python3-jsonschema (4.0 or newer, for draft 2020-12) is not available: {e}. "
          "Install it: apt-get install python3-jsonschema")
    sys.exit(SKIP)


# ---------------------------------------------------------------------------- schemas

def load_schemas():
    schemas = {}
    for path in sorted(glob.glob(os.path.join(SCHEMA_DIR, "*.schema.json"))):
        with open(path, encoding="utf-8") as f:
            schemas[os.path.basename(path)] = json.load(f)
    return schemas


def walk(node, pointer, visit):
    """Calls visit(node, pointer) on every schema object under `node` (JSON pointer `pointer`)."""
    if isinstance(node, dict):
        visit(node, pointer)
        for key, value in node.items():
            if key in ("enum", "const", "required", "dependentRequired", "description", "title"):
                continue
            walk(value, pointer + "/" + key.replace("~", "~0").replace("/", "~1"), visit)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            walk(value, f"{pointer}/{i}", visit)


def ref_target(file, ref):
    """'#/$defs/x' in FILE -> 'FILE#/$defs/x'; 'other.schema.json' -> 'other.schema.json#'."""
    doc, _, fragment = ref.partition("#")
    return f"{doc or file}#{fragment}"


def referenced_files(schemas):
    """file -> the schema files its $refs name."""
    out = {}
    for name, schema in schemas.items():
        refs = set()

        def visit(node, pointer):
            if isinstance(node.get("$ref"), str):
                refs.add(ref_target(name, node["$ref"]).partition("#")[0])
        walk(schema, "", visit)
        out[name] = refs
    return out


def closed_schemas(schemas):
    """The schemas with every object that lists its members closed: additionalProperties false, or
    unevaluatedProperties false where members also come from $ref/allOf/if/oneOf/anyOf. A definition
    that another object extends (it is the $ref or an allOf member next to more properties) stays
    open: the extending object's unevaluatedProperties covers its members, and a plain $ref to it
    elsewhere gets unevaluatedProperties false."""
    bases, extending = set(), set()
    for name, schema in schemas.items():
        def find_bases(node, pointer):
            if "properties" not in node:
                return
            refs = [node.get("$ref")]
            for i, member in enumerate(node.get("allOf", [])):
                if isinstance(member, dict):
                    refs.append(member.get("$ref"))
                    extending.add(f"{name}#{pointer}/allOf/{i}")
            for ref in refs:
                if isinstance(ref, str):
                    bases.add(ref_target(name, ref))
        walk(schema, "", find_bases)
    out = {}
    for name, schema in schemas.items():
        schema = copy.deepcopy(schema)

        def close(node, pointer):
            if "unevaluatedProperties" in node or "additionalProperties" in node:
                return
            if (isinstance(node.get("$ref"), str) and "properties" not in node
                    and ref_target(name, node["$ref"]) in bases and f"{name}#{pointer}" not in extending):
                node["unevaluatedProperties"] = False
                return
            types = node.get("type")
            is_object = types == "object" or (isinstance(types, list) and "object" in types)
            if "properties" not in node or not is_object:
                return
            if "additionalProperties" in node or "unevaluatedProperties" in node:
                return
            if f"{name}#{pointer}" in bases:
                return
            if any(k in node for k in ("$ref", "allOf", "anyOf", "oneOf", "if")):
                node["unevaluatedProperties"] = False
            else:
                node["additionalProperties"] = False
        walk(schema, "", close)
        out[name] = schema
    return out


def make_validator(root_name, schemas):
    """A validator for schemas[root_name] that resolves the relative $refs between the files."""
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": root_name}
    try:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
        registry = Registry().with_resources(
            (name, Resource(contents=schema, specification=DRAFT202012)) for name, schema in schemas.items())
        return Draft202012Validator(root, registry=registry)
    except ImportError:  # jsonschema before 4.18 (Debian 12 has 4.10): RefResolver with a store
        resolver = jsonschema.RefResolver(base_uri="", referrer=root, store=dict(schemas))
        return Draft202012Validator(root, resolver=resolver)


def json_path(path):
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else "." + str(part)
    return out


# ---------------------------------------------------------------------------- the checks

class Checker:
    def __init__(self, binary, build_dir, tmp):
        self.binary = binary
        self.build_dir = build_dir
        self.tmp = tmp
        self.schemas = load_schemas()
        self.closed = closed_schemas(self.schemas)
        self.validators = {}
        self.failures = []
        self.validated = {}  # schema file -> how many outputs
        self.env = dict(os.environ)
        self.env.pop("GPUTRIAGE_ROOT", None)
        self.env["GPUTRIAGE_HOME"] = os.path.join(tmp, "home")
        self.env["NO_COLOR"] = "1"

    def fail(self, label, schema, message):
        self.failures.append(f"FAIL {label}\n  schema: docs/schemas/{schema}\n  {message}")
        print(self.failures[-1], flush=True)

    def validator(self, schema, closed):
        key = (schema, closed)
        if key not in self.validators:
            self.validators[key] = make_validator(schema, self.closed if closed else self.schemas)
        return self.validators[key]

    def validate(self, label, instance, schema):
        """Validates `instance` against docs/schemas/`schema`; returns True when it matched."""
        if schema not in self.schemas:
            self.fail(label, schema, "no such schema file")
            return False
        self.validated[schema] = self.validated.get(schema, 0) + 1
        for closed in (False, True):
            # The deepest first: an error inside a member also makes its parents' checks fail.
            errors = sorted(self.validator(schema, closed).iter_errors(instance),
                            key=lambda e: (-len(e.absolute_path), list(map(str, e.absolute_path))))
            if not errors:
                continue
            lines = []
            for e in errors[:5]:
                where = "/".join(str(p) for p in e.absolute_schema_path)
                value = json.dumps(e.instance, ensure_ascii=False)
                if len(value) > 160:
                    value = value[:157] + "..."
                lines.append(f"at {json_path(e.absolute_path)}: {e.message[:300]}\n"
                             f"    (schema path {where}; value {value})")
            if len(errors) > 5:
                lines.append(f"... and {len(errors) - 5} more")
            what = ("does not match the schema" if not closed else
                    "has members the schema does not describe (closed check: add them to the schema)")
            self.fail(label, schema, f"the output {what}:\n  " + "\n  ".join(lines))
            return False
        return True

    def run(self, args, label=None, expect=None, timeout=300, env=None):
        """Runs gputriage ARGS; returns (rc, stdout, stderr). `expect`: the exit codes allowed;
        `env`: variables to add for this command."""
        label = label or "gputriage " + " ".join(args)
        try:
            p = subprocess.run([self.binary] + args, capture_output=True, env=dict(self.env, **(env or {})),
                               cwd=self.tmp, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail(label, "-", f"did not finish within {timeout} s")
            return None, b"", b""
        if expect is not None and p.returncode not in expect:
            self.fail(label, "-", f"exit status {p.returncode}, expected one of {sorted(expect)}; stderr:\n"
                      + p.stderr.decode(errors="replace")[-2000:])
        return p.returncode, p.stdout, p.stderr

    def json_output(self, args, schema, label=None, expect=(0, 1), json_errors=True, timeout=300, env=None,
                    ran=None):
        """Runs a --json command, validates stdout against `schema` and its stderr's error lines
        against error.schema.json; returns the parsed output (None when it was not JSON). `ran`:
        the command's (rc, stdout, stderr) when it already ran."""
        label = label or "gputriage " + " ".join(args)
        rc, out, err = ran or self.run(args, label, None if expect is None else set(expect), timeout=timeout, env=env)
        if rc is None:
            return None
        if json_errors:
            self.error_lines(label, rc, err, only_json=False)
        if args[0] == "run" and not out.startswith(b"{"):
            # run prints its JSON after the job's own stdout, on a line of its own.
            at = out.find(b"\n{\n")
            out = out[at + 1:] if at >= 0 else out
        try:
            parsed = json.loads(out.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            self.fail(label, schema, f"stdout is not one JSON document: {e}; stdout starts {out[:200]!r}")
            return None
        self.validate(label, parsed, schema)
        return parsed

    def error_lines(self, label, rc, err, only_json):
        """Every stderr line of a --json command is an error object (only_json=False: lines that are
        not JSON fail); an error with an exit code names the status the command ended with."""
        for line in err.decode("utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError:
                if not only_json:
                    self.fail(label + " (stderr)", "error.schema.json",
                              f"a stderr line under --json is not a JSON error object: {line[:300]!r}")
                continue
            if not isinstance(parsed, dict) or "error" not in parsed:
                continue
            if self.validate(label + " (stderr error line)", parsed, "error.schema.json"):
                code = parsed["error"]["exit_code"]
                if code is not None and code != rc:
                    self.fail(label + " (stderr error line)", "error.schema.json",
                              f"exit_code {code} in the error line, but the command exited {rc}")

    def file(self, label, path, schema):
        try:
            with open(path, encoding="utf-8") as f:
                parsed = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            self.fail(label, schema, f"{path}: cannot read it as JSON: {e}")
            return None
        self.validate(label, parsed, schema)
        return parsed

    # ------------------------------------------------------------------------ crash bundles

    BUNDLE_JSON = {
        "manifest.json": "manifest.schema.json",
        "process.json": "process.schema.json",
        "findings.json": "findings.schema.json",
        "snapshot.json": "snapshot.schema.json",
        "gpu_calls.json": "gpu-calls.schema.json",
        "escalation.json": "escalation.schema.json",
        "repeat.json": "repeat.schema.json",
        "libraries.json": "libs.schema.json",
        "collectives.json": "collectives.schema.json",
    }

    def bundle(self, label, path):
        names = sorted(os.listdir(path))
        for name in names:
            if not name.endswith(".json"):
                continue
            schema = self.BUNDLE_JSON.get(name)
            if schema is None:
                self.fail(f"{label}: {name}", "-", "a bundle file with no schema in docs/schemas")
                continue
            self.file(f"{label}: {name}", os.path.join(path, name), schema)
        manifest = os.path.join(path, "manifest.json")
        if os.path.exists(manifest):
            with open(manifest, encoding="utf-8") as f:
                files = json.load(f).get("files", {})
            for name, entry in files.items():
                present = isinstance(entry, dict) and entry.get("present")
                if present != os.path.exists(os.path.join(path, name)):
                    self.fail(f"{label}: manifest.json", "manifest.schema.json",
                              f"files[{name}].present is {present}, but the file is "
                              f"{'there' if not present else 'not there'}")
        return names

    def run_job(self, label, run_args, job, expect, env=None):
        """`gputriage run --json RUN_ARGS -- JOB`; validates the JSON and every bundle written."""
        out = self.json_output(["run", "--json"] + run_args + ["--"] + job, "run.schema.json", label,
                               expect=expect, json_errors=False, env=env)
        bundles = []
        for r in (out or {}).get("runs", []):
            if isinstance(r, dict) and isinstance(r.get("bundle"), str):
                bundles.append(r["bundle"])
                self.bundle(f"{label}: bundle {os.path.basename(r['bundle'])}", r["bundle"])
        return out, bundles


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    build_dir = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.dirname(os.path.dirname(binary))
    if not os.access(binary, os.X_OK):
        print(f"{binary}: not an executable")
        return 2
    try:
        from importlib.metadata import version
        jsonschema_version = version("jsonschema")
    except Exception:  # noqa: BLE001 - only for the log line
        jsonschema_version = "?"
    print(f"{binary}; jsonschema {jsonschema_version}; schemas in {SCHEMA_DIR}", flush=True)
    tmp = tempfile.mkdtemp(prefix="gt-schemas-")
    try:
        checker = Checker(binary, build_dir, tmp)
        check_everything(checker)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report(checker)


def check_everything(c):
    fixtures = os.path.join(SOURCE, "tests", "fixtures")
    h200 = os.path.join(fixtures, "h200-root")
    tmp = c.tmp
    os.makedirs(c.env["GPUTRIAGE_HOME"], exist_ok=True)

    # Every schema is a valid draft 2020-12 schema.
    for name, schema in c.schemas.items():
        try:
            Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as e:
            c.fail(f"docs/schemas/{name}", name, f"not a valid draft 2020-12 schema: {e.message} at "
                   f"{'/'.join(map(str, e.absolute_path))}")

    # doctor, on the captured H200 tree and on this machine, under each exit-code convention.
    for extra in ([], ["--exit-codes", "nagios"], ["--exit-codes", "npd"]):
        c.json_output(["doctor", "--json", "--root", h200] + extra, "doctor.schema.json", expect=(0, 1, 2))
    c.json_output(["doctor", "--json"], "doctor.schema.json", expect=(0, 1))

    # snapshot: taken, saved, listed, shown, compared.
    snap_h200 = c.json_output(["snapshot", "--json", "--root", h200], "snapshot.schema.json", expect=(0,))
    snap_live = c.json_output(["snapshot", "--json"], "snapshot.schema.json", expect=(0,))
    c.json_output(["snapshot", "--json", "--python", sys.executable], "snapshot.schema.json", expect=(0,))
    if snap_live is not None and not snap_live.get("gpus"):
        # doctor --validate runs validate level 1 on every GPU (30 s each): only where there is none.
        c.json_output(["doctor", "--json", "--validate"], "doctor.schema.json", expect=(0, 1))
    files = {}
    for name, snap in (("h200", snap_h200), ("live", snap_live)):
        if snap is not None:
            files[name] = os.path.join(tmp, f"snapshot-{name}.json")
            with open(files[name], "w", encoding="utf-8") as f:
                json.dump(snap, f)
    c.json_output(["snapshot", "--json", "--save", "--root", h200], "snapshot.schema.json", expect=(0,))
    c.json_output(["snapshot", "--json", "--save"], "snapshot.schema.json", expect=(0,))
    c.json_output(["snapshot", "list", "--json"], "snapshot-list.schema.json", expect=(0,))
    c.json_output(["snapshot", "show", "latest", "--json"], "snapshot.schema.json", expect=(0,))
    c.json_output(["snapshot", "show", "1", "--json"], "snapshot.schema.json", expect=(0,))
    for path in files.values():
        c.json_output(["snapshot", "show", path, "--json"], "snapshot.schema.json", expect=(0,))
    # Snapshots written elsewhere, read back through the typed model: the snapshot-diff fuzz seeds
    # (an MI300X, an H100, pairs, and odd shapes the lenient reading must survive), and the NVML
    # captures of the H200 placed as the collector places a probe's GPUs (collect/snapshot.cc
    # MergeVendorSection).
    seeds = os.path.join(SOURCE, "fuzz", "corpus", "snapshot_diff")
    seed_files = []
    for path in sorted(glob.glob(os.path.join(seeds, "*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                seed = json.load(f)
        except (OSError, json.JSONDecodeError):
            continue  # broken.json: a seed for the parser, not a snapshot
        parts = seed if isinstance(seed, list) else [seed]
        for i, part in enumerate(parts):
            if not isinstance(part, dict) or part.get("schema_version") != 1:
                continue  # future_version.json is refused, as it should be
            seed_files.append(os.path.join(tmp, f"seed-{os.path.basename(path)[:-5]}-{i}.json"))
            with open(seed_files[-1], "w", encoding="utf-8") as f:
                json.dump(part, f)
    for path in sorted(glob.glob(os.path.join(fixtures, "nvidia", "h200-live*", "probe-nvidia.json"))):
        with open(path, encoding="utf-8") as f:
            data = json.load(f).get("data", {})
        gpus = []
        for g in data.pop("gpus", []):
            g = dict(g)
            gpus.append({"vendor": "nvidia", "pci_address": g.pop("pci_address", ""), "source": "driver",
                         "name": g.get("name"), "nvidia": g})
        seed_files.append(os.path.join(tmp, f"nvml-{os.path.basename(os.path.dirname(path))}.json"))
        with open(seed_files[-1], "w", encoding="utf-8") as f:
            json.dump({"schema_version": 1, "root": None, "gpus": gpus, "software": {"nvidia": data},
                       "not_collected": [], "findings": []}, f)
    for path in seed_files:
        c.json_output(["snapshot", "show", path, "--json"], "snapshot.schema.json", expect=(0,))
    for a, b in zip(seed_files, seed_files[1:]):
        c.json_output(["snapshot", "diff", a, b, "--json"], "snapshot-diff.schema.json", expect=(0,))
    c.json_output(["snapshot", "diff", "1", "2", "--json"], "snapshot-diff.schema.json", expect=(0,))
    c.json_output(["snapshot", "diff", "2", "1", "--json"], "snapshot-diff.schema.json", expect=(0,))
    if "h200" in files and "live" in files:
        c.json_output(["snapshot", "diff", files["h200"], files["live"], "--json"], "snapshot-diff.schema.json",
                      expect=(0,))

    # run: crash bundles without and with a snapshot, a --repeat series, a passing job, --json-file,
    # an escalation (the job's stderr names an asynchronous GPU error), the flight recorder.
    bundles = []
    bdir = os.path.join(tmp, "bundles")
    segv = ["sh", "-c", "kill -SEGV $$"]
    bundles += c.run_job("run SIGSEGV --no-snapshot", ["--bundle-dir", bdir, "--no-snapshot"], segv, (139,))[1]
    bundles += c.run_job("run SIGSEGV with a snapshot", ["--bundle-dir", bdir], segv, (139,))[1]
    # A real memory fault: Python dereferences a null pointer (fault_location, faulthandler's stack).
    bundles += c.run_job("run python3 null dereference", ["--bundle-dir", bdir, "--no-snapshot"],
                         [sys.executable, "-c", "import ctypes; ctypes.string_at(0)"], (139,))[1]
    cores = []
    # --core writes core.zst (analyze reads it as it is); --core=raw the core as the kernel would.
    for b in c.run_job("run SIGSEGV --core", ["--bundle-dir", bdir, "--no-snapshot", "--core"], segv, (139,))[1]:
        bundles.append(b)
        if os.path.exists(os.path.join(b, "core.zst")):
            cores.append(os.path.join(b, "core.zst"))
    for b in c.run_job("run SIGSEGV --core=raw", ["--bundle-dir", bdir, "--no-snapshot", "--core=raw"], segv,
                       (139,))[1]:
        bundles.append(b)
        core = os.path.join(b, "core")
        if os.path.exists(core):
            cores.append(core)
            # A core cut short (a full disk): the report says what is missing (core_truncated).
            with open(core, "rb") as f:
                head = f.read(max(4096, os.path.getsize(core) * 2 // 3))
            cores.append(os.path.join(tmp, "truncated.core"))
            with open(cores[-1], "wb") as f:
                f.write(head)
    bundles += c.run_job("run --repeat 3", ["--bundle-dir", bdir, "--no-snapshot", "--repeat", "3"],
                         ["sh", "-c", "test -e flaky && kill -ABRT $$; touch flaky; exit 0"], (0, 134))[1]
    c.run_job("run, a job that passes", ["--bundle-dir", bdir, "--no-snapshot"], ["true"], (0,))
    bundles += c.run_job("run --escalate", ["--bundle-dir", bdir, "--no-snapshot", "--escalate"],
                         ["sh", "-c", "echo 'RuntimeError: CUDA error: an illegal memory access was encountered' "
                          ">&2; exit 1"], (1,))[1]
    bundles += c.run_job("run --timeout", ["--bundle-dir", bdir, "--no-snapshot", "--timeout", "1"],
                         ["sleep", "30"], (124,))[1]
    # Two ranks (tests/crashers/ranks.c): rank 1 dies of SIGSEGV, rank 0 waits until the timeout
    # (process.json's rank, local_rank, stopped_at_s; the report's failure.processes).
    ranks = os.path.join(c.build_dir, "tests", "crashers", "ranks")
    if os.path.exists(ranks):
        bundles += c.run_job("run two ranks, one fails first", ["--bundle-dir", bdir, "--no-snapshot", "--timeout", "2"],
                             [ranks, "hang"], (124,))[1]
    # PyTorch's flight-recorder dumps (real two-rank gloo dumps) left at the job's prefix before it
    # aborts as PyTorch's watchdog does: collectives.json.
    frdir = os.path.join(SOURCE, "tests", "fixtures", "pytorch", "flight-recorder")
    prefix = os.path.join(c.tmp, "nccl_trace_rank_")
    bundles += c.run_job("run, a job that leaves flight-recorder dumps", ["--bundle-dir", bdir, "--no-snapshot"],
                         ["sh", "-c", f"cp {frdir}/gloo-2ranks-mismatch-rank0.pkl {prefix}0 && "
                          f"cp {frdir}/gloo-2ranks-mismatch-rank1.pkl {prefix}1 && kill -ABRT $$"], (134,),
                         env={"TORCH_FR_DUMP_TEMP_FILE": prefix})[1]
    # capture: a running process (python3 waiting on stdin, two threads), captured and let go; and
    # the JSON error of a pid that is not there.
    job = subprocess.Popen([sys.executable, "-c", "import sys, threading; "
                            "threading.Thread(target=sys.stdin.read, daemon=True).start(); "
                            "print('ready', flush=True); sys.stdin.read()"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        job.stdout.readline()
        out = c.json_output(["capture", "--json", "--bundle-dir", bdir, "--no-snapshot", str(job.pid)],
                            "capture.schema.json", "capture --json", expect=(0,))
        if isinstance(out, dict) and isinstance(out.get("bundle"), str):
            bundles.append(out["bundle"])
            c.bundle("capture: bundle", out["bundle"])
    finally:
        job.kill()
        job.wait()
    rc, out, err = c.run(["capture", "--json", "--no-snapshot", str(job.pid)], "capture of a pid that is gone", {4})
    c.error_lines("capture of a pid that is gone", rc, err, only_json=True)
    json_file = os.path.join(tmp, "run.json")
    rc, _, err = c.run(["run", "--json-file", json_file, "--bundle-dir", bdir, "--no-snapshot", "--", "sh", "-c",
                        "echo 'CUDA error: out of memory' >&2; exit 3"], "run --json-file", {3})
    c.error_lines("run --json-file", rc, err, only_json=True)
    out = c.file("run --json-file", json_file, "run.schema.json")
    for r in (out or {}).get("runs", []):
        if isinstance(r, dict) and isinstance(r.get("bundle"), str):
            bundles.append(r["bundle"])
            c.bundle("run --json-file: bundle", r["bundle"])
    pickle = os.path.join(fixtures, "torch-snapshot", "h200-triton-oob-after-fault.pickle")
    if os.path.exists(pickle):
        # The job writes PyTorch's allocator snapshot (the H200 capture) as a real job does in its
        # exception handler; run reads it into gpu_calls.json's torch_memory.
        written = os.path.join(tmp, "allocator.pickle")
        bundles += c.run_job("run --torch-snapshot",
                             ["--bundle-dir", bdir, "--no-snapshot", "--torch-snapshot", written],
                             ["sh", "-c", f"cp '{pickle}' '{written}'; echo 'RuntimeError: CUDA error: an illegal "
                              "memory access was encountered' >&2; exit 1"], (1,))[1]
    recorder = os.path.join(os.path.dirname(os.path.dirname(c.binary)), "lib", "libgputriage-record.so")
    for job in ("hip_ignored_errors", "cuda_oob"):
        path = os.path.join(c.build_dir, "tests", "gpu", job)
        if os.access(path, os.X_OK) and os.path.exists(recorder):
            bundles += c.run_job(f"run --record {job}", ["--bundle-dir", bdir, "--no-snapshot", "--record"], [path],
                                 None)[1]
    rc, out, err = c.run(["run", "--json", "--no-such-option", "--", "true"], "run with an unknown option", {125})
    c.error_lines("run with an unknown option", rc, err, only_json=False)

    # analyze: every example log of the knowledge base, the fixtures, bundles, with a snapshot.
    kb_logs = sorted(glob.glob(os.path.join(SOURCE, "kb", "issues", "*.match.log")))
    if not kb_logs:
        c.fail("kb/issues/*.match.log", "-", "no example logs found")
    # The commands run four at a time; their outputs are validated one after the other (a
    # validator's $ref resolution is not thread-safe).
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        ran = list(pool.map(lambda log: c.run(["analyze", "--json", log], expect={0, 1}), kb_logs))
    for log, result in zip(kb_logs, ran):
        c.json_output(["analyze", "--json", log], "analyze.schema.json", ran=result)
    c.json_output(["analyze", "--json"] + kb_logs, "analyze.schema.json", "analyze --json (all kb example logs)")
    for log in sorted(glob.glob(os.path.join(fixtures, "python", "faulthandler-*.txt"))):
        c.json_output(["analyze", "--json", log], "analyze.schema.json")
    c.json_output(["analyze", "--json"] + sorted(glob.glob(os.path.join(fixtures, "kernel_log", "*.txt"))),
                  "analyze.schema.json", "analyze --json tests/fixtures/kernel_log/*.txt")
    for log in sorted(glob.glob(os.path.join(fixtures, "run", "*.txt"))):
        args = ["analyze", "--json", log]
        if "h200" in files:
            args += ["--snapshot", files["h200"]]
        c.json_output(args, "analyze.schema.json")
    if "h200" in files and "live" in files and kb_logs:
        c.json_output(["analyze", "--json", kb_logs[0], "--snapshot", files["live"], "--baseline", files["h200"]],
                      "analyze.schema.json", "analyze --json --snapshot --baseline")
    for b in bundles:
        c.json_output(["analyze", "--json", b], "analyze.schema.json", f"analyze --json bundle {os.path.basename(b)}")
        for log in kb_logs[:1]:
            c.json_output(["analyze", "--json", b, log], "analyze.schema.json",
                          f"analyze --json bundle {os.path.basename(b)} + a log")
    for core in cores:
        c.json_output(["analyze", "--json", core], "analyze.schema.json", f"analyze --json {os.path.basename(core)}")
    rc, _, err = c.run(["analyze", "--json", os.path.join(tmp, "no-such-file")], "analyze a missing file", {2})
    c.error_lines("analyze a missing file", rc, err, only_json=False)

    # The agent's events file (the fuzz seed line, as the agent writes one) and `events --json`
    # over it. The agent itself is checked by tests/integration/agent_test.cc (it needs root).
    seed_event = os.path.join(SOURCE, "fuzz", "corpus", "job_attribution", "event-line.json")
    c.file("events file line", seed_event, "event.schema.json")
    c.json_output(["events", "--json", "--events-file", seed_event], "events.schema.json", expect=(0,))

    # report --format json: bundles and logs.
    for b in bundles:
        c.json_output(["report", "--format", "json", b], "report.schema.json",
                      f"report --format json bundle {os.path.basename(b)}", expect=(0,), json_errors=False)
    if bundles and "h200" in files:  # --baseline: the changes from the H200's snapshot (or none collected)
        for b in bundles:
            c.json_output(["report", "--format", "json", b, "--baseline", files["h200"]], "report.schema.json",
                          f"report --format json --baseline bundle {os.path.basename(b)}", expect=(0,),
                          json_errors=False)
    for log in kb_logs[:3] + sorted(glob.glob(os.path.join(fixtures, "python", "faulthandler-*.txt"))):
        args = ["report", "--format", "json", log]
        c.json_output(args, "report.schema.json", expect=(0,), json_errors=False)
        if "h200" in files:
            c.json_output(args + ["--snapshot", files["h200"]], "report.schema.json", expect=(0,), json_errors=False)

    # inspect: the build's GPU code objects (when built), a host library from the repository, a
    # file that is not there; coverage against the H200 snapshot.
    # The committed GPU code (fuzz seeds built by nvcc and hipcc, tests/fixtures/inspect/SOURCE.md)
    # against a snapshot with an sm_90 and a gfx1100 GPU, as tests/fixtures/inspect records it.
    corpus = os.path.join(SOURCE, "fuzz", "corpus")
    seeds = [os.path.join(corpus, "fatbin", n) for n in ("sm_90.cubin", "fatbin-speed.fatbin",
                                                           "fatbin-speed-truncated.fatbin", "fatbin-none.fatbin",
                                                           "fatbin-size.fatbin")]
    seeds += [os.path.join(corpus, "amdgpu_note", n) for n in ("gfx1030-v4.co", "gfx1030-v4-truncated.co")]
    seeds = [p for p in seeds if os.path.exists(p)]
    two_gpus = os.path.join(tmp, "two-gpus.json")
    with open(two_gpus, "w", encoding="utf-8") as f:
        json.dump({"schema_version": 1,
                   "gpus": [{"pci_address": "0000:00:06.0", "nvidia": {"compute_capability": "9.0"}},
                            {"pci_address": "0000:03:00.0", "gfx_arch": "gfx1100"}]}, f)
    c.json_output(["inspect", "--json", "--snapshot", two_gpus] + seeds, "inspect.schema.json", expect=(0, 1, 2))
    c.json_output(["inspect", "--json", "--snapshot", two_gpus, "--kernel", "pressure"] + seeds,
                  "inspect.schema.json", expect=(0, 1, 2))
    inputs = [os.path.join(fixtures, "elf", "libtool-verdef.so.1")]
    for path in sorted(glob.glob(os.path.join(c.build_dir, "tests", "inspect", "**", "*"), recursive=True)):
        if os.path.isfile(path) and not path.endswith(".txt"):
            inputs.append(path)
    coverage = ["--snapshot", files["h200"]] if "h200" in files else ["--no-snapshot"]
    c.json_output(["inspect", "--json"] + coverage + inputs, "inspect.schema.json", expect=(0, 1, 2))
    c.json_output(["inspect", "--json", "--no-snapshot", "--kernel", "a"] + inputs, "inspect.schema.json",
                  expect=(0, 1, 2))
    c.json_output(["inspect", "--json", "--no-snapshot", os.path.join(tmp, "no-such-file")], "inspect.schema.json",
                  expect=(2,))

    # libs: a closure, a process, a trace, a fixture library; libs diff.
    c.json_output(["libs", "--json", c.binary], "libs.schema.json", expect=(0, 1))
    c.json_output(["libs", "--json", os.path.join(fixtures, "elf", "libtool-verdef.so.1")], "libs.schema.json",
                  expect=(0, 1))
    testlibs = os.path.join(c.build_dir, "tests", "libs")
    if os.path.exists(os.path.join(testlibs, "gtprog")):
        c.json_output(["libs", "--json", os.path.join(testlibs, "gtprog")], "libs.schema.json", expect=(0, 1, 2))
        # Two copies of libgtabi.so.1 on LD_LIBRARY_PATH: the second is shadowed.
        path = ":".join(os.path.join(testlibs, d) for d in ("v1", "v2", ""))
        c.json_output(["libs", "--json", os.path.join(testlibs, "gtprog")], "libs.schema.json",
                      "LD_LIBRARY_PATH=v1:v2 gputriage libs --json gtprog", expect=(0, 1, 2),
                      env={"LD_LIBRARY_PATH": path})
    # GPU runtime libraries, when installed: components and releases.
    for pattern in ("/usr/local/cuda/lib64/libcudart.so.[0-9]*", "/opt/rocm/lib/libamdhip64.so.[0-9]*",
                    "/usr/lib/x86_64-linux-gnu/libamdhip64.so.[0-9]*"):
        for path in sorted(glob.glob(pattern))[:1]:
            c.json_output(["libs", "--json", path], "libs.schema.json", expect=(0, 1))
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        c.json_output(["libs", "--json", "--pid", str(sleeper.pid)], "libs.schema.json", expect=(0, 1))
    finally:
        sleeper.send_signal(signal.SIGKILL)
        sleeper.wait()
    if os.path.exists(os.path.join(os.path.dirname(os.path.dirname(c.binary)), "lib", "libgputriage-audit.so")):
        c.json_output(["libs", "--json", "--trace", "--", "true"], "libs.schema.json", expect=(0, 1))
    c.json_output(["libs", "--json", os.path.join(tmp, "no-such-file")], "libs.schema.json", expect=(2,))
    rc, _, err = c.run(["libs", "--json"], "libs without an input", {2})
    c.error_lines("libs without an input", rc, err, only_json=False)
    v1, v2 = os.path.join(testlibs, "v1", "libgtabi.so.1"), os.path.join(testlibs, "v2", "libgtabi.so.1")
    if os.path.exists(v1) and os.path.exists(v2):
        c.json_output(["libs", "diff", v1, v2, "--json"], "libs-diff.schema.json", expect=(0, 1))
        c.json_output(["libs", "diff", v2, v1, "--json"], "libs-diff.schema.json", expect=(0, 1))
    verdef = os.path.join(fixtures, "elf", "libtool-verdef.so.1")
    c.json_output(["libs", "diff", verdef, verdef, "--json"], "libs-diff.schema.json", expect=(0,))

    # validate (no GPU here: every check skips; a GPU machine runs the two quick ones), and errors
    # in its options.
    c.json_output(["validate", "--json", "--ops", "launch_limits,reduce", "--dtypes", "fp32", "--repeat", "1"],
                  "validate.schema.json", expect=(0, 1), timeout=600)
    c.json_output(["validate", "--json", "--allow-no-gpu", "--ops", "no_such_check", "--dtypes", "fp99"],
                  "validate.schema.json", expect=(0, 1))

    # kb: list, search, lint (the built-in knowledge base, and a copy with a broken example).
    c.json_output(["kb", "list", "--json"], "kb-list.schema.json", expect=(0,))
    c.json_output(["kb", "search", "xid", "--json"], "kb-list.schema.json", expect=(0,))
    c.json_output(["kb", "lint", "--json"], "kb-lint.schema.json", expect=(0,))
    broken = os.path.join(tmp, "kb")
    shutil.copytree(os.path.join(SOURCE, "kb"), broken)
    if kb_logs:
        with open(os.path.join(broken, "issues", os.path.basename(kb_logs[0])), "w") as f:
            f.write("nothing to match here\n")
    c.json_output(["kb", "lint", "--json", "--dir", broken], "kb-lint.schema.json", expect=(1,))

    # Outputs recorded on other machines and committed: inspect --json (tests/fixtures/inspect,
    # checked byte for byte by src/inspect/run_test.cc) and the H200's gpu_calls.json of a Triton
    # out-of-bounds store (tests/fixtures/torch-snapshot).
    for path in sorted(glob.glob(os.path.join(fixtures, "inspect", "*.json"))):
        c.file(os.path.relpath(path, SOURCE), path, "inspect.schema.json")
    for path in sorted(glob.glob(os.path.join(fixtures, "torch-snapshot", "*gpu_calls.json"))):
        c.file(os.path.relpath(path, SOURCE), path, "gpu-calls.schema.json")

    # Errors under --json.
    for args, codes in ((["snapshot", "show", "99999", "--json"], {2}),
                        (["snapshot", "--json", "--root", os.path.join(tmp, "no-such-dir")], {2}),
                        (["doctor", "--json", "--root", os.path.join(tmp, "no-such-dir")], {2}),
                        (["doctor", "--json", "--exit-codes", "nagios", "--root", os.path.join(tmp, "none")], {3}),
                        (["doctor", "--json", "--no-such-option"], {2}),
                        (["kb", "lint", "--json", "--dir", os.path.join(tmp, "no-such-dir")], {1})):
        label = "error: gputriage " + " ".join(args)
        rc, _, err = c.run(args, label, codes)
        if rc is not None:
            c.error_lines(label, rc, err, only_json=False)
            if not err.strip():
                c.fail(label, "error.schema.json", "no error line on stderr")


def report(c):
    # No dead schemas: every schema file was validated against, or is referenced by one that was.
    refs = referenced_files(c.schemas)
    used = set(c.validated)
    pending = list(used)
    while pending:
        for target in refs.get(pending.pop(), ()):
            if target not in used:
                used.add(target)
                pending.append(target)
    for name in sorted(set(c.schemas) - used):
        c.fail(f"docs/schemas/{name}", name, "a dead schema: no output was checked against it (add the output that "
               "it describes to tests/schemas/check_schemas.py, or remove the schema)")
    print("\noutputs checked per schema:")
    for name in sorted(c.schemas):
        print(f"  {name:28} {c.validated.get(name, 0):4}" + ("" if name in c.validated else "  (through $ref)"))
    if c.failures:
        print(f"\n{len(c.failures)} mismatch(es); see FAIL above")
        return 1
    print(f"\nevery output matched its schema ({sum(c.validated.values())} outputs, {len(c.schemas)} schemas)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
