"""Operators as persons in a real browser (headless Chromium, Selenium) against the console gateway
of scripts/test.sh: a viewer from the users file, a support engineer and an admin from the bank's
directory (a real slapd), a locked directory account. Each sees and may do what their role allows;
the audit trail lists who did what; the JSON API answers to the same accounts. Screenshots go to
PIGEON_SCREENSHOTS (docs/operating.md's come from here)."""
import time

import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from test_console import CONSOLE, LOADING, browser, heading, notice, register, shot, wait_for  # noqa: F401 (fixture)
from test_zeep_client import as_dict

VIEWER = ("vera", "viewer-password-2026")        # consoleUsersFile
SUPPORT = ("sam", "sam-directory-pw")            # the directory: pigeon-support
ADMIN = ("ada", "ada-directory-pw")              # the directory: pigeon-admins
LOCKED = ("lee", "lee-directory-pw")             # the directory: pigeon-admins, but locked


def sign_in_as(browser, account, expect="Overview"):
    browser.delete_all_cookies()
    browser.get(f"{CONSOLE}/console/login")
    browser.find_element(By.ID, "username").send_keys(account[0])
    browser.find_element(By.ID, "password").send_keys(account[1])
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    heading(browser, expect)


def buttons(browser):
    return [button.text for button in browser.find_elements(By.CSS_SELECTOR, "main button")]


def test_each_role_sees_and_does_what_it_may_and_the_trail_says_who(browser, client, base_url, unique):
    import os
    stub_url = os.environ.get("PIGEON_STUB_URL", "http://127.0.0.1:18088")
    user = unique("roles")
    register(base_url, stub_url, user, "ab" * 32)
    nid = unique("balance")
    message = {"id": nid, "recipients": [user], "timeout": 600, "pushContent": {"text": "Balance 1234567 RUB", "type": "UNIVERSAL"}}
    assert client.service.sendNotification(notification=message).status == "OK"
    deadline = time.time() + 30
    while time.time() < deadline and as_dict(client.service.getDeliveryStatus(id=nid).deliveryStatus)[user] != "SENT":
        time.sleep(0.2)

    # A viewer reads everything and changes nothing.
    sign_in_as(browser, VIEWER)
    assert "Sign out vera (viewer)" in browser.page_source
    assert "Configuration" not in [link.text for link in browser.find_elements(By.CSS_SELECTOR, "nav a")]
    browser.get(f"{CONSOLE}/console/notification?id={nid}")
    heading(browser, f"Notification {nid}")
    assert "1234567" not in browser.page_source and not any("Reveal" in text for text in buttons(browser))
    browser.get(f"{CONSOLE}/console/user?user={user}")
    heading(browser, f"User {user}")
    assert "iphone-15" in browser.page_source and "Revoke" not in buttons(browser)
    assert not any("test push" in text for text in buttons(browser))
    shot(browser, "roles-viewer")
    browser.get(f"{CONSOLE}/console/config")
    heading(browser, "Not allowed")
    assert "needs admin" in browser.page_source

    # A locked directory account is a wrong password, nothing more. The page before the click has
    # the same heading, so the answer's alert is what is waited for (CI once read the page before).
    sign_in_as(browser, LOCKED, expect="Sign in")
    assert wait_for(browser, "p.error") == "Wrong username or password."

    # Support reveals and sends a test push, and may not revoke.
    sign_in_as(browser, SUPPORT)
    browser.get(f"{CONSOLE}/console/notification?id={nid}")
    heading(browser, f"Notification {nid}")
    browser.find_element(By.XPATH, "//button[starts-with(text(), 'Reveal')]").click()
    # The same heading before and after the click: the revealed text is what is waited for.
    WebDriverWait(browser, 30, ignored_exceptions=LOADING).until(lambda driver: "Balance 1234567 RUB" in driver.page_source)
    browser.get(f"{CONSOLE}/console/user?user={user}")
    heading(browser, f"User {user}")
    assert "Revoke" not in buttons(browser)
    browser.find_element(By.XPATH, "//button[starts-with(text(), 'Send a test push')]").click()
    assert "iphone-15 SENT" in notice(browser)
    shot(browser, "roles-support-test-push")

    # The same accounts through the JSON API.
    api = requests.post(f"{CONSOLE}/console/api/v1/users/{user}/test-push", auth=SUPPORT, headers={"Content-Type": "application/json"}, timeout=30)
    assert api.status_code == 200 and api.json()["devices"][0]["state"] == "SENT", api.text
    refused = requests.post(f"{CONSOLE}/console/api/v1/notifications/{nid}/reveal", auth=VIEWER, headers={"Content-Type": "application/json"}, timeout=30)
    assert refused.status_code == 403 and refused.json()["error"] == "FORBIDDEN_ROLE"

    # The admin reads the trail: who did what, from where, and nothing revealed in it.
    sign_in_as(browser, ADMIN)
    assert "Configuration" in [link.text for link in browser.find_elements(By.CSS_SELECTOR, "nav a")]
    browser.find_element(By.LINK_TEXT, "Audit").click()
    heading(browser, "Audit")
    rows = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in browser.find_elements(By.CSS_SELECTOR, "main table tbody tr")]
    done = {(row[1], row[4], row[5]) for row in rows if len(row) == 8}
    assert ("sam", "reveal", nid) in done and ("sam", "test-push", user) in done, rows[:10]
    assert ("lee", "sign-in-failed", "form") in done and ("vera", "sign-in", "form") in done, rows[:10]
    assert "1234567" not in browser.page_source
    shot(browser, "audit")
    trail = requests.get(f"{CONSOLE}/console/api/v1/audit", auth=ADMIN, timeout=30).json()["entries"]
    assert trail[0]["operator"] == "ada" and trail[0]["action"] == "sign-in"
