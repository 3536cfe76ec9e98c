"""A real TLS reverse proxy in front of a test's hub: Debian's nginx, running the server block of
hub/nginx.conf.template (the file docs/hub.md gives), rendered with envsubst as the docs say,
with a certificate made here (a throw-away CA and a leaf for localhost and 127.0.0.1)."""

from __future__ import annotations

import base64
import datetime
import hashlib
import os
import socket
import subprocess
import time
from pathlib import Path

from conftest import ROOT

NGINX = "/usr/sbin/nginx"
TEMPLATE = ROOT / "hub" / "nginx.conf.template"
# What the test adds around the server block: nginx's own files in the test's folder, in the foreground.
# Workers run as Debian's www-data and buffer large bodies (a notebook saved) in Debian's
# /var/lib/nginx, as /etc/nginx/nginx.conf has it.
MAIN = """daemon off;
user www-data;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log {folder}/access.log;
    include {folder}/course-hub.conf;
}}
"""


def certificate(folder: Path) -> dict:
    """A CA (ca.pem, what clients trust) and a leaf certificate for localhost signed by it;
    spki: the leaf's public key hash, as chromium's --ignore-certificate-errors-spki-list takes it."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "course hub test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digital signature, certificate and CRL signing
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))
    (folder / "fullchain.pem").write_bytes(leaf.public_bytes(pem) + ca.public_bytes(pem))
    (folder / "privkey.pem").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    os.chmod(folder / "privkey.pem", 0o600)
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return {
        "ca": folder / "ca.pem",
        "cert": folder / "fullchain.pem",
        "key": folder / "privkey.pem",
        "spki": base64.b64encode(hashlib.sha256(der).digest()).decode(),
    }


def configure(folder: Path, hub_port: int, port: int) -> dict:
    """The certificate, the template rendered for it, and nginx's main file around it; nginx -t checked."""
    folder.mkdir(parents=True, exist_ok=True)
    tls = certificate(folder)
    values = {
        "HUB_HOST": "localhost",
        "HUB_HTTPS_PORT": str(port),
        "HUB_PORT": str(hub_port),
        "HUB_CERT": str(tls["cert"]),
        "HUB_KEY": str(tls["key"]),
    }
    # As docs/hub.md says: envsubst with these names only (nginx's own $variables stay).
    rendered = subprocess.run(
        ["envsubst", " ".join("$" + name for name in values)],
        input=TEMPLATE.read_text(encoding="utf-8"),
        env=dict(os.environ, **values),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (folder / "course-hub.conf").write_text(rendered)
    (folder / "nginx.conf").write_text(MAIN.format(folder=folder))
    checked = subprocess.run([NGINX, "-t", "-c", str(folder / "nginx.conf")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    return {**tls, "rendered": rendered}


def start(folder: Path, hub_port: int, port: int) -> dict:
    """nginx on `port` with TLS in front of the hub on `hub_port` (which may start later): returns
    its url, the process, the CA to trust and chromium's flag that trusts the leaf."""
    if not os.access(NGINX, os.X_OK):
        raise RuntimeError(f"{NGINX} is missing: apt-get install nginx (tools/system_packages.sh does)")
    tls = configure(folder, hub_port, port)
    process = subprocess.Popen([NGINX, "-c", str(folder / "nginx.conf")], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline, "nginx did not start"
            time.sleep(0.1)
    return {
        "url": f"https://localhost:{port}",
        "port": port,
        "process": process,
        "ca": str(tls["ca"]),
        "chromium_args": [f"--ignore-certificate-errors-spki-list={tls['spki']}"],
        "rendered": tls["rendered"],
    }


def session(proxy: dict):
    """A requests session that trusts the test's CA (and only it: not REQUESTS_CA_BUNDLE's)."""
    import requests

    client = requests.Session()
    client.trust_env = False  # else REQUESTS_CA_BUNDLE wins over client.verify
    client.verify = proxy["ca"]
    return client


def stop(proxy: dict) -> None:
    proxy["process"].terminate()
    proxy["process"].wait(timeout=30)
