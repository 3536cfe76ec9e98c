"""Sign-in from an LMS for `make hub`: LTI 1.3, through jupyterhub-ltiauthenticator.

hub/jupyterhub_config.py picks CourseLTIAuthenticator when hub/serve.py found an LTI
configuration (docs/lti.md); without one the hub keeps its own login (PAM).

A launch (LTI Core 1.3, Security Framework 1.0): the LMS sends the browser to
/hub/lti13/oauth_login (login initiation), the hub sends it on to the LMS's OIDC
authorization URL, and the LMS posts a signed id_token to /hub/lti13/oauth_callback.
The package's handlers check the state and nonce cookies and the token's claims; this
module adds what the package leaves out and a class on a hub needs:

- the login initiation must name the configured platform (iss), client id and deployment;
- the token is checked step by step, so that every refusal says what was wrong: signature,
  expiry, issuer, audience, deployment, roles; a nonce is accepted once (a replayed launch
  is refused even with the browser's cookies), recorded in the launch store;
- a refused launch gets the hub's error page with the reason and never a session;
- each person gets one hub user name, for good, with a Linux account created at the first
  launch: their login id (Canvas's, the name its bulk download uses too; username_claim) when
  it is a free, valid account name, else one from the LMS user id (`sub`: `lti-<sub>` for a
  numeric id, `lti-x<hash>` otherwise); LMS roles
  decide the group: instructors and teaching assistants get the Formgrader service's group,
  learners the students'; instructors are the hub's admins (its admin page), TAs not;
  a launch with no known course role is refused;
- each launch is recorded (grader/lms/lti_tool.py's Store): the AGS endpoint claim, so that
  `python -m grader lms push` can send grades back; the name and email, for Formgrader;
- the tool's public key at /hub/lti13/jwks (the LMS checks `lms push`'s tokens with it), and
  a Canvas JSON configuration at /hub/lti13/config.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pwd
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import jwt
from jupyterhub.handlers import BaseHandler
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.error import ValidationError
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
from ltiauthenticator.lti13.validator import LTI13LaunchValidator
from ltiauthenticator.utils import convert_request_to_dict
from nbgrader.api import Gradebook
from tornado.web import HTTPError
from traitlets import Dict, List, Set, Unicode

from grader.lms import lti_tool as lms

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
LIS = "http://purl.imsglobal.org/vocab/lis/v2/"
# Context roles (LTI 1.3 section A.2.2) and their sub-roles, plus the LMS's administrators.
INSTRUCTOR_ROLES = (
    LIS + "membership#Instructor",
    LIS + "membership#Administrator",
    LIS + "membership#ContentDeveloper",
    LIS + "membership/Instructor#",
    LIS + "institution/person#Administrator",
    LIS + "system/person#Administrator",
)
LEARNER_ROLES = (LIS + "membership#Learner", LIS + "membership/Learner#")
# A teaching assistant (an Instructor sub-role, LTI 1.3 section A.2.3.1): the hub's `ta`, as
# `make hub-member ROLE=ta` makes one: Formgrader, not the hub's admin page.
TA_ROLES = (LIS + "membership/Instructor#TeachingAssistant", LIS + "membership#TeachingAssistant")
REFUSED = "LTI launch refused"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
NUMERIC = re.compile(r"^[0-9]{1,27}$")
# A person's own name on the hub: what Linux (useradd) takes and hub/serve.py's roster allows.
ACCOUNT = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
# Where each name source lives in a launch (username_claim): Canvas puts the login id (its
# bulk download's "SIS Login ID") in a custom claim when the developer key's custom fields
# say login_id=$Canvas.user.loginId; the SIS id is LIS's person_sourcedid.
NAME_CLAIMS = {"login_id": (CLAIM + "custom", "login_id"), "sis_id": (CLAIM + "lis", "person_sourcedid")}
LEEWAY = 30  # seconds of clock difference allowed between the LMS and the hub


def refuse(message: str, status: int = 400) -> HTTPError:
    return HTTPError(
        status,
        message + " Open the course page in your LMS and launch the hub from there again; "
        "if this keeps happening, tell your instructor.",
        reason=REFUSED,
    )


def hub_name(sub: str) -> str:
    """A stable hub (and Linux) user name for an LMS user id."""
    if NUMERIC.match(sub):
        return f"lti-{sub}"
    return "lti-x" + hashlib.sha256(sub.encode()).hexdigest()[:16]


def claimed_name(claims: dict, source: str) -> str:
    """The name `source` (username_claim) gives, if it is one the hub can use as it is; else ''."""
    if source not in NAME_CLAIMS:
        return ""
    claim, key = NAME_CLAIMS[source]
    value = (claims.get(claim) or {}).get(key)
    if not isinstance(value, str) or not ACCOUNT.match(value) or value.startswith("lti-"):
        return ""  # lti-... is the opaque names' own: nobody may take one by their login id
    return value


def choose_name(claims: dict, source: str, launches: dict, known_names) -> tuple[str, str]:
    """One name per person, for good (at a launch and in `hub/members.py roster`): the name an earlier
    launch or the roster gave this LMS user; else the `source` claim's value if nobody has it (no
    roster account, no other LMS user, no Linux account: a login id `root` never becomes root);
    else the opaque lti-<sub> name. Also why the claim's value was not used, or ''."""
    sub = claims["sub"]
    earlier = [name for name, launch in launches.items() if launch["sub"] == sub]
    if earlier:
        return max(earlier, key=lambda name: launches[name]["launched"]), ""
    if source not in NAME_CLAIMS:
        return hub_name(sub), ""
    wanted = claimed_name(claims, source)
    if not wanted:
        return hub_name(sub), f"no {source} that is an account name"
    if wanted in known_names or wanted in launches:
        return hub_name(sub), f"{source} {wanted!r} is another's"
    try:
        pwd.getpwnam(wanted)
        return hub_name(sub), f"{source} {wanted!r} is an account of this machine"
    except KeyError:
        return wanted, ""


