"""A small LTI 1.3 platform (an "LMS") for the tests, written from 1EdTech's specifications:
LTI Core 1.3, Security Framework 1.0 and Assignment and Grade Services 2.0. It shares no code
with the tool (the hub): it has its own RSA key, and checks the tool only through what goes
over HTTP.

    python tests/lti_platform.py CONFIG.json

CONFIG names the tool registration and the course:

    {"port": 0, "client_id": "...", "deployment_id": "...",
     "tool": {"login_url": ..., "redirect_uris": [...], "jwks_url": ..., "target_link_uri": ...},
     "context": {"id": ..., "label": ..., "title": ...},
     "users": [{"sub": ..., "name": ..., "given_name": ..., "family_name": ..., "email": ...,
                "roles": [...], "custom": {"login_id": ...}, "lis": {"person_sourcedid": ...}}]}
    (custom and lis optional: the launch's custom and lis claims)

It prints one JSON line, {"url", "issuer", "login_url", "jwks_url", "token_url",
"lineitems"}, once it listens on 127.0.0.1, then serves:

- GET  /                     the course page: one "launch" link per user
- GET  /launch?user=SUB      the launch page: a form that starts the third-party initiated
                             login at the tool (iss, login_hint, target_link_uri,
                             lti_message_hint, client_id, lti_deployment_id); `tamper=`
                             makes a bad launch (wrong_key, expired, issuer, deployment,
                             no_roles, unknown_roles; login_issuer, login_deployment: a wrong
                             iss or deployment already in the login initiation)
- GET/POST /auth             the OIDC authorization endpoint: checks the tool's
                             authentication request, answers with a form that posts the
                             signed id_token and state to the registered redirect URI
- GET  /jwks                 the platform's public keys
- POST /token                client-credentials grant: the tool's JWT client assertion is
                             checked against the tool's JWKS (signature, iss = sub =
                             client id, aud, exp, a jti used once); answers a bearer token
- AGS: GET/POST the line items container (a Moodle-like URL with `?type_id=1`, which
  every AGS request must keep), GET a line item, POST its /scores, GET its /results;
  every score request is logged
- NRPS: GET /nrps/contexts/<id>/memberships[?rlid=...] the course's members, paged
- GET  /gradebook            the instructor's gradebook page (HTML)
- GET  /test/state           line items, results and the score log (JSON);
  POST /test/lineitem        {"label": ..., "scoreMaximum": ...}: a line item the instructor made
  POST /test/fail            {"match": "/scores", "status": 503, "count": 2}: the next
                             `count` requests whose path contains `match` fail
"""

from __future__ import annotations

import html
import json
import secrets
import sys
import threading
import time
import urllib.request
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/"
SCOPES = {AGS + "scope/lineitem", AGS + "scope/lineitem.readonly", AGS + "scope/result.readonly", AGS + "scope/score"}
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/"
NRPS_SCOPE = NRPS + "scope/contextmembership.readonly"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
PROGRESS = {
    "activityProgress": {"Initialized", "Started", "InProgress", "Submitted", "Completed"},
    "gradingProgress": {"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"},
}
PAGE = 2  # line items per page of the container: a tool must follow the Link header

# The roles of the platform's people (LTI's membership vocabulary), and one person as the
# users of CONFIG list them (the tests build their classes with these).
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TEACHING_ASSISTANT = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"


