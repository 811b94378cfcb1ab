"""The deployment files in deploy/: alert rules and dashboard checked by their tools and against
the running gateway's /metrics, the systemd unit verified, the container image built where a
container runtime exists, and `pigeon --version`."""
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest
import requests
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULES = os.path.join(ROOT, "deploy", "prometheus", "pigeon-alerts.yml")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "pigeon-dashboard.json")
UNIT = os.path.join(ROOT, "deploy", "systemd", "pigeon.service")
PIGEON = os.path.join(ROOT, ".build", "release", "pigeon")


def metric_names(text):
    """pigeon_* names in `text`, histogram series reduced to their family."""
    return {re.sub(r"_(bucket|sum|count)$", "", name) for name in re.findall(r"\bpigeon_[a-z0-9_]+", text)}


def test_alert_rules_pass_promtool():
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian package prometheus)")
    result = subprocess.run(["promtool", "check", "rules", RULES], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    # As many rules as alerts in the file: promtool read every one.
    alerts = len(re.findall(r"^\s+- alert: ", open(RULES).read(), re.M))
    assert alerts >= 12
    assert f"SUCCESS: {alerts} rules found" in result.stdout, result.stdout


def test_dashboard_is_grafana_json():
    dashboard = json.load(open(DASHBOARD))
    assert dashboard["uid"] and dashboard["panels"]
    for panel in dashboard["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]


def test_every_metric_named_exists(base_url):
    exposed = requests.get(f"{base_url}/metrics", timeout=10).text
    families = set(re.findall(r"^# TYPE (pigeon_[a-z0-9_]+) ", exposed, re.M))
    named = metric_names(open(RULES).read()) | metric_names(open(DASHBOARD).read())
    assert len(named) >= 15
    missing = sorted(named - families)
    assert not missing, f"named in deploy/ but not in /metrics: {missing}"


def test_systemd_unit_verifies():
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian package systemd)")
    # The unit names the installed binary; verify it against the one just built.
    with tempfile.TemporaryDirectory() as folder:
        unit = os.path.join(folder, "pigeon.service")
        open(unit, "w").write(open(UNIT).read().replace("/usr/local/bin/pigeon", PIGEON))
        result = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    text = open(UNIT).read()
    for setting in ["NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes", "StateDirectory=pigeon",
                    "LimitNOFILE=", "User=pigeon", "ExecReload=/bin/kill -HUP $MAINPID"]:
        assert setting in text, setting


def test_sysusers_file_creates_the_units_user():
    """The unit's User= and Group= exist once systemd-sysusers has read deploy/systemd/pigeon.sysusers
    (checked in a scratch root, so this machine's users are left alone)."""
    if shutil.which("systemd-sysusers") is None:
        pytest.skip("systemd-sysusers is not installed (Debian package systemd)")
    sysusers = os.path.join(ROOT, "deploy", "systemd", "pigeon.sysusers")
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "etc"))
        for name in ["passwd", "group"]:
            open(os.path.join(root, "etc", name), "w").write("root:x:0:0:root:/root:/bin/sh\n" if name == "passwd" else "root:x:0:\n")
        result = subprocess.run(["systemd-sysusers", f"--root={root}", sysusers], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        users = open(os.path.join(root, "etc", "passwd")).read()
        groups = open(os.path.join(root, "etc", "group")).read()
    unit = open(UNIT).read()
    user = re.search(r"^User=(\S+)", unit, re.M).group(1)
    group = re.search(r"^Group=(\S+)", unit, re.M).group(1)
    entry = next(line for line in users.splitlines() if line.startswith(user + ":"))
    assert entry.endswith(":/var/lib/pigeon:/usr/sbin/nologin"), entry
    assert any(line.startswith(group + ":") for line in groups.splitlines())


def test_container_image_builds():
    runtime = shutil.which("podman") or shutil.which("docker")
    if runtime is None:
        pytest.skip("no container runtime (podman or docker) on this machine: the image is not built here")
    if subprocess.run([runtime, "info"], capture_output=True).returncode != 0:
        pytest.skip(f"{runtime} is installed but cannot reach a container daemon here: the image is not built")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result = subprocess.run([runtime, "build", "-f", "deploy/container/Containerfile", "--build-arg", f"PIGEON_COMMIT={commit}",
                             "-t", "pigeon-test", "."], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert result.returncode == 0, result.stderr[-4000:]


def test_version_names_release_and_commit():
    output = subprocess.run([PIGEON, "--version"], capture_output=True, text=True, check=True).stdout
    assert re.fullmatch(r"pigeon \d+\.\d+\.\d+ \(commit [0-9a-z]+\)\n", output), output


def test_build_context_leaves_secrets_out():
    """A developer's server.conf (database and SOAP passwords) and key files never go into an
    image's build context (`COPY . .` in the Containerfile's build stage)."""
    for name in (".containerignore", ".dockerignore"):
        lines = {line.strip() for line in open(os.path.join(ROOT, name)) if line.strip() and not line.startswith("#")}
        for pattern in ("/server.conf", "*.p8", "*.p12", "*.key", ".git", ".build"):
            assert pattern in lines, f"{name} does not exclude {pattern}"
    containerfile = open(os.path.join(ROOT, "deploy", "container", "Containerfile")).read()
    runtime = containerfile[containerfile.index("FROM debian:12-slim"):]
    installed = runtime[runtime.index("--no-install-recommends"):runtime.index("&&", runtime.index("--no-install-recommends"))].split()
    assert "curl" not in installed, f"curl is installed in the runtime image: {installed}"


def _threshold_forms(text):
    """How a runbook may write a rule's threshold: as in the rule, as a percentage, in minutes or days."""
    value = float(eval(text))  # the rule's own arithmetic, e.g. 14 * 86400
    forms = {text.replace(" ", "")}
    if 0 < value < 1:
        forms.add(f"{value * 100:g}%")
    if value >= 1 and value == int(value):
        number = int(value)
        forms |= {str(number), f"{number:,}"}
        if number % 86400 == 0:
            forms.add(f"{number // 86400} days")
        elif number % 60 == 0:
            forms.add(f"{number // 60} minutes")
    return forms


def test_runbook_states_each_alerts_threshold():
    """Every alert has a runbook section, and the section states the rule's thresholds as the rule
    has them (a runbook that said 10% while the rule said 20% misled the on-call engineer)."""
    rules = yaml.safe_load(open(RULES))["groups"][0]["rules"]
    runbook = open(os.path.join(ROOT, "docs", "runbook.md")).read()
    sections = {m.group(1).lower(): m.group(2) for m in re.finditer(r"^## (\S+)\n(.*?)(?=^## |\Z)", runbook, re.S | re.M)}
    problems = []
    for rule in rules:
        section = sections.get(rule["alert"].lower())
        if section is None:
            problems.append(f"{rule['alert']}: no section in docs/runbook.md")
            continue
        for threshold in re.findall(r"(?<![\[\w])[<>]\s*([0-9.]+(?:\s*\*\s*[0-9]+)*)", rule["expr"]):
            if float(eval(threshold)) == 0:
                continue
            forms = _threshold_forms(threshold)
            if not any(form in section for form in forms):
                problems.append(f"{rule['alert']}: its threshold {threshold} is not in its runbook section (as one of {sorted(forms)})")
    assert not problems, "\n".join(problems)
