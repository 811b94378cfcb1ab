"""The bank side with third-party tools: zeep builds a client for the bank's SBIOutbound service
from the WSDL the gateway serves and calls `pigeon bank-stub` with it; then the whole device
flow of CONTRACT §2-§3 over plain HTTP: register, SMS verification with the code the stub
issued, send (zeep), delivered, opened, and the pushIsOpened report at the stub."""
import json
import os
import time

import pytest
import requests
import zeep
from zeep.transports import Transport

from test_zeep_client import notification, as_dict


@pytest.fixture(scope="session")
def stub_url():
    return os.environ.get("PIGEON_STUB_URL", "http://127.0.0.1:18088")


@pytest.fixture(scope="session")
def bank(base_url, stub_url):
    """A zeep client of the bank's service, from the gateway's outbound WSDL, bound to the stub."""
    outbound = zeep.Client(f"{base_url}/pigeon/services/SBIOutbound?wsdl", transport=Transport(timeout=30))
    binding = next(name for name in outbound.wsdl.bindings if str(name).endswith("ServiceSoapBinding"))
    return outbound.create_service(binding, f"{stub_url}/sbi-outbound/services/SBIOutbound")


def stub_codes(stub_url):
    lines = requests.get(f"{stub_url}/stub/codes", timeout=10).text.splitlines()
    return {entry["device"]: entry["code"] for entry in map(json.loads, lines)}


def stub_reports(stub_url):
    """The stub's reports, without the time each arrived (benchmarks read that)."""
    reports = [json.loads(line) for line in requests.get(f"{stub_url}/stub/reports", timeout=10).text.splitlines()]
    for report in reports:
        assert isinstance(report.pop("receivedAt"), float)
    return reports


def test_outbound_wsdl_drives_the_bank_stub(bank, stub_url, unique):
    # zeep hands back a one-field result as that field's value.
    user = unique("zeep-bank")
    assert bank.checkSubscriptionAuthorized(bankClientId="bank", userId=user, deviceId="d1", platform="IOS") is False
    assert bank.authorizeSubscription(bankClientId="bank", userId=user, deviceId="d1", platform="IOS") == "OK"
    code = stub_codes(stub_url)[f"bank/{user}/d1"]
    assert bank.verifySubscriptionAuthorization(bankClientId="bank", userId=user, deviceId="d1", verificationCode="x" + code) == "VERIFICATION_FAILED"
    assert bank.verifySubscriptionAuthorization(bankClientId="bank", userId=user, deviceId="d1", verificationCode=code) == "OK"
    # A code once entered does not authorize the device id for later registrations (device ids
    # are no secret): the stub authorizes only users configured with --authorized.
    assert bank.checkSubscriptionAuthorized(bankClientId="bank", userId=user, deviceId="d1", platform="IOS") is False
    with pytest.raises(zeep.exceptions.Fault) as fault:
        bank.checkSubscriptionAuthorized(bankClientId="no-such-bank", userId=user, deviceId="d1", platform="IOS")
    assert "does not exist" in fault.value.message
    # The declared fault travels in the detail, as JAX-WS sends it.
    assert fault.value.detail is not None
    assert fault.value.detail[0].tag == "{http://outbound.sbi.pigeon.idamobile.com/}BankClientNotExistsException"
    bank.reportNotificationExpired(notificationId=unique("n"), userId=[user, "other"])
    assert any(report["users"] == [user, "other"] for report in stub_reports(stub_url))


def test_register_verify_send_open_report(client, base_url, stub_url, unique):
    user = unique("flow")
    api = f"{base_url}/api/v1"
    device = {"bankClientId": "bank", "userId": user, "deviceId": "iphone-15", "platform": "IOS",
              "pushToken": "a1" * 32}
    pending = requests.post(f"{api}/devices/register", json=device, timeout=30)
    assert pending.status_code == 202, pending.text
    assert pending.json()["state"] == "VERIFICATION_REQUIRED"
    registration_id = pending.json()["registrationId"]
    code = stub_codes(stub_url)[f"bank/{user}/iphone-15"]
    verified = requests.post(f"{api}/devices/verify", timeout=30, json={
        "bankClientId": "bank", "userId": user, "deviceId": "iphone-15",
        "registrationId": registration_id, "verificationCode": code})
    assert verified.status_code == 200, verified.text
    token = verified.json()["authenticationToken"]
    headers = {"Authorization": f"Bearer {token}"}

    nid = unique("flow-n")
    assert client.service.sendNotification(notification=notification(nid, [user])).status == "OK"
    deadline = time.time() + 30
    while time.time() < deadline and as_dict(client.service.getDeliveryStatus(id=nid).deliveryStatus)[user] != "SENT":
        time.sleep(0.2)
    assert as_dict(client.service.getDeliveryStatus(id=nid).deliveryStatus)[user] == "SENT"

    assert requests.post(f"{api}/notifications/{nid}/delivered", headers=headers, timeout=30).json()["state"] == "DELIVERED"
    details = requests.get(f"{api}/notifications/{nid}/details", headers=headers, timeout=30).json()
    assert details["pushContent"]["text"] == "Ваш код подтверждения: 4242"
    assert details["details"]["currency"] == "RUB"
    assert requests.post(f"{api}/notifications/{nid}/opened", headers=headers, timeout=30).json()["state"] == "READ"
    assert as_dict(client.service.getDeliveryStatus(id=nid).deliveryStatus)[user] == "READ"
    deadline = time.time() + 30
    while time.time() < deadline and not any(r["notificationId"] == nid for r in stub_reports(stub_url)):
        time.sleep(0.2)
    assert [r for r in stub_reports(stub_url) if r["notificationId"] == nid] == [
        {"operation": "pushIsOpened", "notificationId": nid, "users": [user]}]
    assert requests.post(f"{api}/notifications/{nid}/opened", headers={"Authorization": "Bearer nope"}, timeout=30).status_code == 401
