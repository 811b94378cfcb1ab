"""The operator console in a real browser (headless Chromium driven by Selenium) against a gateway
with bankListen (PIGEON_CONSOLE_URL) and data in it: sign in, find a notification by id and see
each recipient's state, find a user and revoke a device (its bearer token then gets 401), re-queue a
dead report, a request without the CSRF token refused, no /console on the public listener, and no
secret or full push token on any page. Screenshots go to PIGEON_SCREENSHOTS (the README's come from
here)."""
import os
import re
import subprocess
import time
import uuid

import pytest
import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.support.ui import WebDriverWait

# While the next page loads, the last one's elements go stale.
LOADING = (NoSuchElementException, StaleElementReferenceException)

from test_bank_flow import stub_codes
from test_zeep_client import as_dict

CONSOLE = os.environ.get("PIGEON_CONSOLE_URL", "http://127.0.0.1:18083")
PUBLIC = os.environ.get("PIGEON_CONSOLE_PUBLIC_URL", "http://127.0.0.1:18082")
PASSWORD = os.environ.get("PIGEON_CONSOLE_PASSWORD", "console-password-0123")
SHOTS = os.environ.get("PIGEON_SCREENSHOTS", "/tmp/pigeon-console-screenshots")


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900", "--disable-gpu"):
        options.add_argument(argument)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    os.makedirs(SHOTS, exist_ok=True)
    yield driver
    driver.quit()


def text_of(driver, selector):
    """The text of the element `selector` finds. Read while the next page replaces the last one,
    chromedriver may answer "Node with given id does not belong to the document" where it usually
    says the element is stale: raised as stale, for the waits to try again."""
    try:
        return driver.find_element(By.CSS_SELECTOR, selector).text
    except WebDriverException as error:
        if "does not belong to the document" in str(error):
            raise StaleElementReferenceException(str(error)) from error
        raise


def heading(browser, text):
    """Waits for the page whose heading starts with `text` (a click returns before the next page loads)."""
    WebDriverWait(browser, 30, ignored_exceptions=LOADING).until(lambda driver: text_of(driver, "h1").startswith(text))


def wait_for(browser, selector):
    """The text of the element `selector` finds, once there is one with text (the next page loaded)."""
    return WebDriverWait(browser, 30, ignored_exceptions=LOADING).until(lambda driver: text_of(driver, selector))


def notice(browser):
    return wait_for(browser, "p.notice")


def shot(browser, name):
    browser.save_screenshot(os.path.join(SHOTS, f"console-{name}.png"))


