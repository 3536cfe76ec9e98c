"""The hub's LTI 1.3 set-up, read and written by hub/serve.py before JupyterHub starts: the
configuration (HUB_LTI_CONFIG and the HUB_LTI_* variables, docs/lti.md), checked, and the tool's
folder (its key, tool.json, the launch store) that hub/lti.py and `lms push` read.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

# The LTI configuration: JSON key -> environment variable (which wins over the file).
LTI_SETTINGS = {
    "issuer": "HUB_LTI_ISSUER",  # the platform's issuer (iss), e.g. https://canvas.instructure.com
    "client_id": "HUB_LTI_CLIENT_ID",  # the tool's client id in the platform
    "deployment_id": "HUB_LTI_DEPLOYMENT_ID",  # one or more, separated by commas or spaces
    "login_url": "HUB_LTI_LOGIN_URL",  # the platform's OIDC authorization (authentication request) URL
    "jwks_url": "HUB_LTI_JWKS_URL",  # the platform's public keyset URL
    "token_url": "HUB_LTI_TOKEN_URL",  # the platform's OAuth 2 access token URL
    "tool_url": "HUB_LTI_TOOL_URL",  # optional: this hub as browsers reach it (default http://localhost:PORT)
    "username_claim": "HUB_LTI_USERNAME_CLAIM",  # optional: login_id (default), sis_id or sub (docs/lti.md)
}
USERNAME_CLAIMS = ("login_id", "sis_id", "sub")
LTI_URLS = ("issuer", "login_url", "jwks_url", "token_url", "tool_url")


def lti_settings(port: int) -> dict | None:
    """The LTI configuration from HUB_LTI_CONFIG and the HUB_LTI_* variables; None when there is none."""
    values: dict = {}
    if os.environ.get("HUB_LTI_CONFIG"):
        path = Path(os.environ["HUB_LTI_CONFIG"])
        try:
            values = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ValueError(f"HUB_LTI_CONFIG: cannot read {path} as JSON: {error}") from None
        unknown = sorted(set(values) - set(LTI_SETTINGS))
        if unknown:
            raise ValueError(
                f"HUB_LTI_CONFIG: {path} has unknown keys {', '.join(unknown)} (known: {', '.join(LTI_SETTINGS)})"
            )
    values.update({key: os.environ[var] for key, var in LTI_SETTINGS.items() if os.environ.get(var)})
    if not values:
        return None
    values.setdefault("tool_url", f"http://localhost:{port}")
    values.setdefault("username_claim", "login_id")
    if values["username_claim"] not in USERNAME_CLAIMS:
        raise ValueError(f"LTI username_claim is one of {', '.join(USERNAME_CLAIMS)}, not {values['username_claim']!r}")
    missing = [f"{key} ({LTI_SETTINGS[key]})" for key in LTI_SETTINGS if not values.get(key)]
    if missing:
        raise ValueError("the LTI configuration lacks " + ", ".join(missing) + "; see docs/lti.md")
    for key in LTI_URLS:
        parts = urlsplit(str(values[key]))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"LTI {key} must be an http(s) URL, not {values[key]!r}")
    if urlsplit(values["tool_url"]).path not in ("", "/"):
        raise ValueError(
            "LTI tool_url is the hub's own address (scheme, host, port), without a path: "
            f"{values['tool_url']!r}; the hub serves at its root (/hub/, /user/NAME/, /services/...)"
        )
    ids = values["deployment_id"]
    ids = [str(i) for i in ids] if isinstance(ids, list) else re.split(r"[\s,]+", str(ids).strip())
    values["deployment_ids"] = sorted(set(ids) - {""})
    values["client_id"] = str(values["client_id"])
    return values


def lti_tool(state: Path, lti: dict, grader: pwd.struct_passwd, course_id: str) -> dict:
    """The tool's key, tool.json (what `lms push` reads) and the launch store, in HUB_STATE/lti:
    the grader account's (0700), so that `lms push` runs as that account, for instructors and TAs
    from the Formgrader service (hub/lms_service.py), never as root; the hub, root, records launches
    there. A folder an earlier version kept in HUB_STATE/hub/lti (root's only) is moved here."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from grader.lms import lti_tool as tool_parts

    folder = state / "lti"
    if not folder.exists() and (state / "hub" / "lti").is_dir():
        (state / "hub" / "lti").rename(folder)
    folder.mkdir(mode=0o700, exist_ok=True)
    tool = {
        **{k: v for k, v in lti.items() if k != "deployment_id"},
        "course_id": course_id,
        "key": str(folder / "tool-key.pem"),
        "store": str(folder / "lti.sqlite"),
    }
    tool_parts.load_key(tool["key"], create=True)
    tool_parts.Store(tool["store"])
    (folder / "tool.json").write_text(json.dumps(tool, indent=1))
    for path in [folder, *folder.iterdir()]:
        os.chown(path, grader.pw_uid, grader.pw_gid)
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
    base = tool["tool_url"].rstrip("/") + "/hub/lti13/"
    print(
        f"LTI 1.3 sign-in from {tool['issuer']} (client id {tool['client_id']}); register this tool there with\n"
        f"  login (OIDC initiation) URL: {base}oauth_login\n  redirect (launch) URL:       {base}oauth_callback\n"
        f"  public keyset (JWKS) URL:    {base}jwks\n  target link URL:             {tool['tool_url'].rstrip('/')}/hub\n"
        f"  Canvas JSON configuration:   {base}config",
        flush=True,
    )
    return tool
