"""Shared fixtures: the running gateway (PIGEON_URL) and its database (PIGEON_DATABASE_URL)."""
import os
import subprocess
import uuid

import pytest
import requests
import zeep
from zeep.transports import Transport
from urllib.parse import urlsplit

from openapi_check import OpenAPIChecker


@pytest.fixture(scope="session")
def base_url():
    return os.environ.get("PIGEON_URL", "http://127.0.0.1:18080")


@pytest.fixture(scope="session")
def client(base_url):
    """A stock zeep client built from nothing but the gateway's WSDL."""
    return zeep.Client(f"{base_url}/pigeon/services/SBIInboundWebService?wsdl", transport=Transport(timeout=30))


@pytest.fixture
def unique():
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def subscribe():
    """Registers a device for a user directly in the database (the device API is another issue)."""
    url = os.environ["PIGEON_DATABASE_URL"]

    def register(user, platform="IOS"):
        sql = (
            "INSERT INTO devices (bank_client_id, user_id, user_folded, device_id, platform, push_token) "
            "VALUES ('bank', :'user', lower(:'user'), 'device-1', :'platform', 'abcdef0123456789')"
        )
        # psql interpolates :'user' (quoted safely) only in statements read from standard input.
        subprocess.run(
            ["psql", url, "-v", "ON_ERROR_STOP=1", "-v", f"user={user}", "-v", f"platform={platform}", "-q"],
            check=True, input=(sql + ";\n").encode(), capture_output=True,
        )
    return register


@pytest.fixture(scope="session", autouse=True)
def answers_match_the_openapi_document():
    """Every device-API and PassKit answer any test receives through requests is checked against
    docs/openapi.yaml: a documented status, and a body that validates against its schema."""
    checker = OpenAPIChecker()
    original = requests.Session.send

    def send(session, request, **kwargs):
        response = original(session, request, **kwargs)
        path = urlsplit(request.url).path
        if path.startswith("/api/v1/") or path.startswith("/passkit/"):
            problem = checker.problem(request.method, path, response.status_code, response.headers.get("Content-Type"), response.content)
            assert problem is None, f"the answer does not match docs/openapi.yaml: {problem}"
        return response

    requests.Session.send = send
    yield checker
    requests.Session.send = original
