"""The kernel's side, written into the kernel's start-up file with runner/assembly.py (trusted.RUNNER_PARTS):
what the runner does around each test besides the hook points it checks: end stray processes,
take sys.monitoring's tools away, stop a test past its time. Each maker takes the references it
keeps at start, before any student code, so that patching a module later cannot reach them."""

import ctypes


def make_end_strays(start_pid, getsid, listdir, open_file, kill, waitpid, sleep):
    """`end_strays()`: end every other process of the kernel's session (a test's or cell's
    processes end with it: a fork bomb's copies would hold the process limit through the next
    cells) and reap them."""
    _int, _range, _os_error, _index_error, _no_child = int, range, OSError, IndexError, ChildProcessError

    def end_strays():
        if getsid(0) != start_pid:
            return  # not its session's leader: the session is not the kernel's alone
        for _ in _range(400):
            found = False
            for name in listdir("/proc"):
                if not name.isdigit() or _int(name) in (start_pid, 1):
                    continue
                try:
                    with open_file(f"/proc/{name}/stat", "rb") as handle:
                        fields = handle.read().rsplit(b")", 1)[1].split()  # state, parent, group, session
                    if _int(fields[3]) == start_pid:
                        found = True
                        if fields[0] != b"Z":
                            kill(_int(name), 9)  # SIGKILL
                except (_os_error, _index_error):
                    continue
            try:
                while waitpid(-1, 1)[0]:  # WNOHANG
                    pass
            except _no_child:
                pass
            if not found:
                return
            sleep(0.005)

    return end_strays


def make_monitoring_reset(monitoring):
    """`reset()`: take every sys.monitoring callback of every tool away and free the tool ids; True
    if any was in use. From Python 3.12 a tool sees the code of every thread (cProfile, and so
    `%prun`, is one): one that is still registered when a test starts would hand the test's code
    objects, and so its constants, to whoever started it. Once a test runs, only the runner may
    register a callback (the audit hook refuses everyone else). Python 3.11 has no sys.monitoring."""
    if monitoring is None:
        return lambda: False
    register, get_tool, set_events, free_tool = (
        monitoring.register_callback,
        monitoring.get_tool,
        monitoring.set_events,
        monitoring.free_tool_id,
    )
    _range, _value_error = range, ValueError
    # One callback per single event (a combined value such as BRANCH in 3.14 is not registrable).
    events = sorted(
        {
            value
            for value in vars(monitoring.events).values()
            if type(value) is int and value > 0 and value & (value - 1) == 0
        }
    )

    def reset():
        used = False
        for tool in _range(6):  # sys.monitoring's six tool ids
            for event in events:
                try:
                    used = register(tool, event, None) is not None or used
                except _value_error:
                    pass
            if get_tool(tool) is not None:
                used = True
                set_events(tool, 0)
                free_tool(tool)
        return used

    return reset


def make_watchdog(watched, exception, monotonic, sleep):
    """`watchdog()`, for a thread of its own: once the running test's deadline passes (`watched`:
    [deadline, thread id]), raise `exception` in the test's thread, as SIGINT would in the main one."""
    set_async_exc, thread_id, as_object = ctypes.pythonapi.PyThreadState_SetAsyncExc, ctypes.c_ulong, ctypes.py_object

    def watchdog():
        while True:
            sleep(0.05)
            deadline, thread = watched
            if deadline is not None and monotonic() > deadline:
                watched[0] = None
                set_async_exc(thread_id(thread), as_object(exception))

    return watchdog


def make_exit_fork(getpid, start_pid, hard_exit):
    """`exit_fork()`: end this process at once if it is a copy of the kernel the student forked
    (a test's run returns in both): only the kernel itself answers the grader."""

    def exit_fork():
        if getpid() != start_pid:
            hard_exit(0)

    return exit_fork
