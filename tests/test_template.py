"""Kernels forked from the warm template (grader/kernels/template.py) are as isolated as
kernels started normally, and grade the same.

One worker (--jobs 1, in this process, so its template is this process's)
grades a hostile student first, then others; the hostile student and the probe
after it are graded again with the template switched off, and their rows and
what their kernels saw must be equal.
"""

import asyncio
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grader_cases
import grading_checks
import nbformat
import psutil
import pytest
import sandboxed_kernels
import submissions
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.provisioning import KernelProvisionerFactory

from conftest import ROOT
from grader.grading import grade
from grader.isolation import sandbox, uids
from grader.isolation import spec as sandbox_spec
from grader.kernels import template
from grader.records import export
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
FULL = grader_cases.FULL
MARK = "HOSTILE_MARK_5b1c"

# What a kernel can observe of its own sandbox; paths that differ per kernel
# (its scratch and socket folders) are left out, everything else must be equal.
PROBE = """import os, resource, socket
status = open('/proc/self/status').read().splitlines()
print('IDS', os.getuid(), os.getgid(), os.getgroups())
print('CAPS', [l for l in status if l.startswith(('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs'))])
print('LIMITS', [resource.getrlimit(getattr(resource, 'RLIMIT_' + n)) for n in ('DATA', 'AS', 'NPROC', 'FSIZE', 'NOFILE', 'CORE')])
print('MOUNTS', sorted((l.split()[4], l.split()[5].split(',')[0]) for l in open('/proc/self/mountinfo')
                       if not l.split()[4].startswith('/tmp/')))
print('HOST', socket.gethostname(), socket.if_nameindex())
print('PIDS', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
print('TMP', sorted(n for n in os.listdir('/tmp') if not n.startswith(('grader-kernel-', 'grader-scratch-', 'tmp'))))
print('HERE', sorted(os.listdir('.')), os.environ['HOME'] == os.getcwd())
print('ENV', sorted(os.environ))
print('ENVIRON', sorted(k.split(b'=')[0] for k in open('/proc/self/environ', 'rb').read().split(b'\\0') if k))
print('ALLOC', len(bytearray(500_000_000)))
print('THREADS', __import__('torch').get_num_threads())
# What a library imported in the template keeps of it: debugpy notes its process's pid.
print('DEBUGPY', getattr(__import__('sys').modules.get('_pydevd_bundle._debug_adapter.pydevd_schema_log'), '_pid', None) == os.getpid())
# torch._dynamo (imported by a first optimizer) names a compile cache after the user: the kernel's.
torch = __import__('torch')
torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
print('COMPILE CACHE', __import__('torch._inductor.runtime.cache_dir_utils', fromlist=['_']).cache_dir(), os.getuid())
"""

# Everything a student can try against the next one on the same worker.
HOSTILE = f"""import os, signal, subprocess
for path in ['/tmp/{MARK}', '{MARK}', os.path.expanduser('~/{MARK}.home')]:
    open(path, 'w').write('left behind')
subprocess.Popen(['sleep', '4343'], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    os.execvp('sleep', ['sleep', '4344'])
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.kill(os.getppid(), sig)
    except OSError as exc:
        print('ppid', type(exc).__name__)
for pid in (int(p) for p in os.listdir('/proc') if p.isdigit()):
    if pid not in (os.getpid(),):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
hog = []
try:
    while True:
        hog.append(bytearray(100_000_000))
except MemoryError:
    print('memory full after', len(hog), 'blocks')
"""
# Then a cell kills everything the student may signal, its own kernel included: a fresh
# kernel runs the released and answer cells again (not the student's own cells) and grades
# the rest, so the correct answers keep their points on both launch paths.
# (kill(-1) spares the caller, so the kernel then kills itself; kill(-1) finds no process
# when the grader already collected every other one.)
KILL_ALL = (
    "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept ProcessLookupError:\n    pass\n"
    "os.kill(os.getpid(), signal.SIGKILL)"
)


