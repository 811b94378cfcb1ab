"""Wallet passes through a stock SOAP client (zeep): updatePass with a .pkpass as base64Binary,
getPassStatus, and a simulated Wallet (pigeon simulate) that registers with the gateway's PassKit
web service and downloads the new version after the update push."""
import io
import json
import os
import subprocess
import time
import uuid
import zipfile

import pytest
import zeep

PASS_TYPE = "pass.com.example.bank.zeep"
TOKEN = "zeep-wallet-token-0123456789"


def pkpass(serial, text):
    """A .pkpass-shaped archive (the gateway checks the entries; Wallet would check the signature)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pass.json", json.dumps({"passTypeIdentifier": PASS_TYPE, "serialNumber": serial, "description": text}))
        archive.writestr("manifest.json", "{}")
        archive.writestr("signature", b"\x30\x80")
    return buffer.getvalue()


def simulator(method, path, body=None):
    command = ["curl", "-sS", "--http2", "--cacert", os.environ["PIGEON_SIMULATOR_CA"], "-X", method,
               os.environ["PIGEON_SIMULATOR_URL"] + path]
    if body is not None:
        command += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def devices(client, serial):
    status = client.service.getPassStatus(passTypeIdentifier=PASS_TYPE, serialNumber=serial)
    return status, {entry.key: entry.value for entry in (status.devices.entry if status.devices else [])}


def wait_for(condition, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_update_pass_and_a_wallet_fetches_it(client, base_url):
    serial = "zeep-" + uuid.uuid4().hex[:10]
    first = client.service.updatePass(passTypeIdentifier=PASS_TYPE, serialNumber=serial, authenticationToken=TOKEN,
                                      **{"pass": pkpass(serial, "balance 100")})
    assert first.status == "OK"
    assert first.version == 1

    device = "zeep-device-" + uuid.uuid4().hex[:8]
    push_token = uuid.uuid4().hex * 2
    # A wrong authentication token: the simulator says what the gateway answered (401).
    refused = json.loads(simulator("POST", "/simulator/wallet/devices", {
        "deviceLibraryIdentifier": device + "-x", "pushToken": push_token[::-1], "webServiceURL": base_url + "/passkit",
        "passes": [{"passTypeIdentifier": PASS_TYPE, "serialNumber": serial, "authenticationToken": "wrong-token-0123456789"}],
    }))
    assert [r["status"] for r in refused["registrations"]] == [401], refused
    # The call answers once the registration is done: the device is there at once (a cold first run).
    answer = json.loads(simulator("POST", "/simulator/wallet/devices", {
        "deviceLibraryIdentifier": device, "pushToken": push_token, "webServiceURL": base_url + "/passkit",
        "passes": [{"passTypeIdentifier": PASS_TYPE, "serialNumber": serial, "authenticationToken": TOKEN}],
    }))
    assert answer == {"passes": 1, "registrations": [{"passTypeIdentifier": PASS_TYPE, "serialNumber": serial, "status": 201}]}, answer
    assert devices(client, serial)[1] == {device: "REGISTERED"}

    second = client.service.updatePass(passTypeIdentifier=PASS_TYPE, serialNumber=serial, authenticationToken=TOKEN,
                                       **{"pass": pkpass(serial, "balance 42")})
    assert second.version == 2
    assert wait_for(lambda: devices(client, serial)[1] == {device: "FETCHED"})
    status, _ = devices(client, serial)
    assert status.status == "OK" and status.version == 2
    # The gateway marks FETCHED as it serves; the Wallet records its download once the body has arrived.
    def downloads():
        fetches = [json.loads(line) for line in simulator("GET", "/simulator/wallet/fetches").splitlines()]
        return [fetch for fetch in fetches if fetch["device"] == device]
    assert wait_for(lambda: downloads())
    mine = downloads()
    assert [fetch["status"] for fetch in mine] == [200]
    assert mine[0]["bytes"] == len(pkpass(serial, "balance 42"))


def test_unknown_pass_and_bad_archive(client):
    missing = client.service.getPassStatus(passTypeIdentifier=PASS_TYPE, serialNumber="never-stored")
    assert missing.status == "ENTITY_NOT_FOUND"
    with pytest.raises(zeep.exceptions.Fault) as fault:
        client.service.updatePass(passTypeIdentifier=PASS_TYPE, serialNumber="bad", authenticationToken=TOKEN, **{"pass": b"not a zip"})
    assert "pass" in fault.value.message and "ZIP" in fault.value.message