def sign_in(browser):
    browser.get(f"{CONSOLE}/console")
    assert browser.current_url.endswith("/console/login")
    browser.find_element(By.ID, "username").send_keys("operator")
    browser.find_element(By.ID, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    heading(browser, "Overview")


def register(base_url, stub_url, user, token):
    """A device through the bank's SMS flow (the stub prints the code)."""
    api = f"{base_url}/api/v1"
    device = {"bankClientId": "bank", "userId": user, "deviceId": "iphone-15", "platform": "IOS", "pushToken": token}
    pending = requests.post(f"{api}/devices/register", json=device, timeout=30).json()
    code = stub_codes(stub_url)[f"bank/{user}/iphone-15"]
    verified = requests.post(f"{api}/devices/verify", timeout=30, json={
        "bankClientId": "bank", "userId": user, "deviceId": "iphone-15",
        "registrationId": pending["registrationId"], "verificationCode": code})
    assert verified.status_code == 200, verified.text
    return verified.json()["authenticationToken"]


def test_operator_answers_the_questions_in_the_console(browser, client, base_url, unique):
    stub_url = os.environ.get("PIGEON_STUB_URL", "http://127.0.0.1:18088")
    assert requests.get(f"{PUBLIC}/console", timeout=10, allow_redirects=False).status_code == 404
    user = unique("console")
    push_token = uuid.uuid4().hex * 2
    bearer = register(base_url, stub_url, user, push_token)
    nid = unique("pin")
    message = {"id": nid, "recipients": [user, unique("nobody")], "timeout": 600,
               "pushContent": {"text": "Payment code 482913", "type": "PIN_CODE", "details": {"entry": [{"key": "target", "value": "482913"}]}}}
    assert client.service.sendNotification(notification=message).status == "OK"
    deadline = time.time() + 30
    while time.time() < deadline and as_dict(client.service.getDeliveryStatus(id=nid).deliveryStatus)[user] != "SENT":
        time.sleep(0.2)

    sign_in(browser)
    sources = []
    shot(browser, "overview")
    sources.append(browser.page_source)

    # "Did the client get the payment code?"
    browser.find_element(By.LINK_TEXT, "Notification").click()
    heading(browser, "Notification")
    browser.find_element(By.ID, "id").send_keys(nid)
    browser.find_element(By.CSS_SELECTOR, "main form button").click()
    heading(browser, f"Notification {nid}")
    states = {row.find_elements(By.TAG_NAME, "td")[0].text: row.find_elements(By.TAG_NAME, "td")[1].text
              for row in browser.find_elements(By.CSS_SELECTOR, "main table:last-of-type tbody tr")}
    assert states[user] == "SENT"
    assert "482913" not in browser.page_source
    shot(browser, "notification")
    sources.append(browser.page_source)

    # "Which devices does this user have? Revoke the stolen phone."
    browser.find_element(By.LINK_TEXT, user).click()
    heading(browser, f"User {user}")
    assert "iphone-15" in browser.page_source
    shot(browser, "user")
    sources.append(browser.page_source)
    browser.find_element(By.CSS_SELECTOR, "input[name=reason]").send_keys("phone reported stolen")
    browser.find_element(By.XPATH, "//button[text()='Revoke']").click()
    assert "revoked" in notice(browser)
    assert requests.get(f"{base_url}/api/v1/notifications/{nid}/details", headers={"Authorization": f"Bearer {bearer}"},
                        timeout=30).status_code == 401

    # "What is the bank proxy refusing?" A dead report, sent again.
    report_id = int(time.time() * 1000) % 1_000_000_000
    subprocess.run(["psql", os.environ["PIGEON_DATABASE_URL"], "-q", "-c",
                    "INSERT INTO outbox_dead (id, kind, payload, attempts, last_error, created_at) VALUES "
                    f"({report_id}, 'pushIsOpened', '{{\"notificationId\": \"old-{report_id}\", \"users\": [\"carol\"]}}', 40, 'HTTP 503 from the bank', now() - interval '3 days')"],
                   check=True, capture_output=True)
    browser.find_element(By.LINK_TEXT, "Outbox").click()
    heading(browser, "Outbox")
    assert f"old-{report_id}" in browser.page_source
    shot(browser, "outbox")
    sources.append(browser.page_source)
    browser.find_element(By.CSS_SELECTOR, f"button[aria-label='Send report {report_id} again']").click()
    assert "waiting to be sent again" in notice(browser)

    # A request without the CSRF token, with the operator's own cookie, is refused.
    cookie = browser.get_cookie("pigeon_console")["value"]
    forged = requests.post(f"{CONSOLE}/console/outbox/requeue", data={"id": str(report_id)},
                           cookies={"pigeon_console": cookie}, allow_redirects=False, timeout=10)
    assert forged.status_code == 403
    # The JSON API through the same session: an action carries the session's CSRF token in
    # X-CSRF-Token, which the listener passes on (it once copied only a fixed list of headers).
    csrf = re.search(r'name="csrf" value="([^"]+)"', browser.page_source).group(1)
    revealed = requests.post(f"{CONSOLE}/console/api/v1/notifications/{nid}/reveal", json={"reason": "the client is on the phone"},
                             headers={"X-CSRF-Token": csrf}, cookies={"pigeon_console": cookie}, timeout=10)
    assert revealed.status_code in (200, 410), revealed.text
    assert "CSRF_TOKEN_REQUIRED" not in revealed.text

    browser.find_element(By.LINK_TEXT, "Configuration").click()
    heading(browser, "Configuration")
    shot(browser, "configuration")
    sources.append(browser.page_source)
    for source in sources:
        assert PASSWORD not in source
        assert push_token not in source
        assert "sim-rustore-service-token" not in source and "sim-hms-client-secret" not in source
