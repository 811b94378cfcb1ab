"""Checks answers of the device API and the PassKit web service against docs/openapi.yaml: the
status is one the operation documents, and a JSON body validates against its schema. conftest.py
runs every answer the Python tests receive through it."""
import json
import pathlib
import re

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT = pathlib.Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml"


class OpenAPIChecker:
    def __init__(self, path=DOCUMENT):
        self.spec = yaml.safe_load(path.read_text())
        self.registry = Registry().with_resource("openapi", Resource.from_contents(self.spec, default_specification=DRAFT202012))
        self.routes = []
        for template, item in self.spec["paths"].items():
            pattern = "^" + re.sub(r"\{[^/}]+\}", "[^/]+", re.escape(template).replace(r"\{", "{").replace(r"\}", "}")) + "$"
            literals = sum(1 for part in template.split("/") if part and not part.startswith("{"))
            self.routes.append((re.compile(pattern), literals, template, item))
        self.routes.sort(key=lambda route: -route[1])
        self.checked = 0

    def documents(self, path):
        return any(pattern.match(path) for pattern, _, _, _ in self.routes)

    def _resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            node = self.registry.resolver(base_uri="openapi").lookup("openapi" + node["$ref"]).contents
        return node

    def problem(self, method, path, status, content_type, body):
        """Why the answer does not match the document, or None (also for calls it does not describe)."""
        for pattern, _, template, item in self.routes:
            if not pattern.match(path):
                continue
            operation = item.get(method.lower())
            if operation is None:
                return None  # a method the document does not offer: the test probes an error on purpose
            responses = operation["responses"]
            response = responses.get(str(status)) or responses.get("default")
            if response is None:
                return f"{method} {template}: status {status} is not documented ({sorted(responses)})"
            response = self._resolve(response)
            self.checked += 1
            media = (content_type or "").split(";")[0].strip()
            content = response.get("content")
            if not content or not body:
                return None
            if media not in content:
                return f"{method} {template} {status}: content type {media!r} is not documented ({sorted(content)})"
            if media != "application/json":
                return None
            schema = content[media].get("schema")
            if schema is None:
                return None
            try:
                document = json.loads(body)
            except ValueError as error:
                return f"{method} {template} {status}: the body is not JSON: {error}"
            validator = Draft202012Validator({"$ref": "openapi" + schema["$ref"]} if "$ref" in schema else schema, registry=self.registry)
            errors = sorted(validator.iter_errors(document), key=lambda e: e.path)
            if errors:
                return f"{method} {template} {status}: {errors[0].message} (body {body[:200]!r})"
            return None
        return None
