"""Confidential notifications (CONTRACT section 8) opened by an independent decryptor written on
the `cryptography` package from the contract alone: the vectors file our encryptor produced, and
real pushes the gateway sent to every push service of `pigeon simulate` for devices that
registered their keys through the device API and the bank's SMS flow."""
import base64
import json
import os
import subprocess
import time
from pathlib import Path

import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from test_bank_flow import stub_codes, stub_url  # noqa: F401 (stub_url is a fixture)
from test_zeep_client import as_dict, entries

VECTORS = Path(__file__).resolve().parents[2] / "Tests/PigeonDecryptorTests/vectors/confidential-v1.json"
CODE = "731904"
TEXT = f"Код {CODE}: перевод 5 000 ₽ в ACME"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    assert "=" not in text and "+" not in text and "/" not in text
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def point(public_key) -> bytes:
    return public_key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def keys(shared: bytes, salt: bytes, key_id: str, ephemeral: bytes, device: bytes):
    info = b"pigeon-e2e-v1\x00" + key_id.encode() + b"\x00" + ephemeral + device
    okm = HKDF(algorithm=hashes.SHA256(), length=28, salt=salt, info=info).derive(shared)
    return okm[:16], okm[16:]


def open_envelope(envelope, notification_id: str, device_key) -> dict:
    """The contract's v1 decryption, step by step."""
    assert envelope["v"] == 1
    ephemeral = unb64url(envelope["epk"])
    shared = device_key.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), ephemeral))
    key, nonce = keys(shared, unb64url(envelope["salt"]), envelope["kid"], ephemeral, point(device_key.public_key()))
    padded = AESGCM(key).decrypt(nonce, unb64url(envelope["ct"]), notification_id.encode())
    assert len(padded) % 256 == 0
    content = padded.rstrip(b"\x00")
    assert content.endswith(b"\x02")
    return json.loads(content[:-1].decode())


def test_vectors_open_and_reproduce_with_cryptography():
    vectors = json.loads(VECTORS.read_text())["vectors"]
    assert len(vectors) >= 6
    for vector in vectors:
        device = ec.derive_private_key(int.from_bytes(unb64url(vector["device"]["privateKey"]), "big"), ec.SECP256R1())
        assert point(device.public_key()) == unb64url(vector["device"]["publicKey"])
        content = open_envelope(vector["envelope"], vector["notificationId"], device)
        expected = {key: value for key, value in vector["expected"].items() if value is not None}
        assert content == expected, vector["name"]
        # The same envelope again from the sender's side: an independent encryptor agrees byte for byte.
        ephemeral = ec.derive_private_key(int.from_bytes(unb64url(vector["ephemeralPrivateKey"]), "big"), ec.SECP256R1())
        assert b64url(point(ephemeral.public_key())) == vector["envelope"]["epk"]
        shared = ephemeral.exchange(ec.ECDH(), device.public_key())
        key, nonce = keys(shared, unb64url(vector["envelope"]["salt"]), vector["device"]["keyId"], point(ephemeral.public_key()),
                          point(device.public_key()))
        plaintext = vector["plaintext"].encode() + b"\x02"
        plaintext += b"\x00" * (-len(plaintext) % 256)
        assert len(plaintext) == vector["paddedLength"]
        assert b64url(AESGCM(key).encrypt(nonce, plaintext, vector["notificationId"].encode())) == vector["envelope"]["ct"], vector["name"]
        # A wrong notification id does not open.
        try:
            open_envelope(vector["envelope"], vector["notificationId"] + "x", device)
            raise AssertionError("opened with another notification id")
        except Exception as error:  # cryptography raises InvalidTag
            assert type(error).__name__ == "InvalidTag"


def simulator(method, path, body=None):
    command = ["curl", "-sS", "--http2", "--cacert", os.environ["PIGEON_SIMULATOR_CA"], "-X", method,
               os.environ["PIGEON_SIMULATOR_URL"] + path]
    if body is not None:
        command += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def register(base_url, stub_url, user, device_id, platform, push_token, device_key):
    """The app's registration with its key, through the bank's SMS verification."""
    api = f"{base_url}/api/v1"
    body = {"bankClientId": "bank", "userId": user, "deviceId": device_id, "platform": platform, "pushToken": push_token}
    if device_key is not None:
        body["encryptionKey"] = {"keyId": f"key-{device_id}", "publicKey": b64url(point(device_key.public_key()))}
    pending = requests.post(f"{api}/devices/register", json=body, timeout=30)
    assert pending.status_code == 202, pending.text
    code = stub_codes(stub_url)[f"bank/{user}/{device_id}"]
    verified = requests.post(f"{api}/devices/verify", timeout=30, json={
        "bankClientId": "bank", "userId": user, "deviceId": device_id,
        "registrationId": pending.json()["registrationId"], "verificationCode": code})
    assert verified.status_code == 200, verified.text
    return verified.json()["authenticationToken"]