def person(sub: str, name: str, roles: list[str]) -> dict:
    first, last = name.split()
    return {
        "sub": sub,
        "name": name,
        "given_name": first,
        "family_name": last,
        "email": f"{first.lower()}@example.org",
        "roles": roles,
    }


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Platform:
    def __init__(self, config: dict):
        self.config = config
        self.key, self.kid = new_key(), "platform-key-1"
        self.other_key = new_key()  # signs the "wrong_key" launches, under the same kid
        self.lock = threading.Lock()
        self.launches: dict[str, dict] = {}  # lti_message_hint -> launch
        self.tokens: dict[str, tuple[set, float]] = {}
        self.jtis: set[str] = set()
        self.lineitems: list[dict] = []
        self.results: dict[tuple[str, str], dict] = {}  # (line item id, user id) -> latest score
        self.score_log: list[dict] = []
        self.failures: list[dict] = []
        self.url = ""

    # -- the launch ---------------------------------------------------------------------
    def user(self, sub: str) -> dict:
        return next(u for u in self.config["users"] if u["sub"] == sub)

    def id_token(self, launch: dict, nonce: str) -> str:
        user, tamper, now = self.user(launch["user"]), launch.get("tamper", ""), int(time.time())
        ctx = self.config["context"]
        claims = {
            "iss": self.url if tamper != "issuer" else "https://elsewhere.example.org",
            "aud": self.config["client_id"],
            "azp": self.config["client_id"],
            "sub": user["sub"],
            "iat": now if tamper != "expired" else now - 3600,
            "exp": now + 300 if tamper != "expired" else now - 3000,
            "nonce": nonce,
            "name": user.get("name", ""),
            "given_name": user.get("given_name", ""),
            "family_name": user.get("family_name", ""),
            "email": user.get("email", ""),
            CLAIM + "message_type": "LtiResourceLinkRequest",
            CLAIM + "version": "1.3.0",
            CLAIM + "deployment_id": self.config["deployment_id"] if tamper != "deployment" else "elsewhere-9",
            CLAIM + "target_link_uri": self.config["tool"]["target_link_uri"],
            CLAIM + "resource_link": {"id": "link-jupyterhub", "title": "JupyterHub"},
            CLAIM + "roles": user["roles"]
            if tamper != "unknown_roles"
            else ["http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"],
            CLAIM + "context": {
                "id": ctx["id"],
                "label": ctx["label"],
                "title": ctx["title"],
                "type": ["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"],
            },
            CLAIM + "tool_platform": {"guid": "test-platform", "name": "Test LMS", "product_family_code": "test"},
            AGS + "claim/endpoint": {"scope": sorted(SCOPES), "lineitems": self.lineitems_url()},
            NRPS + "claim/namesroleservice": {
                "context_memberships_url": f"{self.url}/nrps/contexts/{ctx['id']}/memberships",
                "service_versions": ["2.0"],
            },
        }
        # Canvas's custom fields (login_id=$Canvas.user.loginId) and the SIS id, for users that have them.
        claims.update({CLAIM + part: user[part] for part in ("custom", "lis") if user.get(part)})
        if tamper == "no_roles":
            del claims[CLAIM + "roles"]
        key = self.other_key if tamper == "wrong_key" else self.key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid})

    def lineitems_url(self) -> str:
        return f"{self.url}/ags/contexts/{self.config['context']['id']}/lineitems?type_id=1"

    def jwks(self) -> dict:
        return {
            "keys": [
                {
                    **RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True),
                    "kid": self.kid,
                    "alg": "RS256",
                    "use": "sig",
                }
            ]
        }

    # -- the token endpoint -------------------------------------------------------------
    def grant(self, form: dict) -> tuple[int, dict]:
        if form.get("grant_type") != "client_credentials" or form.get("client_assertion_type") != ASSERTION_TYPE:
            return 400, {"error": "unsupported_grant_type"}
        assertion = form.get("client_assertion", "")
        try:
            header = jwt.get_unverified_header(assertion)
            with urllib.request.urlopen(self.config["tool"]["jwks_url"], timeout=10) as answer:
                keys = json.load(answer)["keys"]
            jwk = next(k for k in keys if k.get("kid") == header.get("kid"))
            claims = jwt.decode(
                assertion,
                RSAAlgorithm.from_jwk(json.dumps(jwk)),
                algorithms=["RS256"],
                audience=f"{self.url}/token",
                options={"require": ["iss", "sub", "exp", "iat", "jti"]},
            )
        except (StopIteration, jwt.PyJWTError, OSError, ValueError) as error:
            return 401, {"error": "invalid_client", "error_description": str(error)}
        if claims["iss"] != self.config["client_id"] or claims["sub"] != self.config["client_id"]:
            return 401, {"error": "invalid_client", "error_description": "iss and sub must be the client id"}
        with self.lock:
            if claims["jti"] in self.jtis:
                return 401, {"error": "invalid_client", "error_description": "jti already used"}
            self.jtis.add(claims["jti"])
            scopes = set(form.get("scope", "").split()) & (SCOPES | {NRPS_SCOPE})
            if not scopes:
                return 400, {"error": "invalid_scope"}
            token = secrets.token_urlsafe(24)
            self.tokens[token] = (scopes, time.time() + 3600)
        return 200, {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": " ".join(sorted(scopes)),
        }

    def scopes_of(self, authorization: str) -> set:
        token = authorization[len("Bearer ") :] if authorization.startswith("Bearer ") else ""
        scopes, expires = self.tokens.get(token, (set(), 0))
        return scopes if time.time() < expires else set()

    # -- gradebook page -----------------------------------------------------------------
    def gradebook_html(self) -> str:
        names = {u["sub"]: u.get("name") or u["sub"] for u in self.config["users"]}
        rows = []
        for item in self.lineitems:
            for (line, user), result in sorted(self.results.items()):
                if line == item["id"]:
                    rows.append(
                        f'<tr data-user="{html.escape(user)}" data-item="{html.escape(item["label"])}">'
                        f"<td>{html.escape(names.get(user, user))}</td><td>{html.escape(item['label'])}</td>"
                        f'<td class="score">{result["scoreGiven"]:g} / {result["scoreMaximum"]:g}</td>'
                        f"<td>{html.escape(result.get('comment', ''))}</td></tr>"
                    )
        return (
            "<html><head><title>Gradebook</title></head><body><h1>Gradebook</h1><table id='gradebook'>"
            "<tr><th>Student</th><th>Assignment</th><th>Score</th><th>Comment</th></tr>"
            + "".join(rows)
            + "</table></body></html>"
        )


