"""The LTI 1.3 tool's parts that the hub (hub/lti.py) and `python -m grader lms push` (lms/push.py)
share, so both sides agree on one definition: AGS scopes and media types, the store's schema
(lti.sqlite: launches and nonces written by the hub, scores sent by lms push), the tool's key
and its JWKS, and the client of the LMS's token endpoint and AGS services."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from urllib.request import Request, urlopen

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"
SCOPE_LINEITEM, SCOPE_LINEITEM_READ = AGS + "lineitem", AGS + "lineitem.readonly"
SCOPE_RESULT_READ, SCOPE_SCORE = AGS + "result.readonly", AGS + "score"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
RESULTS_TYPE = "application/vnd.ims.lis.v2.resultcontainer+json"
ATTEMPTS = 5  # one try and four retries: waits of 1, 2, 4 and 8 x BACKOFF seconds
TIMEOUT = 30  # seconds per HTTP request

SCHEMA = """
create table if not exists launches (
    name text primary key,      -- hub user name = nbgrader student id
    sub text not null,          -- the LMS user id (LTI `sub`): AGS scores name the user by it
    role text not null,         -- student | instructor
    launched real not null,     -- unix time of the latest launch
    claims text not null        -- JSON: the AGS endpoint claim, context, resource link, name, email
);
create table if not exists nonces (nonce text primary key, expires real not null);
create table if not exists sent (
    lineitem text not null, sub text not null, student text not null, assignment text not null,
    score real not null, maximum real not null, sent_at text not null,
    primary key (lineitem, sub)
);
"""


class Store:
    """lti.sqlite: launches and used nonces (written by the hub), scores sent (by lms push)."""

    def __init__(self, path: Path | str):
        path = Path(path)
        fresh = not path.exists()
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        if fresh:
            os.chmod(path, 0o600)
        self.db.executescript(SCHEMA)

    def use_nonce(self, nonce: str, expires: float) -> bool:
        """True the first time a launch's nonce is seen; False for a replay."""
        self.db.execute("delete from nonces where expires < ?", (time.time(),))
        done = self.db.execute("insert or ignore into nonces values (?, ?)", (nonce, expires))
        return done.rowcount == 1

    def record_launch(self, name: str, sub: str, role: str, claims: dict) -> None:
        self.db.execute(
            "insert or replace into launches values (?, ?, ?, ?, ?)", (name, sub, role, time.time(), json.dumps(claims))
        )

    def launches(self) -> dict[str, dict]:
        rows = self.db.execute("select name, sub, role, launched, claims from launches")
        return {
            name: {"sub": sub, "role": role, "launched": launched, **json.loads(claims)}
            for name, sub, role, launched, claims in rows
        }

    def sent(self, lineitem: str, sub: str) -> tuple[float, float] | None:
        row = self.db.execute(
            "select score, maximum from sent where lineitem = ? and sub = ?", (lineitem, sub)
        ).fetchone()
        return tuple(row) if row else None

    def mark_sent(self, lineitem: str, sub: str, student: str, assignment: str, score: float, maximum: float) -> None:
        self.db.execute(
            "insert or replace into sent values (?, ?, ?, ?, ?, ?, ?)",
            (lineitem, sub, student, assignment, score, maximum, now()),
        )


# -- the tool's key ---------------------------------------------------------------------


def load_key(path: Path | str, create: bool = False):
    """The tool's RSA private key; with `create`, a new 2048-bit one when the file is missing."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = Path(path)
    if not path.exists() and create:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            out.write(pem)
    return serialization.load_pem_private_key(path.read_bytes(), password=None)


def public_jwk(key) -> dict:
    """The public half as a JWK with alg, use and a kid (its RFC 7638 thumbprint)."""
    from jwt.algorithms import RSAAlgorithm

    jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"), sort_keys=True)
    kid = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    return {**jwk, "alg": "RS256", "use": "sig", "kid": kid}


# -- HTTP and AGS -------------------------------------------------------------------------


class LMSError(Exception):
    def __init__(self, message: str, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


def with_path(url: str, suffix: str, **query: str) -> str:
    """`url` with `/suffix` appended to its path and `query` merged into its query string:
    Moodle's line item URLs end in `?type_id=N`, which must stay after the new segment."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") + "/" + suffix if suffix else parts.path
    params = parse_qsl(parts.query, keep_blank_values=True) + list(query.items())
    return urlunsplit(parts._replace(path=path, query=urlencode(params)))


def _http(method: str, url: str, headers: dict, body: bytes | None = None):
    """(status, headers, body) of one request; raises LMSError for what no retry can fix."""
    try:
        with urlopen(Request(url, data=body, method=method, headers=headers), timeout=TIMEOUT) as response:
            return response.status, response.headers, response.read()
    except HTTPError as error:
        return error.code, error.headers, error.read()
    except (URLError, OSError) as error:  # refused, reset, timed out: worth another try
        raise LMSError(f"{method} {url}: {getattr(error, 'reason', error)}", retryable=True) from error


def _next_link(headers) -> str | None:
    for part in (headers.get("Link") or "").split(","):
        if 'rel="next"' in part and "<" in part:
            return part[part.index("<") + 1 : part.index(">")]
    return None


