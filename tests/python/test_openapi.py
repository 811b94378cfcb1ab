"""docs/openapi.yaml: the document is valid OpenAPI 3.1, the device API's answers in these tests
match it (conftest.py checks every answer), and schemathesis explores every documented operation
of a live gateway for a bounded number of cases: no 5xx, no status or body outside the document,
and nothing in the gateway's log it should not have written."""
import os
import pathlib
import subprocess
import sys

import requests
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename

from openapi_check import DOCUMENT


def test_the_document_is_valid_openapi_31():
    spec, _ = read_from_filename(str(DOCUMENT))
    assert spec["openapi"].startswith("3.1")
    validate(spec)


def test_answers_outside_the_document_are_caught(answers_match_the_openapi_document, base_url):
    """The checker itself: a documented answer passes, an answer the document does not allow fails."""
    checker = answers_match_the_openapi_document
    assert checker.problem("POST", "/api/v1/notifications/x/opened", 401, "application/json", b'{"error":"UNAUTHORIZED","message":"m"}') is None
    assert checker.problem("POST", "/api/v1/notifications/x/opened", 418, "application/json", b"{}") is not None
    assert checker.problem("POST", "/api/v1/devices/register", 200, "application/json", b'{"state":"SUBSCRIBED"}') is not None
    assert checker.problem("POST", "/api/v1/devices/register", 400, "application/json", b'{"error":"NOT_A_CODE","message":"m"}') is not None
    # And a real call goes through it.
    before = checker.checked
    assert requests.get(f"{base_url}/api/v1/notifications/none/details", timeout=30).status_code == 401
    assert checker.checked == before + 1


def test_schemathesis_finds_nothing_outside_the_document(tmp_path, unique):
    """Against a gateway of its own (the tests' configuration on another port, its own log, the
    per-address limits off so the fuzzer does not use up the other tests' allowance), with the
    bearer token of a subscribed iPhone so the authenticated calls get past 401."""
    import hashlib
    import secrets
    import time
    bearer = secrets.token_urlsafe(32)
    sql = ("INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token, auth_token_hash, auth_token_expires_at) "
           "VALUES ('bank', :'user', lower(:'user'), 'fuzzed-iphone', 'IOS', :'token', decode(:'digest', 'hex'), now() + interval '1 day')")
    subprocess.run(["psql", os.environ["PIGEON_DATABASE_URL"], "-v", "ON_ERROR_STOP=1", "-v", f"user={unique('fuzz')}", "-v", "token=" + "ab" * 32,
                    "-v", "digest=" + hashlib.sha256(bearer.encode()).hexdigest(), "-q"],
                   check=True, input=(sql + ";\n").encode(), capture_output=True)
    binary = os.environ.get("PIGEON_BIN", ".build/release/pigeon")
    source = pathlib.Path(os.environ.get("PIGEON_CONFIG", "/tmp/pigeon-zeep.conf")).read_text()
    lines = [line for line in source.splitlines() if not line.startswith(("listen", "logLevel"))]
    config = tmp_path / "fuzzed.conf"
    config.write_text("\n".join(["listen = 127.0.0.1:18084", "logLevel = info", "registrationsPerAddressPerMinute = 0",
                                 "registrationsPerUserPerHour = 0", "passRequestsPerAddressPerMinute = 0"] + lines) + "\n")
    log = tmp_path / "gateway.log"
    base_url = "http://127.0.0.1:18084"
    with log.open("wb") as output:
        gateway = subprocess.Popen([binary, "serve", "--config", str(config)], stdout=output, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            try:
                if requests.get(f"{base_url}/ready", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert gateway.poll() is None, log.read_text()[-3000:]
            time.sleep(0.1)
        schemathesis = pathlib.Path(sys.executable).parent / "schemathesis"
        run = subprocess.run(
            [str(schemathesis), "run", str(DOCUMENT), "--url", base_url,
             "--max-examples", os.environ.get("PIGEON_SCHEMATHESIS_EXAMPLES", "50"),
             "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance",
             "--seed", "20261203", "--request-timeout", "30", "--no-color", "--header", f"Authorization: Bearer {bearer}"],
            capture_output=True, text=True, timeout=900, cwd=tmp_path)  # its cache goes there, not into the checkout
        assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
        assert gateway.poll() is None, "the gateway stopped under the fuzzer"
    finally:
        gateway.terminate()
        gateway.wait(timeout=60)
    errors = [line for line in log.read_text(errors="replace").splitlines() if " ERROR " in line or " CRITICAL " in line]
    assert not errors, "\n".join(errors[:20])