def form_page(title: str, action: str, fields: dict, auto: bool, button: str) -> str:
    inputs = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(str(v))}">' for k, v in fields.items()
    )
    script = "<script>document.forms[0].submit()</script>" if auto else ""
    return (
        f"<html><head><title>{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>"
        f'<form method="post" action="{html.escape(action)}">{inputs}'
        f'<button type="submit" id="launch">{html.escape(button)}</button></form>{script}</body></html>'
    )


class Handler(BaseHTTPRequestHandler):
    platform: Platform

    def log_message(self, *args):  # quiet: the test reads state, not logs
        pass

    def answer(self, status: int, body, content_type: str = "application/json", headers: dict | None = None):
        data = (json.dumps(body) if not isinstance(body, str) else body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def params(self) -> tuple[str, dict, bytes]:
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if self.command == "POST" else b""
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            query.update({k: v[0] for k, v in parse_qs(body.decode()).items()})
        return parts.path, query, body

    def do_GET(self):
        self.route()

    def do_POST(self):
        self.route()

    def failure(self, path: str) -> int:
        with self.platform.lock:
            for rule in self.platform.failures:
                if rule["match"] in path and rule["count"] > 0:
                    rule["count"] -= 1
                    return rule["status"]
        return 0

    def route(self):
        p = self.platform
        path, query, body = self.params()
        if path.startswith("/ags/") and (status := self.failure(path)):
            return self.answer(status, {"error": "injected failure"})
        if path == "/":
            links = "".join(
                f'<li><a class="launch" data-user="{html.escape(u["sub"])}" '
                f'href="/launch?user={html.escape(u["sub"])}">JupyterHub as {html.escape(u["name"])}</a></li>'
                for u in p.config["users"]
            )
            return self.answer(
                200,
                f"<html><body><h1>{html.escape(p.config['context']['title'])}</h1><ul>{links}</ul></body></html>",
                "text/html",
            )
        if path == "/launch":
            hint = secrets.token_urlsafe(12)
            with p.lock:
                p.launches[hint] = {"user": query["user"], "tamper": query.get("tamper", "")}
            fields = {
                "iss": p.url if query.get("tamper") != "login_issuer" else "https://elsewhere.example.org",
                "login_hint": query["user"],
                "target_link_uri": p.config["tool"]["target_link_uri"],
                "lti_message_hint": hint,
                "client_id": p.config["client_id"],
                "lti_deployment_id": p.config["deployment_id"]
                if query.get("tamper") != "login_deployment"
                else "elsewhere-9",
            }
            return self.answer(
                200,
                form_page(
                    p.config["context"]["title"],
                    p.config["tool"]["login_url"],
                    fields,
                    auto=False,
                    button="Open JupyterHub",
                ),
                "text/html",
            )
        if path == "/auth":
            return self.authorize(query)
        if path == "/jwks":
            return self.answer(200, p.jwks())
        if path == "/token" and self.command == "POST":
            return self.answer(*p.grant(query), headers={"Cache-Control": "no-store"})
        if path == "/gradebook":
            return self.answer(200, p.gradebook_html(), "text/html")
        if path == "/test/state":
            with p.lock:
                return self.answer(
                    200,
                    {
                        "lineitems": p.lineitems,
                        "score_log": p.score_log,
                        "results": [dict(v, lineitem=k[0]) for k, v in p.results.items()],
                    },
                )
        if path == "/test/lineitem" and self.command == "POST":  # one the instructor made in the LMS
            with p.lock:
                base = f"{p.url}/ags/contexts/{p.config['context']['id']}/lineitems"
                item = {**json.loads(body), "id": f"{base}/{len(p.lineitems) + 1}/lineitem?type_id=1"}
                p.lineitems.append(item)
            return self.answer(201, item)
        if path == "/test/fail" and self.command == "POST":
            with p.lock:
                p.failures = [json.loads(body)] if body else []
            return self.answer(200, {"ok": True})
        if path.startswith("/ags/contexts/"):
            return self.ags(path, query, body)
        if path == f"/nrps/contexts/{p.config['context']['id']}/memberships":
            return self.memberships(query)
        return self.answer(404, {"error": "not found"})

    def memberships(self, query: dict):
        """NRPS 2.0: the course's members, PAGE at a time (a Link header names the next page); with
        rlid (a resource link), each member's launch message claims, custom ones included."""
        if NRPS_SCOPE not in self.platform.scopes_of(self.headers.get("Authorization", "")):
            return self.answer(401 if not self.headers.get("Authorization") else 403, {"error": "scope"})
        users, start = self.platform.config["users"], int(query.get("page", "0"))
        members = []
        for user in users[start : start + PAGE]:
            member = {k: user[k] for k in ("name", "given_name", "family_name", "email", "roles")}
            member["user_id"], member["status"] = user["sub"], "Active"
            if user.get("lis"):
                member["lis_person_sourcedid"] = user["lis"]["person_sourcedid"]
            if query.get("rlid") and user.get("custom"):
                member["message"] = [
                    {CLAIM + "message_type": "LtiResourceLinkRequest", CLAIM + "custom": user["custom"]}
                ]
            members.append(member)
        headers = {}
        if start + PAGE < len(users):
            following = urlencode({**query, "page": start + PAGE})
            headers["Link"] = f'<{self.platform.url}{urlsplit(self.path).path}?{following}>; rel="next"'
        context = {"id": self.platform.config["context"]["id"]}
        body = {"id": self.platform.url + self.path, "context": context, "members": members}
        return self.answer(200, body, "application/vnd.ims.lti-nrps.v2.membershipcontainer+json", headers)

    def authorize(self, q: dict):
        """Security Framework 1.0, 5.1.1.2 and 5.1.1.3: check the authentication request, answer by form post."""
        p = self.platform
        tool = p.config["tool"]
        if q.get("redirect_uri") not in tool["redirect_uris"] or q.get("client_id") != p.config["client_id"]:
            return self.answer(400, "unknown client_id or unregistered redirect_uri", "text/plain")
        problems = [
            name
            for name, wanted in (
                ("scope", "openid"),
                ("response_type", "id_token"),
                ("response_mode", "form_post"),
                ("prompt", "none"),
            )
            if q.get(name) != wanted
        ]
        launch = p.launches.get(q.get("lti_message_hint", ""))
        if problems or not q.get("nonce") or not q.get("state") or not launch or launch["user"] != q.get("login_hint"):
            return self.answer(
                400, f"invalid authentication request: {problems or 'hints, nonce or state'}", "text/plain"
            )
        token = p.id_token(launch, q["nonce"])
        return self.answer(
            200,
            form_page(
                "Launching", q["redirect_uri"], {"id_token": token, "state": q["state"]}, auto=True, button="Continue"
            ),
            "text/html",
        )

    def ags(self, path: str, query: dict, body: bytes):
        """AGS 2.0: line items, scores and results, under a bearer token with the right scope."""
        p = self.platform
        scopes = p.scopes_of(self.headers.get("Authorization", ""))
        if not scopes:
            return self.answer(401, {"error": "invalid or missing bearer token"})
        if query.get("type_id") != "1":  # the query string of the URL the platform gave must be kept
            return self.answer(404, {"error": "no handler found (type_id missing)"})
        segments = path.strip("/").split("/")  # ags contexts <ctx> lineitems [<n> lineitem [scores|results]]
        if len(segments) < 4 or segments[2] != p.config["context"]["id"] or segments[3] != "lineitems":
            return self.answer(404, {"error": "unknown context"})
        base = f"{p.url}/ags/contexts/{segments[2]}/lineitems"
        if len(segments) == 4:
            if self.command == "GET":
                if not scopes & {AGS + "scope/lineitem", AGS + "scope/lineitem.readonly"}:
                    return self.answer(403, {"error": "scope"})
                items = [
                    i
                    for i in p.lineitems
                    if all(
                        i.get(field) == query[param]
                        for param, field in (
                            ("resource_id", "resourceId"),
                            ("resource_link_id", "resourceLinkId"),
                            ("tag", "tag"),
                        )
                        if param in query
                    )
                ]
                start = int(query.get("from", 0))
                headers = {}
                if start + PAGE < len(items):
                    rest = {k: v for k, v in query.items() if k != "from"}
                    headers["Link"] = f'<{base}?{urlencode({**rest, "from": start + PAGE})}>; rel="next"'
                return self.answer(
                    200, items[start : start + PAGE], "application/vnd.ims.lis.v2.lineitemcontainer+json", headers
                )
            if AGS + "scope/lineitem" not in scopes:
                return self.answer(403, {"error": "scope"})
            if self.headers.get("Content-Type") != "application/vnd.ims.lis.v2.lineitem+json":
                return self.answer(415, {"error": "content type"})
            item = json.loads(body)
            if not item.get("label") or not float(item.get("scoreMaximum") or 0) > 0:
                return self.answer(400, {"error": "label and a positive scoreMaximum are required"})
            with p.lock:
                item["id"] = f"{base}/{len(p.lineitems) + 1}/lineitem?type_id=1"
                p.lineitems.append(item)
            return self.answer(201, item, "application/vnd.ims.lis.v2.lineitem+json")
        item = next((i for i in p.lineitems if urlsplit(i["id"]).path == "/" + "/".join(segments[:6])), None)
        if item is None or len(segments) < 6 or segments[5] != "lineitem":
            return self.answer(404, {"error": "no such line item"})
        if len(segments) == 6:
            return self.answer(200, item, "application/vnd.ims.lis.v2.lineitem+json")
        if segments[6] == "results" and self.command == "GET":
            if AGS + "scope/result.readonly" not in scopes:
                return self.answer(403, {"error": "scope"})
            return self.answer(
                200,
                [
                    {
                        "id": f"{item['id']}&result={user}",
                        "scoreOf": item["id"],
                        "userId": user,
                        "resultScore": r["scoreGiven"],
                        "resultMaximum": r["scoreMaximum"],
                        "comment": r.get("comment", ""),
                    }
                    for (line, user), r in p.results.items()
                    if line == item["id"]
                ],
                "application/vnd.ims.lis.v2.resultcontainer+json",
            )
        if segments[6] == "scores" and self.command == "POST":
            return self.score(item, scopes, body)
        return self.answer(404, {"error": "not found"})

    def score(self, item: dict, scopes: set, body: bytes):
        p = self.platform
        if AGS + "scope/score" not in scopes:
            return self.answer(403, {"error": "scope"})
        if self.headers.get("Content-Type") != "application/vnd.ims.lis.v1.score+json":
            return self.answer(415, {"error": "content type"})
        score = json.loads(body)
        students = {u["sub"] for u in p.config["users"] if any(r.endswith("#Learner") for r in u["roles"])}
        if score.get("userId") not in students:
            return self.answer(422, {"error": f"{score.get('userId')!r} is not a learner of this course"})
        bad = [k for k, allowed in PROGRESS.items() if score.get(k) not in allowed]
        try:
            stamp = datetime.fromisoformat(score["timestamp"])
            given, maximum = float(score["scoreGiven"]), float(score["scoreMaximum"])
        except (KeyError, TypeError, ValueError):
            bad.append("timestamp, scoreGiven and scoreMaximum")
        if bad or given < 0 or maximum <= 0:
            return self.answer(400, {"error": f"invalid score: {bad}"})
        with p.lock:
            p.score_log.append({**score, "lineitem": item["id"]})
            key = (item["id"], score["userId"])
            previous = p.results.get(key)
            # AGS 2.0: a score older than the one on record does not change the result.
            if not previous or datetime.fromisoformat(previous["timestamp"]) <= stamp:
                p.results[key] = score
        return self.answer(200, {})


def main() -> None:
    config = json.loads(open(sys.argv[1], encoding="utf-8").read())
    platform = Platform(config)
    handler = type("BoundHandler", (Handler,), {"platform": platform})
    server = ThreadingHTTPServer(("127.0.0.1", int(config.get("port", 0))), handler)
    platform.url = f"http://127.0.0.1:{server.server_address[1]}"
    print(
        json.dumps(
            {
                "url": platform.url,
                "issuer": platform.url,
                "login_url": f"{platform.url}/auth",
                "jwks_url": f"{platform.url}/jwks",
                "token_url": f"{platform.url}/token",
                "lineitems": platform.lineitems_url(),
            }
        ),
        flush=True,
    )
    server.serve_forever()


if __name__ == "__main__":
    main()