def _with_cells(*codes: str):
    """A correct submission with the student's own cells right after the imports."""
    nb = submissions.answered(A)
    nb.cells[3:3] = [nbformat.v4.new_code_cell(code) for code in codes]
    return nb


def _outputs(root, student):
    return grading_checks.printed(root, student, A)


def lingering():
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip() in ("sleep 4343", "sleep 4344")]


def _grade(tmp, folder, name, use_template):
    root = tmp / name
    course.temporary_course(root, [A])
    saved = os.environ.get(template.SWITCH)
    os.environ[template.SWITCH] = "on" if use_template else "off"
    try:
        rows = grade.run(
            grade.Options(A, folder, jobs=1, cell_timeout=20, notebook_timeout=120, interrupt_grace=4, root=root)
        )
    finally:
        os.environ.pop(template.SWITCH) if saved is None else os.environ.__setitem__(template.SWITCH, saved)
    return root, {r.student_id: r for r in rows}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    assert os.geteuid() == 0, "the sandboxed template needs root, as make test runs"
    tmp = tmp_path_factory.mktemp("template")
    folder = tmp / "submissions"
    folder.mkdir()
    # Graded in name order on one worker: the hostile student first.
    notebooks = {
        "a_hostile": _with_cells(HOSTILE, KILL_ALL),
        "b_probe": _with_cells(PROBE),
        "c_correct": submissions.answered(A),
        "d_probe": _with_cells(PROBE),
    }
    for name, nb in notebooks.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
    # Started normally (each kernel imports torch again): the hostile student and a probe after
    # it are enough to compare; the forked run's others are checked against the expected rows.
    compared = tmp / "compared"
    compared.mkdir()
    for name in ("a_hostile", "b_probe"):
        shutil.copyfile(folder / f"{name}.ipynb", compared / f"{name}.ipynb")
    shared = template.template()
    shared.stop()  # this process's own template, not the session's (conftest.py): its life is checked
    starts = shared.starts
    forked_root, forked = _grade(tmp, folder, "forked", use_template=True)
    after = {"starts": shared.starts - starts, "alive": shared.alive(), "lingering": lingering()}
    normal_root, normal = _grade(tmp, compared, "normal", use_template=False)
    return {"forked": forked, "normal": normal, "forked_root": forked_root, "normal_root": normal_root, "after": after}


@pytest.mark.unit
def test_only_the_graders_kernel_spec_names_the_template_provisioner():
    """Students' JupyterLab, the hub's servers and nbval start plain ipykernel (python3)."""
    plain = KernelSpecManager().get_kernel_spec("python3")
    assert "kernel_provisioner" not in plain.metadata, "students' kernels must not come from the grader's template"
    spec = KernelSpecManager().get_kernel_spec(template.GRADER_KERNEL)
    assert spec.metadata.get("kernel_provisioner", {}).get("provisioner_name") == template.PROVISIONER_NAME, (
        "run `python -m grader.kernels.template install` (make setup does)"
    )
    assert template.PROVISIONER_NAME in KernelProvisionerFactory.instance().get_provisioner_entries(), (
        "the entry point is missing: reinstall the grader (pip install -e .)"
    )


def test_the_template_graded_every_kernel_and_survived_the_hostile_student(graded):
    assert graded["after"]["starts"] <= 1 and graded["after"]["alive"], graded["after"]


def test_grades_equal_a_normal_start(graded):
    assert set(graded["normal"]) == {"a_hostile", "b_probe"}
    for student, row in graded["normal"].items():
        forked = graded["forked"][student]
        assert (forked.status, forked.score, forked.items, forked.detail) == (
            row.status,
            row.score,
            row.items,
            row.detail,
        ), student