def envelope_of(record):
    """The push's notification id and envelope (or `fetch`), wherever its service carries them."""
    service = record["service"]
    if service == "apns":
        return record["payload"]
    if service == "webpush":
        return record["message"]
    message = record["message"]["message"]
    data = json.loads(message["data"]) if service == "huawei" else message["data"]
    if "e2e" in data:
        return {"notificationId": data["notificationId"], "e2e": json.loads(data["e2e"])}
    return data


def test_real_pushes_to_every_service_open_to_exactly_the_notification(client, base_url, stub_url, unique):
    user, keyless = unique("conf"), unique("conf-nokey")
    subscription = json.loads(simulator("POST", "/simulator/webpush/subscriptions"))
    phones = {
        "IOS": ("iphone", os.urandom(32).hex()),
        "ANDROID": ("pixel", "fcm-" + os.urandom(40).hex()),
        "RUSTORE": ("rustore-phone", "rustore-" + os.urandom(16).hex()),
        "HUAWEI": ("huawei-phone", "IQAAAA" + os.urandom(16).hex()),
        "WEB": ("browser", subscription),
    }
    device_keys = {}
    for platform, (device_id, token) in phones.items():
        device_keys[platform] = ec.generate_private_key(ec.SECP256R1())
        register(base_url, stub_url, user, device_id, platform, token, device_keys[platform])
    bearer = register(base_url, stub_url, keyless, "old-iphone", "IOS", os.urandom(32).hex(), None)

    nid = unique("conf-n")
    result = client.service.sendNotification(notification={
        "id": nid, "recipients": [user, keyless], "timeout": 600, "confidential": True,
        "pushContent": {"text": TEXT, "type": "PIN_CODE", "details": entries({"target": CODE})},
        "details": entries({"name": "ACME"}),
    })
    assert result.status == "OK", result
    deadline = time.time() + 30
    while time.time() < deadline and set(as_dict(client.service.getDeliveryStatus(id=nid).deliveryStatus).values()) != {"SENT"}:
        time.sleep(0.2)
    assert as_dict(client.service.getDeliveryStatus(id=nid).deliveryStatus) == {user: "SENT", keyless: "SENT"}

    records = []
    for line in simulator("GET", "/simulator/pushes").splitlines():
        record = json.loads(line)
        carried = envelope_of(record)
        if carried.get("notificationId") == nid:
            records.append((record, carried))
    assert len(records) == 6, records
    opened = set()
    for record, carried in records:
        raw = json.dumps({key: value for key, value in record.items() if key != "decrypted"}, ensure_ascii=False)
        assert CODE not in raw and "ACME" not in raw and "перевод" not in raw, raw
        if "fetch" in carried:
            assert carried["fetch"] in (True, "true") and "e2e" not in carried
            continue
        platform = {"apns": "IOS", "fcm": "ANDROID", "rustore": "RUSTORE", "huawei": "HUAWEI", "webpush": "WEB"}[record["service"]]
        content = open_envelope(carried["e2e"], nid, device_keys[platform])
        assert content == {"notificationId": nid, "text": TEXT, "type": "PIN_CODE", "target": CODE, "details": {"name": "ACME"}}
        assert carried["e2e"]["kid"] == f"key-{phones[platform][0]}"
        opened.add(platform)
    assert opened == set(phones)
    # The keyless phone reads the content with its bearer token while the notification is live.
    details = requests.get(f"{base_url}/api/v1/notifications/{nid}/details", headers={"Authorization": f"Bearer {bearer}"}, timeout=30)
    assert details.status_code == 200 and details.json()["pushContent"]["text"] == TEXT
    # WSDL round trip: getNotificationDetails answers the confidential flag as sent.
    assert client.service.getNotificationDetails(id=nid).notification.confidential is True
