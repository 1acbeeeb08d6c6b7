#!/usr/bin/env python3
"""Checks deploy/ as its consumers read it (no cluster or systemd is started here):

- deploy/node-problem-detector/gputriage-doctor-monitor.json against node-problem-detector's
  custom plugin monitor (pkg/custompluginmonitor/types: pluginConfig, conditions, rules with
  type, condition, reason, path, args, timeout; a permanent rule's condition is declared), then
  the rule's command run as NPD would run it, with the built binary on the captured H200 tree:
  exit 0 (OK) or 1 (NonOK) and one line of output;
- deploy/gputriage-agent.service as systemd reads it: Type=notify, a watchdog, ExecStart runs
  `gputriage agent` with --listen and --events-file, and the agent accepts those options.

usage: check_deploy.py GPUTRIAGE_BINARY SOURCE_DIR
"""
import configparser
import json
import os
import subprocess
import sys


def main():
    binary, source = sys.argv[1], sys.argv[2]
    problems = []
    npd_path = os.path.join(source, "deploy", "node-problem-detector", "gputriage-doctor-monitor.json")
    with open(npd_path, encoding="utf-8") as f:
        npd = json.load(f)
    if npd.get("plugin") != "custom":
        problems.append("npd: plugin is not \"custom\"")
    config = npd.get("pluginConfig", {})
    for key in ("invoke_interval", "timeout", "max_output_length", "concurrency"):
        if key not in config:
            problems.append(f"npd: pluginConfig.{key} missing")
    conditions = {c.get("type") for c in npd.get("conditions", []) if {"type", "reason", "message"} <= set(c)}
    rules = npd.get("rules", [])
    if not rules:
        problems.append("npd: no rules")
    for rule in rules:
        for key in ("type", "reason", "path", "args", "timeout"):
            if key not in rule:
                problems.append(f"npd: rule {rule.get('reason')}: {key} missing")
        if rule.get("type") == "permanent" and rule.get("condition") not in conditions:
            problems.append(f"npd: rule {rule.get('reason')}: condition {rule.get('condition')} is not declared")
        if os.path.basename(rule.get("path", "")) != "gputriage":
            problems.append(f"npd: rule {rule.get('reason')}: runs {rule.get('path')}, not gputriage")
        args = list(rule.get("args", [])) + ["--root", os.path.join(source, "tests", "fixtures", "h200-root")]
        run = subprocess.run([binary] + args, capture_output=True, text=True, timeout=180)
        lines = run.stdout.splitlines()
        if run.returncode not in (0, 1) or len(lines) != 1:
            problems.append(f"npd: `gputriage {' '.join(args)}` exited {run.returncode} with {len(lines)} line(s): "
                            f"{run.stdout!r} {run.stderr!r}")

    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read(os.path.join(source, "deploy", "gputriage-agent.service"), encoding="utf-8")
    service = unit["Service"] if unit.has_section("Service") else {}
    if service.get("Type") != "notify":
        problems.append("unit: Type is not notify (the agent sends READY=1)")
    if not service.get("WatchdogSec"):
        problems.append("unit: no WatchdogSec (the agent sends WATCHDOG=1)")
    exec_start = service.get("ExecStart", "").split()
    if len(exec_start) < 2 or os.path.basename(exec_start[0]) != "gputriage" or exec_start[1] != "agent":
        problems.append(f"unit: ExecStart does not run `gputriage agent`: {exec_start}")
    else:
        flags = [a for a in exec_start[2:] if a.startswith("--")]
        help_text = subprocess.run([binary, "agent", "--help"], capture_output=True, text=True, timeout=60).stdout
        for flag in flags:
            if flag not in help_text:
                problems.append(f"unit: ExecStart passes {flag}, which `gputriage agent` does not take")
    if not unit.has_section("Install") or "WantedBy" not in unit["Install"]:
        problems.append("unit: no [Install] WantedBy")

    for p in problems:
        print("FAIL", p)
    print(f"deploy/: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