def test_students_after_a_hostile_one_are_untouched(graded):
    rows = graded["forked"]
    assert (rows["a_hostile"].status, rows["a_hostile"].score) == ("graded", FULL), rows["a_hostile"].detail
    assert (
        "cell 5: the kernel was killed by signal 9; a fresh kernel ran the cells after it" in rows["a_hostile"].detail
    )
    assert "memory full" in _outputs(graded["forked_root"], "a_hostile")
    for student in ("b_probe", "c_correct", "d_probe"):
        assert (rows[student].status, rows[student].score, rows[student].detail) == ("graded", FULL, ""), student
    for student in ("b_probe", "d_probe"):
        text = _outputs(graded["forked_root"], student)
        assert MARK not in text and "ALLOC 500000000" in text, text
        assert "PIDS [1, 2]" in text, "only its own init and kernel are visible"
        here = next(line for line in text.splitlines() if line.startswith("HERE"))
        assert here.endswith("True") and "MARK" not in here, "its scratch is its home and holds nothing of others"


def test_nothing_a_student_started_outlives_its_kernel(graded):
    assert graded["after"]["lingering"] == [] and lingering() == []


def test_a_forked_kernel_sees_exactly_the_sandbox_a_normal_one_sees(graded):
    forked = _outputs(graded["forked_root"], "b_probe")
    normal = _outputs(graded["normal_root"], "b_probe")
    assert not forked.startswith("IDS 0 ") and "NoNewPrivs:\\t1" in forked and "CapEff:\\t0000000000000000" in forked
    # Nothing left to regain either: the bounding set is empty in both (setpriv in bwrap needs
    # CAP_SETPCAP for that; without it util-linux 2.38 left the set full without a word).
    assert "CapBnd:\\t0000000000000000" in forked and "CapBnd:\\t0000000000000000" in normal
    # The memory limit is the data limit (grade.Options' default), in both.
    memory = grade.Options.memory_mb * 1024 * 1024
    assert f"LIMITS [({memory}, {memory}), " in forked, forked
    # torch's CPU threads: one per grading kernel (sandbox_spec.KERNEL_THREADS), forked or not.
    assert f"THREADS {sandbox_spec.KERNEL_THREADS}" in forked, forked
    for key in (
        "IDS",
        "CAPS",
        "LIMITS",
        "MOUNTS",
        "HOST",
        "PIDS",
        "TMP",
        "HERE",
        "ENV ",
        "ALLOC",
        "THREADS",
        "DEBUGPY",
        "COMPILE CACHE",
    ):
        line = lambda text, key=key: next(l for l in text.splitlines() if l.startswith(key))  # noqa: E731
        assert line(forked) == line(normal), key
    environ = next(l for l in forked.splitlines() if l.startswith("ENVIRON"))
    for name in grader_cases.PLANTED:
        assert name not in environ


# -- the template's own life -------------------------------------------------------------------------------
def test_a_dead_template_costs_no_running_kernel_and_is_started_again(caplog):
    shared = template.template()
    shared.stop()  # a template of this process's own, whatever an earlier test left (one adopted, say)

    async def scenario():
        with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
            km, kc = await sandboxed_kernels.start(one)
            assert isinstance(km.provisioner.process, template.ForkedKernel)
            starts = shared.starts
            shared.process.kill()
            shared.process.wait()
            assert (await sandboxed_kernels.run(kc, "print(6 * 7)")).strip() == "42", (
                "a running kernel outlives its template"
            )
            km2, kc2 = await sandboxed_kernels.start(two)
            assert isinstance(km2.provisioner.process, template.ForkedKernel)
            assert shared.starts == starts + 1
            assert (await sandboxed_kernels.run(kc2, "print(6 * 7)")).strip() == "42"
            await sandboxed_kernels.stop(km, kc)
            await sandboxed_kernels.stop(km2, kc2)

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    assert "the previous one died" in caplog.text