def course_role(roles: list) -> str:
    """'instructor', 'ta', 'student' or '' (no role this hub knows) from the roles claim."""
    roles = [r for r in roles if isinstance(r, str)]
    if any(r.startswith(INSTRUCTOR_ROLES) and r not in TA_ROLES for r in roles):
        return "instructor"
    if any(r in TA_ROLES for r in roles):
        return "ta"
    if any(r.startswith(LEARNER_ROLES) for r in roles):
        return "student"
    return ""


class LoginInitHandler(LTI13LoginInitHandler):
    """Step 1, third-party initiated login: only from the configured platform and deployment."""

    def post(self):
        auth = self.authenticator
        args = convert_request_to_dict(self.request.arguments)
        if not args.get("iss"):
            raise refuse("This hub signs people in only through their LMS: there is no login form.")
        if args.get("iss") != auth.issuer:
            raise refuse(
                f"The launch comes from an unknown platform (issuer {args.get('iss')!r}); this hub "
                f"accepts launches from {auth.issuer} only."
            )
        if args.get("client_id") and args["client_id"] not in auth.client_id:
            raise refuse(f"The launch names another tool (client id {args['client_id']!r}).", 401)
        if args.get("lti_deployment_id") and args["lti_deployment_id"] not in auth.deployment_ids:
            raise refuse(f"The launch comes from an unknown deployment ({args['lti_deployment_id']!r}).")
        if not args.get("client_id") and len(auth.client_id) == 1:
            self.request.arguments["client_id"] = [next(iter(auth.client_id)).encode()]
        return super().post()

    get = post

    def _set_oauth_cookie(self, key: str, value):
        # The LMS posts the id_token from its own site: over HTTPS the state and nonce
        # cookies must be SameSite=None to come along with that cross-site POST.
        extra = (
            {"samesite": "None", "secure": True} if self.authenticator.get_uri_scheme(self.request) == "https" else {}
        )
        self._set_cookie(key, value, expires_days=1, httponly=True, encrypted=True, **extra)


