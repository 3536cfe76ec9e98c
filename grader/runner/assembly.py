"""The trusted test runner's assembly, executed inside every grading kernel before any student
code. It puts the runner's parts together; each part is ordinary Python that can be imported and
tested in process (tests/test_runner_parts.py):

- runner/who.py: who is asking (the runner's and each test's code, known by identity; library
  code asking for its own use; the helpers that hand frames back to their caller);
- runner/audit.py: the audit hook (PEP 578) refusing what reading or bending the runner needs;
- runner/hooks.py: the hook points it watches (detection, `find_bent`) and puts back (repair,
  `put_back`) before every test and after every other cell;
- runner/test.py: running one test, in its own namespace, with its output kept;
- runner/channel.py: the signed channel to the grader (trusted.RunnerChannel is its other end);
- runner/data.py, runner/reset.py, runner/torch_state.py: a judge's data as plain literals, what is
  done around each test (stray processes, sys.monitoring, the time limit), torch's dispatcher.

How the kernel gets it (trusted.install, trusted.assemble): the parts' sources are written, in
the order of trusted.RUNNER_PARTS (each after the parts it imports, this file last), into one
file that trusted.BOOT_LINE compiles as `<grader-runner>` and executes in one private
namespace, with a private copy of the builtins; `from grader.runner_* import` lines (this
file's) are left out there, since the names they import are defined in that same namespace,
and `from __future__ import annotations` is written once, at its top. Nothing goes into
sys.modules, the notebook's namespace or builtins: once `_install` ran, the runner's functions
are reachable only from the audit hook (held by the interpreter) and from the threads it
starts, and the file is deleted. Every code object of that file is the runner's (runner_who).

The runner serves the grader from its own thread: `run` executes one test cell with its own
references to compile, exec, the builtins and the release's modules (nothing of IPython on the
path); `collect` runs a judge's code and returns its data as plain literals; `check` puts back
and names every hook point the student bent. docs/grade-integrity.md says what this cannot
promise."""

from __future__ import annotations

import _functools
import _socket
import _thread
import builtins
import linecache
import os
import sys
import time
from _hashlib import hmac_digest
from types import CodeType

from IPython import get_ipython

from grader.runner.audit import make_audit_hook, make_is_file_text, make_judge, make_refusals
from grader.runner.channel import listen, make_answer, make_serve
from grader.runner.data import make_capped_text, make_plain, make_seal, make_seal_test
from grader.runner.hooks import (
    class_snapshot,
    make_check,
    make_library_callback,
    make_library_wrapper,
    make_same,
    watch_classes,
    watch_modules,
    watch_shell,
    watch_sys,
    watch_torch_hooks,
    watch_transformers,
)
from grader.runner.reset import make_end_strays, make_exit_fork, make_monitoring_reset, make_watchdog
from grader.runner.test import (
    SEAL_NAMES,
    TestTimeout,
    make_after_test,
    make_execute,
    make_failure,
    make_namespace,
    make_run,
)
from grader.runner.torch_state import torch_state
from grader.runner.who import library_prefixes, make_asker, make_is_library, make_known_code

RUNNER_FILE, RUNNER_SOCKET = ".grader-runner.py", ".grader-runner.sock"  # runner/trusted.py's
OUTPUT_LIMIT = 20000  # characters of what a test prints that go back to the grader


def _install(runner_code: CodeType) -> None:
    """Take every reference the runner keeps, note the hook points, start serving the grader and
    add the audit hook. `runner_code`: the start-up file's code (all of the runner's)."""
    shell = get_ipython()
    kernel, modules, start_pid = getattr(shell, "kernel", None), sys.modules, os.getpid()
    builtins_copy, all_modules = dict(vars(builtins)), dict(sys.modules)

    # -- who is asking
    is_library = make_is_library(library_prefixes(sys, os.path.realpath))
    remember_test, is_runner, is_protected = make_known_code(runner_code)
    requester, reaches_protected, asker_is_trusted, where = make_asker(is_library, is_protected, sys._getframe)

    # -- the audit hook (added last, once everything it protects is in place)
    record, refuse, take_refused = make_refusals()
    watched: list = [None, None]  # [deadline of the running test, its thread]: the watchdog's and the hook's
    who = {"reaches_protected": reaches_protected, "asker_is_trusted": asker_is_trusted, "where": where}
    who.update(is_library=is_library, is_runner=is_runner, is_protected=is_protected)
    is_file_text = make_is_file_text(open)
    judge = make_judge(who, type(runner_code), record, refuse, is_file_text, watched)
    hook = make_audit_hook(judge, requester, is_library, refuse, _thread.get_ident)

    # -- what student code can reach of the runner's: sealed (runner_data.make_seal)
    seal = make_seal(_functools._lru_cache_wrapper)
    capped_text = make_capped_text(OUTPUT_LIMIT, seal)

    # -- the hook points, as they are at start, the runner's own classes with them
    same, classes = make_same(), class_snapshot(shell, kernel, modules)
    classes += [(cls, dict(vars(cls))) for cls in (capped_text, TestTimeout)]
    library_wrapper = make_library_wrapper(classes, modules, is_library)
    watchers = [
        watch_transformers(shell, same),
        watch_shell(shell, kernel, make_library_callback(is_library)),
        watch_sys(sys, same),
        watch_classes(classes, library_wrapper),
        watch_modules(modules, library_wrapper),
        watch_torch_hooks(modules),
    ]
    end_strays = make_end_strays(start_pid, os.getsid, os.listdir, open, os.kill, os.waitpid, time.sleep)
    check = make_check(watchers, end_strays, take_refused)
    torch = torch_state(modules.get("torch"), refuse, seal)  # guards torch's dispatcher from here on

    # -- running one test
    plain = make_plain(
        torch["tensor_types"], torch["size_type"], torch["tensor_tolist"], torch["dtype_name"], modules.get("numpy")
    )
    execute = make_execute(
        sys,
        compile=compile,
        exec=exec,
        set_trace=sys.settrace,
        get_ident=_thread.get_ident,
        monotonic=time.monotonic,
        remember_test=remember_test,
        watched=watched,
        reset_monitoring=make_monitoring_reset(getattr(sys, "monitoring", None)),
        dispatch_state=torch["dispatch_state"],
        plain=plain,
        capped_text=capped_text,
        timeout_error=TestTimeout,
        failure=make_failure(is_protected, is_library, linecache.cache),  # IPython keeps cells' lines there
    )
    sealers = make_seal_test(seal, SEAL_NAMES, staticmethod, classmethod)  # a test's functions (trusted.seal_functions)
    namespace = make_namespace(shell.user_ns, builtins_copy, all_modules, modules, sealers)
    after_test = make_after_test(sys.gettrace, sys.settrace, torch)
    run = make_run(check, namespace, execute, after_test, make_exit_fork(os.getpid, start_pid, os._exit))

    # -- the channel to the grader
    listener = listen(_socket, RUNNER_SOCKET)
    serve = make_serve(listener, RUNNER_SOCKET, _socket, make_answer(run, check), os.unlink, hmac_digest)
    try:
        os.unlink(RUNNER_FILE)
    except OSError:
        pass
    _thread.start_new_thread(serve, ())
    _thread.start_new_thread(make_watchdog(watched, TestTimeout, time.monotonic, time.sleep), ())
    sys.addaudithook(hook)


if __name__ == "grader_runner":  # trusted.BOOT_LINE's namespace; importing this module starts nothing
    _install(sys._getframe(0).f_code)
    del _install
