#!/usr/bin/env bash
# The system packages `make test` needs, installed when this machine lets us.
#
#   chromium    the browser tests (Playwright drives the system's browser)
#   bubblewrap  the sandbox student code runs in when graded
#   postgresql  the PostgreSQL gradebook tests (a real server, started per test)
#   nodejs npm  JupyterHub's proxy (configurable-http-proxy, from npm)
#   nginx       the TLS reverse proxy the hub test runs in front of the hub (hub/nginx.conf.template)
#
# Debian/Ubuntu names. Missing ones are installed with apt-get as root or with
# passwordless sudo; otherwise we stop before any test runs and print the exact
# command, so no test is skipped for want of a package.
set -euo pipefail

PACKAGES=(chromium bubblewrap postgresql nginx)

if ! command -v dpkg-query >/dev/null; then
  for tool in chromium bwrap nginx node npm; do
    command -v "$tool" >/dev/null || { echo "missing: $tool. Install chromium, bubblewrap, postgresql, nginx, nodejs and npm with your package manager, then run make test again." >&2; exit 1; }
  done
  exit 0
fi

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# Node.js builds from elsewhere (NodeSource) bundle npm: ask for the command.
command -v npm >/dev/null || missing+=(nodejs npm)
((${#missing[@]})) || exit 0

install=(apt-get install -y -qq --no-install-recommends "${missing[@]}")
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo)
else
  echo "make test needs these system packages: ${missing[*]}" >&2
  echo "install them, then run make test again:" >&2
  echo "  sudo apt-get update && sudo ${install[*]}" >&2
  exit 1
fi
echo "installing system packages: ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" "${install[@]}"