class CallbackHandler(LTI13CallbackHandler):
    """Step 3, the authentication response: every check names what failed; no session unless all pass."""

    async def post(self):
        claims = self.decode_and_validate_launch_request()
        self.authenticator.admit(claims)
        user = await self.login_user(claims)
        if user is None:
            raise refuse("The hub did not accept this account.", 403)
        await self.redirect_to_next_url(user)

    def decode_and_validate_launch_request(self) -> dict:
        auth = self.authenticator
        args = convert_request_to_dict(self.request.arguments)
        if not args.get("id_token") or not args.get("state"):
            raise refuse("The LMS sent no id_token or state.")
        try:
            self.check_state()
        except HTTPError:
            raise refuse(
                "The launch's state does not match the one this browser started with (was the "
                "launch started in another browser, or are cookies blocked for this site?)."
            ) from None
        token = args["id_token"]
        try:
            peek = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise refuse("The id_token is not a JSON Web Token.") from None
        if peek.get("iss") != auth.issuer:
            raise refuse(
                f"The launch comes from an unknown platform (issuer {peek.get('iss')!r}); this hub "
                f"accepts launches from {auth.issuer} only."
            )
        try:
            key = auth.platform_keys.get_signing_key_from_jwt(token).key
            claims = jwt.decode(
                token,
                key,
                algorithms=auth.jwks_algorithms,
                audience=list(auth.client_id),
                issuer=auth.issuer,
                leeway=LEEWAY,
                options={"require": ["exp", "iat", "sub", "nonce"]},
            )
        except jwt.ExpiredSignatureError:
            raise refuse("The launch has expired (its id_token's exp time has passed).") from None
        except jwt.InvalidAudienceError:
            raise refuse("The launch is meant for another tool (audience).", 401) from None
        except (jwt.InvalidSignatureError, jwt.PyJWKClientError):
            raise refuse("The launch's signature does not match the platform's public keys (JWKS).", 401) from None
        except jwt.PyJWTError as error:
            raise refuse(f"The launch's id_token is not valid ({error}).") from None
        if not isinstance(claims.get(CLAIM + "roles"), list):
            raise refuse("The launch carries no roles claim, so the hub cannot tell a student from an instructor.")
        validator = LTI13LaunchValidator(parent=self.app)
        try:
            validator.validate_id_token(claims)
            validator.validate_azp_claim(claims, auth.client_id)
        except ValidationError as error:
            raise refuse(f"The launch is not a valid LTI 1.3 resource link launch ({error}).") from None
        try:
            self.check_nonce(claims)
        except HTTPError:
            raise refuse("The launch's nonce does not match the one this browser started with.") from None
        return claims


class ConfigHandler(BaseHandler):
    """A Canvas developer key's JSON configuration ("Enter URL" or "Paste JSON" method)."""

    async def get(self):
        auth = self.authenticator
        base = f"{auth.get_uri_scheme(self.request)}://{self.request.host}{self.hub.base_url}"
        self.set_header("Content-Type", "application/json")
        self.write(
            json.dumps(
                {
                    "title": auth.tool_name,
                    "description": auth.tool_description,
                    "oidc_initiation_url": base + "lti13/oauth_login",
                    "target_link_uri": base.rstrip("/"),
                    "public_jwk_url": base + "lti13/jwks",
                    # The login id in every launch: the hub names people by it (username_claim).
                    "custom_fields": {"login_id": "$Canvas.user.loginId"},
                    "scopes": sorted(
                        {lms.SCOPE_LINEITEM, lms.SCOPE_LINEITEM_READ, lms.SCOPE_RESULT_READ, lms.SCOPE_SCORE}
                    ),
                    "extensions": [
                        {
                            "platform": "canvas.instructure.com",
                            "privacy_level": "public",
                            "settings": {
                                "placements": [
                                    {
                                        "placement": "course_navigation",
                                        "message_type": "LtiResourceLinkRequest",
                                        "target_link_uri": base.rstrip("/"),
                                        "windowTarget": "_blank",
                                    }
                                ]
                            },
                        }
                    ],
                },
                indent=1,
            )
        )


class JWKSHandler(BaseHandler):
    """The tool's public key set, for the LMS to check `lms push`'s client assertions."""

    async def get(self):
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps({"keys": [lms.public_jwk(self.authenticator.tool_key)]}))


