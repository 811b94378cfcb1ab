"""Web Push checked by independent implementations: the gateway's message encryption (RFC 8291)
decrypted by http_ece, and its VAPID header (RFC 8292) verified by PyJWT with the key it names."""
import base64
import os
import subprocess
import tempfile
import time

import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

BENCH = os.environ.get("PIGEON_BENCH_BIN", ".build/debug/pigeon-bench")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_http_ece_decrypts_what_the_gateway_encrypts():
    browser = ec.generate_private_key(ec.SECP256R1())
    public = browser.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    auth = os.urandom(16)
    for text in ["Код подтверждения 123456", "x" * 3993]:
        body = subprocess.run([BENCH, "webpush-encrypt", b64url(public), b64url(auth), text],
                              capture_output=True, text=True, check=True).stdout.strip()
        plaintext = http_ece.decrypt(unb64url(body), private_key=browser, auth_secret=auth, version="aes128gcm")
        assert plaintext.decode() == text


def test_pyjwt_verifies_the_vapid_token_with_the_key_it_names():
    key = ec.generate_private_key(ec.SECP256R1())
    with tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False) as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    try:
        header = subprocess.run([BENCH, "vapid", handle.name, "https://updates.push.services.mozilla.com", "mailto:ops@bank.example"],
                                capture_output=True, text=True, check=True).stdout.strip()
    finally:
        os.unlink(handle.name)
    scheme, _, fields = header.partition(" ")
    assert scheme == "vapid"
    values = dict(part.strip().split("=", 1) for part in fields.split(","))
    named = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(values["k"]))
    expected = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    assert unb64url(values["k"]) == expected
    claims = jwt.decode(values["t"], key=named, algorithms=["ES256"], audience="https://updates.push.services.mozilla.com")
    assert claims["sub"] == "mailto:ops@bank.example"
    assert time.time() < claims["exp"] <= time.time() + 24 * 3600
    assert jwt.get_unverified_header(values["t"])["typ"] == "JWT"
