"""The trusted test runner, executed inside every grading kernel before any student code
(trusted.BOOT_LINE; never imported by the grader; runner_data.py, runner_reset.py and
runner_torch.py go ahead of it). It deletes its file, listens once on `.grader-runner.sock`
and serves the grader from its own thread, with replies signed by a key the grader sends
before the first cell: `run` executes one test cell with its own references to compile, exec,
the builtins and the release's modules (nothing of IPython on the path); `collect` runs a
judge's code and returns its data as plain literals; `check` puts back and names every hook
point the student bent. An audit hook (PEP 578) refuses what reading or bending it needs:
frames reaching its or a test's frame, a test's code (both known by identity), code claiming
their or a library's file name, gc walks, other audit hooks, sys.monitoring during a test,
ctypes from student code, /proc mem. docs/grade-integrity.md says what this cannot promise."""


def _install():
    import _socket
    import _thread
    import builtins
    import os
    import sys
    import time
    from _hashlib import hmac_digest

    shell = get_ipython()  # noqa: F821 (IPython puts get_ipython into builtins)
    user_ns, start_pid = shell.user_ns, os.getpid()
    getpid, unlink, realpath, hard_exit = os.getpid, os.unlink, os.path.realpath, os._exit
    _compile, _exec, _eval, _repr, _type, _len, _id, _open = compile, exec, eval, repr, type, len, id, open
    _isinstance, _getattr, _setattr, _delattr, _callable = isinstance, getattr, setattr, delattr, callable
    _list, _dict, _tuple, _set, _str, _sorted, _vars = list, dict, tuple, set, str, sorted, vars
    name_of = _type.__dict__["__name__"].__get__
    getframe, get_ident, set_trace, get_trace = sys._getframe, _thread.get_ident, sys.settrace, sys.gettrace
    monotonic, sleep = time.monotonic, time.sleep

    class TestTimeout(BaseException):
        """A test ran past its time limit (a BaseException: `except Exception` does not stop it)."""
    modules, MISSING = sys.modules, object()
    PROTECTED = {"<grader-runner>", "<grader-test>"}  # their file names (only the runner compiles those)
    builtins_copy = _dict(_vars(builtins))

    # -- who is asking ----------------------------------------------------------
    prefixes = _tuple(_sorted({p for base in (sys.prefix, sys.base_prefix, sys.exec_prefix)
                               for p in (base, realpath(base))}))
    # Library code asks for frames for its own use (typing names a caller's module, torch
    # records a stack as text): allowed even below a test. Not so the modules whose job is to
    # hand frames or their locals back to the caller; student code itself is never allowed.
    frame_givers = ("/inspect.py", "/logging/__init__.py", "/pdb.py", "/bdb.py", "/cgitb.py", "/trace.py",
                    "/code.py", "/codeop.py", "/pydoc.py", "/faulthandler.py")
    frame_giver_packages = ("/IPython/", "/ipykernel/", "/stack_data/", "/executing/", "/pure_eval/",
                            "/asttokens/", "/debugpy/", "/jedi/", "/_pydevd")
    # traceback's text-only helpers (torch.manual_seed records a stack this way); not walk_stack.
    stack_texts = {"extract_stack", "format_stack", "print_stack"}

    def is_library(filename):
        return filename.startswith(prefixes) or filename.startswith("<frozen ")

    # The runner's code and every test's, known by identity: a file name can be made up.
    code_type = _type(getframe(0).f_code)

    def code_tree(code, found):
        found[_id(code)] = code
        for const in code.co_consts:
            if _type(const) is code_type:
                code_tree(const, found)
        return found

    # A test's code stays known (and alive) to the end: a frame a student kept holds its test's.
    runner_codes, test_codes = code_tree(getframe(1).f_code, {}), {}  # getframe(1): this file

    def is_runner(code):
        return runner_codes.get(_id(code)) is code

    def is_protected(code):
        return is_runner(code) or test_codes.get(_id(code)) is code

    # -- the audit hook -----------------------------------------------------------
    refused = []                      # what the hook refused since the last reply
    inside = _set()                   # threads running the hook (its own events pass)
    FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"}
    CODE_ATTRS = {"__code__", "gi_code", "cr_code", "ag_code"}
    ALWAYS = {"sys._current_frames": "reading all threads' frames (sys._current_frames)",
              "sys._current_exceptions": "reading all threads' exceptions (sys._current_exceptions)",
              "gc.get_objects": "walking the heap (gc.get_objects)",
              "gc.get_referrers": "walking the heap (gc.get_referrers)",
              "gc.get_referents": "walking the heap (gc.get_referents)",
              "sys.addaudithook": "adding an audit hook (sys.addaudithook)",
              "sys._settraceallthreads": "tracing every thread (sys._settraceallthreads)",
              "sys._setprofileallthreads": "profiling every thread (sys._setprofileallthreads)"}

    MONITOR, MAKES_CODE = "sys.monitoring.register_callback", ("compile", "code.__new__")
    WATCHED = ("sys._getframe", "sys.settrace", "sys.setprofile", MONITOR, *MAKES_CODE)

    def record(what):
        if what not in refused:
            refused.append(what)

    def refuse(what):
        record(f"refused: {what}")
        raise RuntimeError(f"the grader does not allow {what} while grading")

    def requester():
        """The Python frame that caused the event (the hook's caller), past ctypes' own.
        Called from the hook only: 0 is this function, 1 the hook, 2 the cause."""
        frame = getframe(2)
        while frame is not None and "/ctypes/" in frame.f_code.co_filename:
            frame = frame.f_back
        return frame

    def same(a, b):
        """Identity, element by element: a student's object may claim == to anything."""
        return _len(a) == _len(b) and all(x is y for x, y in zip(a, b))

    def reaches_protected(frame):
        while frame is not None:
            if is_protected(frame.f_code):
                return True
            frame = frame.f_back
        return False

    def is_frame_giver(frame):
        name = frame.f_code.co_filename
        if name.endswith("/traceback.py"):
            return frame.f_code.co_name not in stack_texts
        return name.endswith(frame_givers) or any(p in name for p in frame_giver_packages)

    def asker_is_trusted(asker):
        """Whoever, past the helpers that hand frames back (inspect.currentframe, ...), wants it:
        a test or the runner, or library code for its own use; never student code."""
        while asker is not None and is_library(asker.f_code.co_filename) and is_frame_giver(asker):
            asker = asker.f_back
        return asker is None or is_protected(asker.f_code) or is_library(asker.f_code.co_filename)

    def is_file_text(path, source):
        """Whether `source` is the text of the file at `path`."""
        try:
            with _open(path, "rb") as handle:
                text = handle.read()
        except OSError:
            return False
        return text == (source.encode() if _isinstance(source, _str) else source)

    def where(frame):
        if frame is None:
            return "C code"
        name = frame.f_code.co_filename
        return f"{'library ' + name if is_library(name) else 'your code'}, {frame.f_code.co_name}"

    def hook(event, args):
        if event == "open":
            if _isinstance(args[0], (str, bytes)):
                path = args[0] if _isinstance(args[0], str) else args[0].decode(errors="replace")
                if path.startswith("/proc/") and path.endswith(("/mem", "/maps")):
                    refuse("reading the kernel's memory (/proc/.../mem)")
            return
        if event in MAKES_CODE:  # args[1]: the file name the code will claim
            name = args[1].decode(errors="replace") if _isinstance(args[1], bytes) else args[1]
            if not (_isinstance(name, _str) and (name in PROTECTED or is_library(name))):
                return
        attr = args[1] if event == "object.__getattr__" else None
        if not (event in ALWAYS or event in WATCHED or event.startswith("ctypes.")
                or attr in FRAME_ATTRS or attr in CODE_ATTRS):
            return
        thread = get_ident()
        if thread in inside:  # the hook's own events pass
            return
        if event in ALWAYS:
            refuse(ALWAYS[event])
        inside.add(thread)
        try:
            asker = requester()
            if event == "sys._getframe" or attr in FRAME_ATTRS:
                frame = args[0] if event == "sys._getframe" else _getattr(args[0], attr, None)
                if _type(frame).__name__ == "frame" and reaches_protected(frame) and not asker_is_trusted(asker):
                    refuse(f"reading the grader's or a test's frames (from {where(asker)})")
            elif attr in CODE_ATTRS:
                code = _getattr(args[0], attr, None)
                if _type(code) is code_type and is_protected(code) and not asker_is_trusted(asker):
                    refuse("reading a test's code")
            elif event in MAKES_CODE:
                # Only the runner names code after itself or a test; a library's name goes with
                # that file's own text (the import system compiling it), whoever asks: library
                # code can be reached through a loader, thread or executor of the student's.
                runner = asker is not None and is_runner(asker.f_code)
                if not (runner or (event == "compile" and name not in PROTECTED and is_file_text(name, args[0]))):
                    refuse("code that claims a library's or the grader's file name")
            elif event == MONITOR:
                # cProfile (%prun) monitors every thread from Python 3.12: library code may start
                # it between tests; once a test runs, only the runner (reset_monitoring) may.
                runner = asker is not None and is_runner(asker.f_code)
                if not (runner or (watched[0] is None and asker_is_trusted(asker))):
                    refuse("monitoring every thread (sys.monitoring)")
            elif asker is not None and not is_library(asker.f_code.co_filename) and not is_protected(asker.f_code):
                if event.startswith("ctypes."):
                    refuse("ctypes (raw memory and C calls)")
                # A trace is harmless to the tests (per thread; they run in the runner's), but a
                # student's own is an attempt worth a flag; %prun and pdb are library code.
                record(f"set a trace or profile function ({event})")
        finally:
            inside.discard(thread)

    # -- hook points and their original values -----------------------------------------
    def class_dicts(cls):
        return [(c, _dict(_vars(c))) for c in cls.__mro__ if c is not object]

    def list_points():
        manager = shell.input_transformer_manager
        return [("IPython input transformers (input_transformers_cleanup)", shell, "input_transformers_cleanup"),
                ("IPython input transformers (input_transformers_post)", shell, "input_transformers_post"),
                ("IPython input transformers (cleanup_transforms)", manager, "cleanup_transforms"),
                ("IPython input transformers (line_transforms)", manager, "line_transforms"),
                ("IPython input transformers (token_transformers)", manager, "token_transformers"),
                ("IPython AST transformers", shell, "ast_transformers")]

    lists = [(label, owner, name, _getattr(owner, name), _list(_getattr(owner, name)))
             for label, owner, name in list_points()]
    shell_traits = ("displayhook", "display_pub", "display_formatter", "input_transformer_manager",
                    "events", "compile", "InteractiveTB", "SyntaxTB", "custom_exceptions", "CustomTB",
                    "history_manager", "user_ns", "user_module")
    shell_values = {name: _getattr(shell, name, MISSING) for name in shell_traits}
    kernel = _getattr(shell, "kernel", None)
    handlers = _dict(kernel.shell_handlers) if kernel is not None else {}
    events = {name: _list(callbacks) for name, callbacks in shell.events.callbacks.items()}
    sys_values = {name: _getattr(sys, name, MISSING) for name in ("breakpointhook", "unraisablehook")}
    meta_path = _list(sys.meta_path)
    classes = class_dicts(_type(shell)) + (class_dicts(_type(kernel)) if kernel is not None else [])
    for part in (shell.displayhook, shell.display_pub, shell.events, shell.input_transformer_manager):
        classes += [(c, d) for c, d in class_dicts(_type(part)) if all(c is not k for k, _ in classes)]
    instances = [(shell, _set(_vars(shell))), *([(kernel, _set(_vars(kernel)))] if kernel is not None else [])]
    module_names = ("builtins", "math", "operator", "copy", "torch", "torch.nn", "torch.nn.functional", "torch.nn.init",
                    "torch.testing", "torch.testing._comparison", "torch.autograd", "torch.nn.modules.module",
                    "torch.optim", "torch.optim.lr_scheduler", "numpy", "numpy.testing")
    saved_modules = {name: modules[name] for name in module_names if name in modules}
    module_dicts = [(name, module, _dict(_vars(module))) for name, module in saved_modules.items()]
    torch = saved_modules.get("torch")
    if torch is not None:
        seen = _set()
        owners = [modules.get(n) for n in ("torch.nn", "torch.optim", "torch.optim.lr_scheduler")]  # what tests build
        for value in [torch.Tensor, *(v for owner in owners if owner for v in _vars(owner).values())]:
            if _isinstance(value, _type) and value not in seen and value.__module__.startswith("torch"):
                seen.add(value)
                classes += [(c, d) for c, d in class_dicts(value) if c.__module__.startswith("torch")]
        hook_owners = [modules.get(n) for n in ("torch.nn.modules.module", "torch.optim.optimizer")]
        global_hooks = [(name, value, _len(value)) for owner in hook_owners if owner
                        for name, value in _vars(owner).items() if name[:8] == "_global_" and _isinstance(value, _dict)]
        tensor_types = (torch.Tensor, torch.nn.Parameter)  # what a judge receives as a tensor
        size_type, tensor_tolist = torch.Size, torch._C.TensorBase.tolist
        dtype_name = torch._C.TensorBase.__dict__["dtype"].__get__
        function_stack = torch._C._len_torch_function_stack
        pop_function_mode = torch._C._pop_torch_function_stack
        dispatch_stack = _getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)
        dispatch_state = guard_dispatcher(torch, refuse)  # runner_torch.py: torch.library's kernels
    else:
        global_hooks = []
        tensor_types, size_type, tensor_tolist, dtype_name = (), None, None, None
        function_stack = dispatch_stack = lambda: 0
        dispatch_state = lambda: ""
        pop_function_mode = None
    all_modules = _dict(modules)

    def library_callback(callback):
        function = _getattr(callback, "__func__", callback)
        code = _getattr(function, "__code__", None)
        return code is not None and is_library(code.co_filename)

    def library_wrapper(new, old, cls=None, name=""):
        """Whether `new` is library code wrapping `old` (functools.wraps sets __wrapped__). On a class
        `cls`, the wrapper must come from the file of a class in its hierarchy, and a name new on it
        may wrap what its bases held at start (an optimizer class wraps an inherited step)."""
        if cls is not None:
            homes = {_getattr(modules.get(c.__module__), "__file__", None) for c in cls.__mro__}
            if _getattr(_getattr(new, "__code__", None), "co_filename", None) not in homes:
                return False
        if old is MISSING:
            old = next((d[name] for b in cls.__mro__[1:] for c, d in classes if c is b and name in d), old)
        for _ in range(5):
            code = _getattr(new, "__code__", None)
            if code is None or not is_library(code.co_filename):
                return False
            new = _getattr(new, "__wrapped__", None)
            if new is old:
                return True
        return False

    def shadows(cls, name):
        return any(name in saved for c, saved in classes if c is not cls and c in cls.__mro__)

    # IPython's builtin trap puts these into builtins for the length of each cell.
    TRAPPED = {"_", "__", "___", "exit", "quit", "get_ipython", "display", "__IPYTHON__"}

    # Made by runner_data.py (a judge's data as plain literals) and runner_reset.py, ahead of this file.
    plain = make_plain(tensor_types, size_type, tensor_tolist, dtype_name, saved_modules.get("numpy"))
    end_strays = make_end_strays(start_pid, os.getsid, os.listdir, _open, os.kill, os.waitpid, sleep)
    reset_monitoring = make_monitoring_reset(_getattr(sys, "monitoring", None))

    def check():
        """Name every hook point that changed since start, and put back the original."""
        end_strays()
        found = []
        for label, owner, name, original, items in lists:
            current = _getattr(owner, name, MISSING)
            if current is not original or not same(current, items):
                found.append(label)
                original[:] = items
                if current is not original:
                    _setattr(owner, name, original)
        for name, original in shell_values.items():
            if _getattr(shell, name, MISSING) is not original:
                found.append(f"the IPython shell's {name}")
                _setattr(shell, name, original)
        for name, callbacks in shell.events.callbacks.items():
            kept = events.get(name, [])
            kept_ids = {_id(c) for c in kept}
            extra = [c for c in callbacks if _id(c) not in kept_ids and not library_callback(c)]
            current_ids = {_id(c) for c in callbacks}
            if extra or any(_id(c) not in current_ids for c in kept):
                found.append(f"IPython events ({name})")
                callbacks[:] = [c for c in callbacks if _id(c) in kept_ids or library_callback(c)]
                current_ids = {_id(c) for c in callbacks}
                callbacks.extend(c for c in kept if _id(c) not in current_ids)
        current = kernel.shell_handlers if kernel is not None else {}
        if _set(current) != _set(handlers) or any(current[k] is not v for k, v in handlers.items()):
            found.append("the kernel's message handlers (shell_handlers)")
            kernel.shell_handlers.clear()
            kernel.shell_handlers.update(handlers)
        for name, original in sys_values.items():
            if _getattr(sys, name, MISSING) is not original:
                found.append(f"sys.{name}")
                _setattr(sys, name, original)
        if not same(sys.meta_path, meta_path):
            found.append("the import system (sys.meta_path)")
            sys.meta_path[:] = meta_path
        for owner, names in instances:
            for name in _set(_vars(owner)) - names:
                if _callable(_getattr(_type(owner), name, None)):
                    found.append(f"{name_of(_type(owner))}.{name} (replaced on the instance)")
                    _delattr(owner, name)
        for cls, saved in classes:
            current = _vars(cls)
            for name in _set(current) | _set(saved):
                old, new = saved.get(name, MISSING), current.get(name, MISSING)
                # Behaviour only (caches filled lazily are data); a library's wrapper is no change.
                if old is not new and (_callable(old) or _callable(new)) \
                        and (old is not MISSING or shadows(cls, name)) and not library_wrapper(new, old, cls, name):
                    found.append(f"{cls.__module__}.{name_of(cls)}.{name}")
                    if name in saved:
                        _setattr(cls, name, saved[name])
                    else:
                        _delattr(cls, name)
        for module_name, module in all_modules.items():  # what `import` in a test cell gets
            if modules.get(module_name) is not module and module_name != "__main__":
                found.append(f"sys.modules[{module_name!r}]")
                modules[module_name] = module
        for module_name, module, saved in module_dicts:
            current = _vars(module)
            for name, value in saved.items():
                new = current.get(name, MISSING)
                if new is not value and name not in TRAPPED:
                    if library_wrapper(new, value):
                        saved[name] = new  # e.g. torch._dynamo wraps torch.manual_seed when first imported
                        continue
                    found.append(f"{module_name}.{name}")
                    current[name] = value
        for name, registry, size in global_hooks:
            if _len(registry) != size:
                found.append(f"torch's global hooks ({name})")
                registry.clear()
        if shell.user_ns is not user_ns:
            found.append("the notebook's namespace (user_ns)")
            shell.user_ns = user_ns
        found += refused
        refused.clear()
        return found

    # -- running one test --------------------------------------------------------------
    tests_ns = {}
    CappedText = make_capped_text(20000)  # runner_data.py: what a test prints, up to a limit
    watched = [None, None]        # [deadline of the running test, its thread], for the watchdog
    watchdog = make_watchdog(watched, TestTimeout, monotonic, sleep)  # runner_reset.py

    def resolve(module_name, attribute):
        module = all_modules.get(module_name) or modules.get(module_name)
        if module is None:
            module = builtins_copy["__import__"](module_name, fromlist=["_"] if "." in module_name else [])
        return module if attribute is None else _getattr(module, attribute)

    def run(source, imports, timeout, collect=False):
        before = check()
        tests_ns.update(user_ns)
        tests_ns["__builtins__"] = _dict(builtins_copy)
        for name, (module_name, attribute) in imports.items():
            try:
                tests_ns[name] = resolve(module_name, attribute)
            except Exception:
                pass
        stdout, stderr = CappedText(), CappedText()
        real_out, real_err = sys.stdout, sys.stderr
        reply = {"passed": False, "ename": "", "message": "", "by_test": False, "timed_out": False}
        set_trace(None)
        monitored, dispatch_keys = False, None
        try:
            try:
                code = _compile(source, "<grader-test>", "exec", dont_inherit=True)
                code_tree(code, test_codes)
                sys.stdout, sys.stderr = stdout, stderr
                watched[1], watched[0] = get_ident(), monotonic() + timeout
                monitored = reset_monitoring()  # no tool may see the test's code
                dispatch_keys = dispatch_state()
                tests_ns.pop("judged", None)
                _exec(code, tests_ns)
                watched[0] = None
                if collect:
                    reply["data"] = plain(tests_ns.get("judged"))
                reply["passed"] = True
            finally:
                watched[0] = None
        except TestTimeout:
            reply.update(ename="TimeoutError", message=f"the test ran past {timeout:g} s and was stopped",
                         by_test=True, timed_out=True)
        except BaseException as error:  # noqa: BLE001 (the student's code may raise anything)
            reply["ename"] = name_of(_type(error))
            if _len(args := error.args) == 1 and _type(args[0]) is _str:
                reply["message"] = args[0][:2000]
            traceback = error.__traceback__
            while traceback is not None and traceback.tb_next is not None:
                traceback = traceback.tb_next
            reply["by_test"] = traceback is not None and is_protected(traceback.tb_frame.f_code)
            reply["line"] = (tb := error.__traceback__.tb_next) and tb.tb_frame.f_code is code and tb.tb_lineno
            # The frames of a failed test may hold what exhausted memory: let them go now.
            traceback = tb = error.__traceback__ = None
        finally:
            sys.stdout, sys.stderr = real_out, real_err
        if getpid() != start_pid:
            hard_exit(0)  # a copy the student forked: only the kernel itself answers
        during = ["a monitoring tool (sys.monitoring) in use when a test started"] if monitored else []
        if get_trace() is not None:
            during.append("a trace function set while a test ran")
            set_trace(None)
        if dispatch_keys is not None and dispatch_state() != dispatch_keys:
            during.append("torch's dispatch keys switched on or off while a test ran")
        if function_stack() or dispatch_stack():
            during.append("a torch function or dispatch mode left active while a test ran")
            while function_stack():
                pop_function_mode()
        during += check()
        if during:
            reply["passed"] = False
        reply.update(flags=before + during, tampered_during=bool(during), stdout=stdout.getvalue(),
                     stderr=stderr.getvalue(), truncated=stdout.truncated or stderr.truncated)
        return reply

    # -- the channel to the grader -------------------------------------------------------
    listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    listener.bind(".grader-runner.sock")
    listener.listen(1)
    recv, sendall = _socket.socket.recv, _socket.socket.sendall

    def read_exactly(conn, size):
        data = b""
        while _len(data) < size:
            chunk = recv(conn, size - _len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def serve():
        descriptor, _ = listener._accept()  # the C socket's accept: a file descriptor
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, descriptor)
        listener.close()
        try:
            unlink(".grader-runner.sock")
        except OSError:
            pass
        key = read_exactly(conn, 32)
        while True:
            size = int.from_bytes(read_exactly(conn, 4), "big")
            request = _eval(read_exactly(conn, size).decode(), {"__builtins__": {}})
            try:
                if request["op"] in ("run", "collect"):
                    reply = run(request["source"], request["imports"], request["timeout"],
                                collect=request["op"] == "collect")
                else:
                    reply = {"flags": check()}
            except BaseException as error:  # noqa: BLE001 (reported to the grader, never lost)
                reply = {"runner_error": f"{name_of(_type(error))}: {error}", "passed": False,
                         "flags": [f"the grader's runner failed here ({name_of(_type(error))})"]}
            reply["id"] = request["id"]
            payload = _repr(reply).encode()
            sendall(conn, _len(payload).to_bytes(4, "big") + hmac_digest(key, payload, "sha256") + payload)

    try:
        unlink(".grader-runner.py")
    except OSError:
        pass
    _thread.start_new_thread(serve, ())
    _thread.start_new_thread(watchdog, ())
    sys.addaudithook(hook)


_install()
del _install
