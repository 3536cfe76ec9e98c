"""A hub for a class, the parts that need no running hub: the per-user limits' control groups
(hub/limits.py) on both cgroup layouts, and the systemd unit (hub/course-hub.service). The
running hub's limits, culler and a member added without a restart: tests/test_hub.py."""

from __future__ import annotations

import configparser
import re
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "hub"))
import limits  # noqa: E402 (hub/ is not a package; the hub imports it the same way)

pytestmark = pytest.mark.unit


def cgroup_tree(tmp_path, kind: str):
    if kind == "v2":
        (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
        (tmp_path / "cgroup.subtree_control").write_text("")
    else:
        (tmp_path / "memory").mkdir()
        (tmp_path / "cpu").mkdir()
    return tmp_path


def test_a_users_server_goes_into_a_v2_group_with_both_limits(tmp_path):
    tree = cgroup_tree(tmp_path, "v2")
    assert limits.layout(tree) == "v2"
    limits.place("course-hub-8000", "ana", 4242, 2 * 1024**3, 0.5, tree)
    group = tree / "course-hub-8000" / "ana"
    assert (group / "memory.max").read_text() == str(2 * 1024**3)
    assert (group / "cpu.max").read_text() == "50000 100000"
    assert (group / "cgroup.procs").read_text() == "4242"
    assert (tree / "course-hub-8000" / "cgroup.subtree_control").read_text() == "+memory +cpu"


def test_a_users_server_goes_into_v1_memory_and_cpu_groups(tmp_path):
    tree = cgroup_tree(tmp_path, "v1")
    assert limits.layout(tree) == "v1"
    limits.place("course-hub-8000", "ben", 77, 1024**3, 2.0, tree)
    memory, cpu = tree / "memory" / "course-hub-8000" / "ben", tree / "cpu" / "course-hub-8000" / "ben"
    assert (memory / "memory.limit_in_bytes").read_text() == str(1024**3)
    assert (cpu / "cpu.cfs_quota_us").read_text() == "200000"
    assert (memory / "cgroup.procs").read_text() == (cpu / "cgroup.procs").read_text() == "77"


def test_without_writable_control_groups_placing_says_so(tmp_path):
    assert limits.layout(tmp_path) is None
    with pytest.raises(OSError, match="no writable control groups"):
        limits.place("course-hub-8000", "ana", 1, 1024**3, 1.0, tmp_path)


def test_the_service_unit_starts_make_hub_with_settings_the_hub_reads():
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment, method-assign]  # systemd's keys are case-sensitive
    text = (ROOT / "hub" / "course-hub.service").read_text(encoding="utf-8")
    unit.read_string(text)  # repeated Environment= lines: the last wins here, each is read below
    service = dict(unit["Service"])
    assert service["ExecStart"].split() == ["/usr/bin/make", "hub"] and service["Delegate"] == "yes"
    assert "hub:" in (ROOT / "Makefile").read_text(encoding="utf-8")
    settings = re.findall(r"^Environment=(HUB_\w+)=", text, flags=re.M)
    read = (ROOT / "hub" / "serve.py").read_text(encoding="utf-8")
    assert settings and all(f'"{name}"' in read for name in settings), settings


def test_the_tls_proxy_the_docs_give_is_the_file_the_hub_test_runs():
    """docs/hub.md's nginx steps render hub/nginx.conf.template, which tests/tls_proxy.py renders
    the same way (envsubst with the same names) for tests/test_hub.py's class over HTTPS."""
    docs = (ROOT / "docs" / "hub.md").read_text(encoding="utf-8")
    template = (ROOT / "hub" / "nginx.conf.template").read_text(encoding="utf-8")
    command = "envsubst '$HUB_HOST $HUB_HTTPS_PORT $HUB_PORT $HUB_CERT $HUB_KEY'"
    assert "hub/nginx.conf.template" in docs and command in docs and command in template
    names = set(re.findall(r"\$\{(\w+)\}", template))
    assert names == {"HUB_HOST", "HUB_HTTPS_PORT", "HUB_PORT", "HUB_CERT", "HUB_KEY"}, names
    proxy = (ROOT / "tests" / "tls_proxy.py").read_text(encoding="utf-8")
    assert all(f'"{name}"' in proxy for name in names) and '"envsubst"' in proxy
    # Websockets (kernels) and the scheme the hub's Secure cookies need pass through.
    for line in ("proxy_set_header Upgrade $http_upgrade;", "proxy_set_header X-Forwarded-Proto https;"):
        assert line in template, line
