#!/usr/bin/env python3
"""Checks that every Swift target's imports of package modules are exactly its declared
dependencies (no undeclared import, no unused dependency). Run from the package root."""
import json, os, re, subprocess, sys

package = json.loads(subprocess.run(["swift", "package", "dump-package"], capture_output=True, text=True, check=True).stdout)
targets = {t["name"]: t for t in package["targets"]}
problems = []
for name, target in targets.items():
    if target["type"] == "system":
        continue
    folder = target.get("path") or os.path.join("Tests" if target["type"] == "test" else "Sources", name)
    imports = set()
    for root, _, files in os.walk(folder):
        for file in files:
            if file.endswith(".swift"):
                for line in open(os.path.join(root, file)):
                    match = re.match(r"\s*(?:@testable\s+)?import\s+(\w+)", line)
                    if match and match.group(1) in targets:
                        imports.add(match.group(1))
    declared = set()
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                declared.add(dependency[kind][0])
    # C shims are imported by Swift only through their system-library module, or not at all.
    swift_declared = {d for d in declared if targets.get(d, {}).get("type") != "system" and not d.startswith("C")}
    swift_imports = {i for i in imports if not i.startswith("C")}
    for missing in sorted(swift_imports - swift_declared):
        problems.append(f"{name} imports {missing} without declaring it")
    for unused in sorted(swift_declared - swift_imports):
        problems.append(f"{name} declares {unused} but never imports it")
# The request-side feature modules are written against their seams (protocols and PigeonDomain's
# vocabulary): PostgreSQL, the bank proxy's SOAP client, outbound HTTP and the configuration's
# file format are adapters the composition (PigeonServer) plugs in, never imported here.
ADAPTERS = {"PigeonStore", "PostgresDriver", "BankProxy", "OutboundHTTP", "PigeonConfiguration"}
SEAM_ONLY = {"PigeonBankService", "PigeonConsole", "PigeonDeviceAPI", "PigeonWallet"}
for name in sorted(SEAM_ONLY):
    folder = os.path.join("Sources", name)
    for root, _, files in os.walk(folder):
        for file in sorted(files):
            if not file.endswith(".swift"):
                continue
            for number, line in enumerate(open(os.path.join(root, file)), 1):
                match = re.match(r"\s*(?:@testable\s+)?import\s+(\w+)", line)
                if match and match.group(1) in ADAPTERS:
                    problems.append(f"{os.path.join(root, file)}:{number}: {name} imports the adapter {match.group(1)}; use its seam")
for problem in problems:
    print(problem)
sys.exit(1 if problems else 0)