class Platform:
    """The LMS's token endpoint and AGS services, with one access token per run."""

    def __init__(self, tool: dict, key, scopes: set[str], backoff: float):
        self.tool, self.key, self.scopes, self.backoff = tool, key, scopes, backoff
        self.token, self.expires = "", 0.0

    def assertion(self) -> str:
        import jwt

        now = int(time.time())
        claims = {
            "iss": self.tool["client_id"],
            "sub": self.tool["client_id"],
            "aud": self.tool["token_url"],
            "iat": now,
            "exp": now + 300,
            "jti": uuid.uuid4().hex,
        }
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": public_jwk(self.key)["kid"]})

    def access_token(self) -> str:
        if self.token and time.time() < self.expires:
            return self.token
        form = urlencode(
            {
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": self.assertion(),
                "scope": " ".join(sorted(self.scopes)),
            }
        )
        status, _, body = self._retrying(
            "POST",
            self.tool["token_url"],
            {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
            form.encode(),
        )
        if status != 200:
            raise LMSError(
                f"the LMS refused an access token ({status}): {body[:300].decode(errors='replace')}", retryable=False
            )
        answer = json.loads(body)
        granted = set((answer.get("scope") or " ".join(self.scopes)).split())
        if SCOPE_SCORE not in granted:
            raise LMSError(f"the LMS granted no score scope (granted: {' '.join(sorted(granted))})", False)
        self.scopes = granted
        self.token = answer["access_token"]
        self.expires = time.time() + int(answer.get("expires_in", 3600)) - 60
        return self.token

    def call(self, method: str, url: str, accept: str, payload: dict | None = None, content_type: str = ""):
        """An AGS request with the bearer token; a 401 fetches a new token once."""
        for renewed in (False, True):
            headers = {"Authorization": f"Bearer {self.access_token()}", "Accept": accept}
            body = None
            if payload is not None:
                headers["Content-Type"], body = content_type, json.dumps(payload).encode()
            status, answer_headers, answer = self._retrying(method, url, headers, body)
            if status == 401 and not renewed:
                self.token = ""
                continue
            if not 200 <= status < 300:
                raise LMSError(
                    f"{method} {url}: the LMS answered {status}: {answer[:300].decode(errors='replace')}",
                    retryable=False,
                )
            return answer_headers, (json.loads(answer) if answer.strip() else None)

    def _retrying(self, method: str, url: str, headers: dict, body: bytes | None):
        """One request, tried again after 1, 2, 4, 8 x backoff seconds on connection errors,
        429 and 5xx (or after the LMS's Retry-After, up to a minute)."""
        problem, wait = "", self.backoff
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(wait)
            wait = self.backoff * 2**attempt
            try:
                status, answer_headers, answer = _http(method, url, headers, body)
            except LMSError as error:
                problem = str(error)
                continue
            if status == 429 or status >= 500:
                problem = f"{method} {url}: the LMS answered {status}"
                retry_after = (answer_headers or {}).get("Retry-After", "")
                wait = min(float(retry_after), 60.0) if retry_after.isdigit() else wait
                continue
            return status, answer_headers, answer
        raise LMSError(f"{problem} ({ATTEMPTS} tries)", retryable=True)

    def line_item(self, container: str, assignment: str, maximum: float, create: bool) -> str:
        """The URL of the container's line item for `assignment` (resourceId), created when missing."""
        url = with_path(container, "", resource_id=assignment)
        while url:
            headers, items = self.call("GET", url, CONTAINER_TYPE)
            for item in items or []:
                if item.get("resourceId") == assignment:
                    return item["id"]
            url = _next_link(headers)
        if not create:
            raise LMSError(
                f"no line item for {assignment} in {container}, and the LMS allows the tool "
                "no lineitem scope to create one",
                retryable=False,
            )
        _, item = self.call(
            "POST",
            container,
            LINEITEM_TYPE,
            {"scoreMaximum": maximum, "label": assignment, "resourceId": assignment, "tag": "grade"},
            LINEITEM_TYPE,
        )
        return item["id"]

    def existing_line_item(self, container: str, wanted: str) -> str:
        """The URL of the line item the instructor made in the LMS, named by its URL, label or
        resourceId (an assignment the tool did not create); never creates one."""
        url, labels = with_path(container, ""), []
        while url:
            headers, items = self.call("GET", url, CONTAINER_TYPE)
            for item in items or []:
                if wanted in (item.get("id"), item.get("label"), item.get("resourceId")):
                    return item["id"]
                labels.append(repr(item.get("label")))
            url = _next_link(headers)
        raise LMSError(
            f"no line item {wanted!r} in {container} (its line items: {', '.join(labels) or 'none'})", retryable=False
        )

    def results(self, lineitem: str) -> dict[str, tuple[float, float]]:
        """What the LMS holds for the line item: LMS user id -> (score, maximum)."""
        found, url = {}, with_path(lineitem, "results")
        while url:
            headers, items = self.call("GET", url, RESULTS_TYPE)
            for item in items or []:
                if item.get("resultScore") is not None:
                    found[item["userId"]] = (float(item["resultScore"]), float(item.get("resultMaximum") or 1))
            url = _next_link(headers)
        return found


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
