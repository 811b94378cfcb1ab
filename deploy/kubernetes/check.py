"""Checks deploy/kubernetes: every manifest validates (strictly: no unknown field) against the
schemas of current Kubernetes versions (kubernetes-validate), the kustomization lists exactly the
manifests beside it, and the manifests agree with each other and with the gateway: the ports the
configuration listens on are the container's, the Services and the NetworkPolicy use them, the
probes ask the right listener, the grace period covers shutdownGraceSeconds.

A broken copy of the Deployment must fail validation, so the check is known to check.

usage: python deploy/kubernetes/check.py   (needs kubernetes-validate and PyYAML)
"""

import copy
import pathlib
import re
import sys

import kubernetes_validate
import yaml

HERE = pathlib.Path(__file__).resolve().parent
VERSIONS = ["1.34.0", "1.37.0"]


def fail(message):
    print(f"[kubernetes] FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def validate(document, name, version):
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        raise ValueError(f"{name}: {error.message} at {'.'.join(str(p) for p in error.path)}") from error


def main():
    manifests = {}
    for path in sorted(HERE.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
        if len(documents) != 1:
            fail(f"{path.name} holds {len(documents)} resources; one per file")
        manifests[path.name] = documents[0]
    for version in VERSIONS:
        for name, document in manifests.items():
            try:
                validate(document, name, version)
            except ValueError as error:
                fail(f"Kubernetes {version}: {error}")
    print(f"[kubernetes] {len(manifests)} manifests valid (strict) for Kubernetes {', '.join(VERSIONS)}")

    kustomization = yaml.safe_load((HERE / "kustomization.yaml").read_text())
    if sorted(kustomization["resources"]) != sorted(manifests):
        fail(f"kustomization.yaml lists {sorted(kustomization['resources'])}, the folder holds {sorted(manifests)}")

    by_kind = {}
    for document in manifests.values():
        by_kind.setdefault(document["kind"], []).append(document)
    deployment = by_kind["Deployment"][0]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    configuration = by_kind["Secret"][0]["stringData"]["server.conf"]
    listen = dict(re.findall(r"^(listen|bankListen) = [^:\n]+:(\d+)$", configuration, re.M))
    if {"public": int(listen["listen"]), "bank": int(listen["bankListen"])} != ports:
        fail(f"server.conf listens on {listen}, the container declares {ports}")
    grace = int(re.search(r"^shutdownGraceSeconds = (\d+)$", configuration, re.M).group(1))
    pre_stop = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    if pod["terminationGracePeriodSeconds"] < grace + pre_stop + 5:
        fail(f"terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']} < preStop {pre_stop} + shutdownGraceSeconds {grace} + 5")
    if container["readinessProbe"]["httpGet"] != {"path": "/ready", "port": "bank", "scheme": "HTTPS"}:
        fail("readiness must ask /ready on bankListen (where it is served), over HTTPS")
    if container["livenessProbe"]["httpGet"] != {"path": "/health", "port": "public", "scheme": "HTTPS"}:
        fail("liveness must ask /health on listen, over HTTPS")
    # Both listeners serve HTTPS, the database's certificate is verified, no placeholder is taken
    # for a secret (the gateway refuses CHANGE-ME, so the example must be edited before use).
    for key in ("tlsCertificatePath", "tlsKeyPath", "bankTlsCertificatePath", "bankTlsKeyPath"):
        if not re.search(rf"^{key} = /etc/pigeon/tls/", configuration, re.M):
            fail(f"server.conf must set {key} (HTTPS on both listeners)")
    if "sslmode=verify-full" not in configuration:
        fail("dbUrl must verify the database's certificate (sslmode=verify-full)")
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    for path in ("/etc/pigeon/tls", "/etc/pigeon/db-ca"):
        if path not in mounts:
            fail(f"nothing is mounted at {path}, which server.conf names")
    security = container["securityContext"]
    if not (security["readOnlyRootFilesystem"] and pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] == 10001):
        fail("the container must run as uid 10001, non-root, on a read-only root file system")
    services = {s["metadata"]["name"]: [p["targetPort"] for p in s["spec"]["ports"]] for s in by_kind["Service"]}
    if services != {"pigeon-public": ["public"], "pigeon-bank": ["bank"]}:
        fail(f"the phones' and the bank's Services must be apart: {services}")
    policy = by_kind["NetworkPolicy"][0]["spec"]
    if "Egress" not in policy["policyTypes"]:
        fail("the NetworkPolicy must restrict egress too")
    egress_ports = sorted({p["port"] for rule in policy["egress"] for p in rule["ports"]})
    if egress_ports != [53, 443, 5432, 8443]:
        fail(f"egress must allow DNS, the push services, PostgreSQL and the bank's proxy only: {egress_ports}")
    rules = policy["ingress"]
    open_ports = [p["port"] for rule in rules if "from" not in rule for p in rule["ports"]]
    if open_ports != ["public"]:
        fail(f"only the public port may be open to every source: {open_ports}")
    if deployment["spec"]["replicas"] < 2 or by_kind["PodDisruptionBudget"][0]["spec"]["minAvailable"] != 1:
        fail("two replicas, one kept through a disruption")

    # The validator is live: a wrong type and an unknown field are refused.
    broken = copy.deepcopy(deployment)
    broken["spec"]["replicas"] = "two"
    broken["spec"]["template"]["spec"]["containers"][0]["livenessProbes"] = {}
    try:
        validate(broken, "a broken deployment", VERSIONS[-1])
    except ValueError:
        print("[kubernetes] a broken Deployment is refused, as it must be")
    else:
        fail("a Deployment with replicas: two validated")
    print("[kubernetes] the manifests agree with each other and with the gateway's configuration")


if __name__ == "__main__":
    main()