def test_without_a_template_kernels_start_normally_with_a_note(monkeypatch, caplog):
    shared = template.template()
    shared.stop()
    monkeypatch.setattr(
        template.Template, "command", lambda self, folder: ["python3", "-c", "raise SystemExit('no template today')"]
    )

    async def scenario():
        with tempfile.TemporaryDirectory() as scratch:
            km, kc = await sandboxed_kernels.start(scratch)
            assert isinstance(km.provisioner.process, subprocess.Popen), "the normal start, in bwrap"
            assert (await sandboxed_kernels.run(kc, "import os; print(os.getuid())")).strip() == str(uids.FIRST_UID)
            await sandboxed_kernels.stop(km, kc)

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    assert "kernel template not used (the template did not start: no template today)" in caplog.text
    monkeypatch.undo()
    shared.stop()


def test_a_kernel_exits_with_its_client():
    """A client that dies without shutting its kernel down takes the kernel along (bwrap's --die-with-parent)."""
    code = (
        "import asyncio, os, sys, tempfile\n"
        "sys.path.insert(0, 'tests')\n"
        "from sandboxed_kernels import start\n"
        "scratch = tempfile.mkdtemp()\n"
        "km, kc = asyncio.run(start(scratch))\n"
        "print(scratch, os.path.dirname(km.connection_file), km.provisioner.process.init, flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    *folders, pid = done.stdout.split()[-3:]
    init = int(pid)
    for _ in range(100):
        try:
            os.kill(init, 0)
        except ProcessLookupError:
            break
        asyncio.run(asyncio.sleep(0.1))
    else:
        os.kill(init, signal.SIGKILL)
        pytest.fail("the kernel outlived its client")
    for folder in folders:  # what the dead client left (no later claim of a uid removes it: FIRST_UID is none)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_forked_kernel_leaves_the_templates_objects_out_of_its_collections():
    """What the template imported is frozen (gc.freeze) before it forks: a kernel's collections,
    the full one IPython runs as the kernel shuts down included, never walk torch's objects
    (walking them wrote to every page holding one, copying it: 0.2 s of CPU a kernel)."""
    probe = (
        "import gc, sys\nprint(gc.get_freeze_count(), any(o is vars(sys.modules['torch']) for o in gc.get_objects()))"
    )

    async def scenario() -> str:
        with tempfile.TemporaryDirectory() as scratch:
            km, kc = await sandboxed_kernels.start(scratch)
            try:
                assert not isinstance(km.provisioner.process, subprocess.Popen), "not forked from the template"
                return await sandboxed_kernels.run(kc, probe)
            finally:
                await sandboxed_kernels.stop(km, kc)

    frozen, walked = asyncio.run(scenario()).split()
    assert int(frozen) > 0 and walked == "False", (frozen, walked)


def test_a_keeper_waits_idle_for_a_sandbox_that_is_slow_to_die(tmp_path):
    """A sandbox's init can take a while to die: it waits until its namespace's last process is
    reaped (here the kernel, held as a zombie by this test's ptrace; a profiler did the same). The
    keeper, told by the closed socket that its client is gone, must wait idle: a closed socket stays
    readable, and watching it again spun a core until the init died."""
    ptrace = ctypes.CDLL(None, use_errno=True).ptrace
    ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    seize, wait_all = 0x4206, 0x40000000  # PTRACE_SEIZE, __WALL

    async def started():
        km, kc = await sandboxed_kernels.start(str(tmp_path))
        kc.stop_channels()
        return km

    km = asyncio.run(started())
    process = km.provisioner.process
    assert isinstance(process, template.ForkedKernel), "the kernel was not forked from the template"
    keeper = psutil.Process(psutil.Process(process.init).ppid())
    traced = ptrace(seize, process.pid, None, None) == 0
    try:
        assert traced, f"ptrace: {os.strerror(ctypes.get_errno())} (the test needs root, as make test runs)"
        process.close()  # the client is gone: the keeper kills the sandbox
        kernel = psutil.Process(process.pid)
        deadline = time.monotonic() + 10
        while kernel.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.05)
        assert kernel.status() == psutil.STATUS_ZOMBIE
        before = sum(keeper.cpu_times()[:2])
        time.sleep(1.0)
        spent = sum(keeper.cpu_times()[:2]) - before
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)  # (dead already, unless the keeper failed)
        if traced:
            os.waitpid(process.pid, wait_all)  # the tracer's wait lets the init reap its kernel
        asyncio.run(km.cleanup_resources())  # its connection file and socket folder
    assert spent < 0.05, f"the keeper used {spent:.2f} CPU-s in 1 s while its sandbox was dying"
    keeper.wait(timeout=10)