class CourseLTIAuthenticator(LTI13Authenticator):
    login_handler = LoginInitHandler
    callback_handler = CallbackHandler
    config_handler = ConfigHandler

    deployment_ids = Set(Unicode(), config=True, help="The deployment ids launches may come from.")
    store_path = Unicode(config=True, help="lti.sqlite: launches and used nonces (grader/lms/lti_tool.py's Store).")
    key_path = Unicode(config=True, help="The tool's private key (PEM); its public half is served as JWKS.")
    groups = Dict(List(Unicode()), config=True, help="Hub groups of each course role: {'instructor': [...], ...}.")
    gradebook_url = Unicode(config=True, help="The course's gradebook, for the students' names and emails.")
    known_names = List(Unicode(), config=True, help="Roster accounts an LTI name must not take over.")
    username_claim = Unicode(
        "login_id",
        config=True,
        help="Where a person's hub name comes from: login_id (Canvas's login id, a custom claim), "
        "sis_id (LIS person_sourcedid) or sub (the opaque LMS id: lti-<sub>). A value that is not a "
        "valid account name, or is taken, falls back to the opaque name.",
    )

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.store = lms.Store(self.store_path)
        self.tool_key = lms.load_key(self.key_path)
        self.platform_keys = jwt.PyJWKClient(self.jwks_endpoint, cache_keys=True, lifespan=300, timeout=10)
        self.gradebook_writer = ThreadPoolExecutor(1, thread_name_prefix="lti-gradebook")

    def get_handlers(self, app):
        return super().get_handlers(app) + [("/lti13/jwks", JWKSHandler)]

    def admit(self, claims: dict) -> None:
        """The checks after the signature: deployment, course role, first use of the nonce."""
        deployment = claims.get(CLAIM + "deployment_id")
        if deployment not in self.deployment_ids:
            raise refuse(f"The launch comes from an unknown deployment ({deployment!r}).")
        if not course_role(claims.get(CLAIM + "roles") or []):
            raise refuse(
                "The launch carries no course role this hub knows (a Learner or an Instructor of "
                "the course), so the hub cannot tell a student from an instructor.",
                403,
            )
        if not self.store.use_nonce(claims["nonce"], float(claims["exp"]) + 600):
            raise refuse(
                "This launch was already used once (its nonce was seen before): a replayed launch "
                "never signs anyone in."
            )

    def name_for(self, claims: dict) -> str:
        name, problem = choose_name(claims, self.username_claim, self.store.launches(), self.known_names)
        if problem:
            self.log.warning("LTI user %s: %s; named %s", claims["sub"], problem, name)
        return name

    async def authenticate(self, handler, data=None):
        claims = data or {}
        name, role = self.name_for(claims), course_role(claims[CLAIM + "roles"])
        if name in self.known_names:
            raise refuse(f"The LMS user id maps to {name}, an account of the hub's roster.", 403)
        await asyncio.to_thread(self.ensure_account, name)
        ags = claims.get(lms.AGS_CLAIM) or {}
        context = claims.get(CLAIM + "context") or {}
        record = {
            "ags": ags,
            "context": context,
            "resource_link": claims.get(CLAIM + "resource_link") or {},
            "nrps": claims.get(NRPS_CLAIM) or {},  # the course's member list (members.py roster)
            "deployment_id": claims.get(CLAIM + "deployment_id"),
            "name": claims.get("name", ""),
            "given_name": claims.get("given_name", ""),
            "family_name": claims.get("family_name", ""),
            "email": claims.get("email", ""),
        }
        before = self.store.launches().get(name)
        self.store.record_launch(name, claims["sub"], role, record)
        self.log.info(
            "LTI launch: %s (LMS user %s, %s) from %s",
            name,
            claims["sub"],
            role,
            context.get("title") or context.get("id") or "?",
        )
        if (
            role == "student"
            and self.gradebook_url
            and (not before or any(before.get(k) != record[k] for k in ("given_name", "family_name", "email")))
        ):
            self.gradebook_writer.submit(self.add_to_gradebook, name, claims["sub"], record)
        return {
            "name": name,
            "groups": self.groups[role],
            "admin": role == "instructor",  # the hub's admin page, as a roster instructor has; set at every launch
            "auth_state": {"sub": claims["sub"], "role": role, "ags": ags},
        }

    def ensure_account(self, name: str) -> None:
        """The user's Linux account (the spawner runs the server as it), created at the first launch;
        without a password: it signs in only through the LMS."""
        try:
            pwd.getpwnam(name)
            return
        except KeyError:
            pass
        done = subprocess.run(
            ["useradd", "--create-home", "--user-group", "--shell", "/bin/bash", name], capture_output=True, text=True
        )
        if done.returncode != 0 and "already exists" not in done.stderr:
            self.log.error("useradd %s failed: %s", name, done.stderr.strip())
            raise refuse("The hub could not create an account for you.", 500)
        os.chmod(pwd.getpwnam(name).pw_dir, 0o700)

    def add_to_gradebook(self, name: str, sub: str, record: dict) -> None:
        """The student's name, email and LMS id into the gradebook, for Formgrader (one writer thread)."""
        try:
            with Gradebook(self.gradebook_url) as gradebook:
                known = {s.id: s.lms_user_id for s in gradebook.students}
                gradebook.update_or_create_student(
                    name,
                    first_name=record["given_name"] or None,
                    last_name=record["family_name"] or None,
                    email=record["email"] or None,
                    # A Canvas import's user id (its CSV export's ID column) stays the row's.
                    **({} if known.get(name) else {"lms_user_id": sub}),
                )
        except Exception as error:  # Formgrader then shows the id alone: worth a line in the log, no more
            self.log.warning("could not put %s into the gradebook: %s", name, error)