@contextlib.contextmanager
def templates_seen(*parents: psutil.Process):
    """The folders named by template processes (a template's command line names its folder,
    and the keepers and kernels it forks keep that command line) that appear below `parents`
    while the block runs; processes older than the block are not its."""
    folders, done, started = set(), threading.Event(), time.time() - 0.05

    def below() -> list[psutil.Process]:
        found = []
        for parent in parents:
            try:
                found += parent.children(recursive=True)
            except psutil.Error:  # the parent has ended: nothing more below it
                continue
        return found

    def watch():
        while not done.is_set():
            for process in below():
                try:
                    command = process.cmdline()
                    if process.create_time() < started:
                        continue
                except psutil.Error:
                    continue
                if command[1:4] == ["-m", "grader.kernels.template", "serve"]:
                    folders.add(command[4])
            done.wait(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        yield folders
    finally:
        done.set()
        watcher.join()


def _class(tmp_path, students):
    folder, root = tmp_path / "class", tmp_path / "course"
    folder.mkdir()
    for student in students:
        nbformat.write(submissions.answered(A), folder / f"{student}.ipynb")
    course.temporary_course(root, [A])
    return folder, root


def test_workers_fork_their_kernels_from_one_shared_template(tmp_path):
    """--jobs 2: the parent starts one template and both workers adopt it; a worker
    that started a template of its own would pay the imports again. Every template
    process seen during the run must name the parent's template."""
    template.template().stop()  # a template of this process's own, not the session's (conftest.py)
    folder, root = _class(tmp_path, ("ana", "ben", "cy", "dee"))
    with templates_seen(psutil.Process()) as folders:
        rows = grade.run(
            grade.Options(A, folder, jobs=2, cell_timeout=20, notebook_timeout=120, interrupt_grace=4, root=root)
        )
    assert {r.status for r in rows} == {"graded"} and {r.score for r in rows} == {FULL}
    assert folders == {template.template().folder}, (
        f"templates seen: {sorted(folders)}; this process's: {template.template().folder}"
    )


def test_a_run_forks_from_the_template_its_environment_names_and_starts_none(tmp_path):
    """GRADER_TEMPLATE_FOLDER (how the test suite shares one template): `python -m grader grade`
    forks every kernel from the template it names and starts no template of its own."""
    session = template.Template()
    session.ensure_started()
    named = session.folder
    try:
        folder, root = _class(tmp_path, ("ana", "ben"))
        env = dict(grader_cases.cli_env(), **{template.SHARED: named})
        command = [sys.executable, "-m", "grader", "grade", A, "--submissions", str(folder), "--root", str(root)]
        run = psutil.Popen([*command, "--jobs", "2"], env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            with templates_seen(run) as own, templates_seen(psutil.Process(session.process.pid)) as forked:
                out, err = run.communicate(timeout=240)
        finally:
            if run.poll() is None:  # it ran past the timeout
                run.kill()
    finally:
        session.stop()
    assert run.returncode == 0, (out + err).decode()[-3000:]
    assert not own, f"the run started templates of its own: {own}"
    assert forked == {named}, f"the named template forked no kernel of the run: {forked}"
    rows = export.read_csv(root / "grades" / f"{A}.csv")
    assert [(r["status"], float(r["score"])) for r in rows] == [("graded", FULL)] * 2


@pytest.mark.unit
def test_only_a_private_template_folder_of_this_users_for_this_interpreter_is_adopted(tmp_path, monkeypatch, caplog):
    """Anyone who can enter the named folder could put a socket of their own there and serve
    kernels, and a template of another interpreter would fork kernels of that one: such a folder
    is refused with a note (template() then starts the process's own)."""

    def folder(name: str, mode: int = 0o700, owner: int | None = None, python: str = sys.executable):
        made = tmp_path / name
        made.mkdir()
        made.chmod(mode)
        (made / "python").write_text(python)
        if owner is not None:
            os.chown(made, owner, owner)
        return made

    private = folder("private")
    link = tmp_path / "link"
    link.symlink_to(private)
    cases = {
        private: True,
        link: False,
        folder("opened", mode=0o755): False,
        folder("someone_elses", owner=65534): False,  # nobody's
        folder("another_python", python="/usr/bin/python3"): False,
    }
    for named, adopted in cases.items():
        monkeypatch.setenv(template.SHARED, str(named))
        assert template.shared_folder() == (str(named) if adopted else None), named
    assert caplog.text.count("is not a private template folder of") == 4
    monkeypatch.setenv(template.SHARED, str(private))
    assert template.Template(adopted_folder=template.shared_folder()).adopted
    monkeypatch.setenv(template.SHARED, str(tmp_path / "gone"))  # its session ended: no note
    assert template.shared_folder() is None and caplog.text.count("not a private template folder") == 4


@pytest.mark.unit
def test_a_template_socket_served_by_another_user_is_refused():
    """The folder is checked when adopted; the user serving the socket, at every connection (a
    folder removed and made again by someone else would otherwise pass)."""
    name = f"\0course-grader-test-{os.getpid()}"  # abstract: no folder permissions in the way
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(name)
    listener.listen(1)
    pid = os.fork()
    if pid == 0:  # the other user: connects as nobody
        try:
            os.setuid(65534)
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(name)
            client.recv(1)
        finally:
            os._exit(0)
    served, _ = listener.accept()
    try:
        with pytest.raises(ConnectionRefusedError, match="uid 65534"):
            template.same_user(served)
        ours = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.connect(name)
        mine, _ = listener.accept()
        template.same_user(mine)  # this user's own: taken
        template.same_user(ours)
    finally:
        served.close()
        listener.close()
        os.waitpid(pid, 0)


@pytest.mark.unit
def test_a_named_template_whose_socket_another_user_serves_gets_no_kernel_request(tmp_path, monkeypatch, caplog):
    """A private folder whose socket someone else serves (made again after the check, say): the
    request (the kernel's environment and streams) never reaches it, and the process goes on to a
    template of its own (not started here)."""
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "socket"))
    ready, report = os.pipe()
    pid = os.fork()
    if pid == 0:  # serves the socket as nobody: the peer credentials are the listening process's
        try:
            os.setuid(65534)
            listener.listen(1)
            os.write(report, b"L")
            conn, _ = listener.accept()
            conn.settimeout(10)
            os.write(report, str(len(conn.recv(1 << 16))).encode())
        finally:
            os._exit(0)
    os.close(report)
    assert os.read(ready, 1) == b"L"

    def no_start(self):
        raise template.TemplateUnavailable("no template of its own in this test")

    monkeypatch.setattr(template.Template, "_start", no_start)
    adopted = template.Template(adopted_folder=str(folder))
    with caplog.at_level(logging.WARNING), pytest.raises(template.TemplateUnavailable, match="in this test"):
        adopted.fork({"argv": ["python"]}, [])
    received = os.read(ready, 16)
    os.waitpid(pid, 0)
    listener.close()
    assert received == b"0", f"the other user's socket received {received.decode()} bytes of the request"
    assert "served by uid 65534" in caplog.text


@pytest.mark.unit
def test_the_template_process_starts_in_the_folder_that_holds_this_grader():
    """Its cwd is what `python -m grader.kernels.template serve` finds first: the folder holding the
    grader package, not the package itself (whose sub-packages would then pass for top-level ones)."""
    import grader

    assert Path(template.PACKAGE_HOME, "grader") == Path(grader.__file__).resolve().parent
