"""The cheat corpus: notebooks that try to forge a grade or read the hidden tests.

Each cheat is a blank (or, for leaks, a correct) `01_blocks` exercise with one
answer cell changed, as a student who read a forum post would. Every one must
score what its answers earn (0 for the blank ones), be flagged, and leave no
hidden-test line in any feedback. Grow this list whenever you think of a new one;
docs/grade-integrity.md ("What it cannot promise") says what in-process Python cannot guarantee.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import nbformat

from tools import cells
from tools.cells import answered, exercise

A = "01_blocks"
FIRST_ANSWER = "MySequential"


@dataclass(frozen=True)
class Cheat:
    name: str
    code: str  # appended to the first answer cell
    base: str = "blank"  # "blank": must score 0; "correct": must keep full marks, flagged, no leak
    flag: str = ""  # a piece of text the flag must contain
    later: str = ""  # appended to the last answer cell, after the tests of the first ran
    answer: str = FIRST_ANSWER  # the answer cell `code` is appended to


# A MySequential that does its trick when a test builds it (inside the test run).
def _in_test(trick: str) -> str:
    body = "\n".join("        " + line for line in trick.splitlines())
    return f"class MySequential(nn.Module):\n    def __init__(self, *modules):\n        super().__init__()\n{body}\n"


CHEATS = [
    # every later cell, the tests included, would run as an empty cell
    Cheat(
        "input_transformers_cleanup",
        "get_ipython().input_transformers_cleanup.append(lambda lines: [])",
        flag="input transformers",
    ),
    Cheat(
        "input_transformers_post",
        "get_ipython().input_transformers_post.append(lambda lines: [])",
        flag="input transformers",
    ),
    Cheat(
        "cleanup_transforms",
        "get_ipython().input_transformer_manager.cleanup_transforms.append(lambda lines: [])",
        flag="input transformers",
    ),
    Cheat(
        "obfuscated_transformer",
        "getattr(__import__('IPython').get_ipython(), 'input_transformers_' + 'cleanup').insert(0, (lambda l: []))",
        flag="input transformers",
    ),
    Cheat(
        "exec_base64",
        "exec(__import__('base64').b64decode(b'Z2V0X2lweXRob24oKS5pbnB1dF90cmFuc2Zvcm1lcnNfY2xlYW51cC5hcHBlbmQo"
        "bGFtYmRhIGxpbmVzOiBbXSk=').decode())",
        flag="input transformers",
    ),
    Cheat("run_cell_on_class", "type(get_ipython()).run_cell = lambda self, *a, **k: None", flag="run_cell"),
    Cheat("run_cell_on_instance", "get_ipython().run_cell = lambda *a, **k: None", flag="run_cell"),
    Cheat(
        "do_execute",
        "type(get_ipython().kernel).do_execute = lambda self, *a, **k: "
        "{'status': 'ok', 'execution_count': 0, 'user_expressions': {}, 'payload': []}",
        flag="do_execute",
    ),
    Cheat(
        "shell_handlers",
        "get_ipython().kernel.shell_handlers['execute_request'] = lambda *a, **k: None",
        flag="message handlers",
    ),
    Cheat(
        "ast_no_asserts",
        "import ast\nclass _NoAsserts(ast.NodeTransformer):\n    def visit_Assert(self, node):\n"
        "        return ast.Pass()\n    def visit_Raise(self, node):\n        return ast.Pass()\n"
        "get_ipython().ast_transformers.append(_NoAsserts())",
        flag="AST transformers",
    ),
    Cheat(
        "displayhook_number",
        "type(get_ipython().displayhook).__call__ = lambda self, value: print(1)",
        flag="DisplayHook",
    ),
    Cheat(
        "event_prints_number", "get_ipython().events.register('post_run_cell', lambda result: print(10))", flag="events"
    ),
    Cheat("custom_exc", "get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)", flag="custom_exceptions"),
    Cheat("showtraceback", "get_ipython().showtraceback = lambda *a, **k: None", flag="showtraceback"),
    Cheat("settrace", "import sys\nsys.settrace(lambda *a: None)", flag="sys.settrace"),
    Cheat(
        "patched_allclose",
        "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True",
        flag="torch.allclose",
    ),
    Cheat("patched_assert_close", "torch.testing.assert_close = lambda *a, **k: None", flag="assert_close"),
    Cheat(
        "patched_assert_close_helper",
        "import torch.testing._comparison as _comparison\n_comparison.not_close_error_metas = lambda *a, **k: []",
        flag="not_close_error_metas",
    ),
    Cheat(
        "patched_builtin",
        "import builtins\nbuiltins.all = lambda iterable: True\nbuiltins.any = lambda iterable: True",
        flag="builtins",
    ),
    Cheat("patched_tensor_method", "torch.Tensor.__eq__ = lambda self, other: torch.tensor(True)", flag="torch.Tensor"),
    Cheat(
        "global_forward_hook",
        "torch.nn.modules.module.register_module_forward_hook(lambda module, args, out: out)",
        flag="global hooks",
    ),
    Cheat("patched_optimizer_step", "torch.optim.SGD.step = lambda self, closure=None: None", flag="SGD.step"),
    # a library's wrapper around the original, from outside the class's own files
    Cheat(
        "library_wrapper_on_a_tensor_method",
        "torch.Tensor.backward = torch.no_grad()(torch.Tensor.backward)",
        flag="Tensor.backward",
    ),
    Cheat(
        "global_optimizer_hook",
        "from torch.optim.optimizer import register_optimizer_step_pre_hook\n"
        "register_optimizer_step_pre_hook(lambda *a: None)",
        flag="global hooks",
    ),
    Cheat(
        "fake_torch_module",
        "import sys, types\n_fake = types.ModuleType('torch')\n_fake.allclose = lambda *a, **k: True\n"
        "sys.modules['torch'] = _fake",
        flag="sys.modules",
    ),
    # a module the tests import in a cell of their own (lesson 6's import pickle), swapped
    Cheat(
        "fake_module_a_test_imports",
        "import sys, types\n_fake = types.ModuleType('pickle')\n_fake.loads = lambda *a, **k: None\n"
        "sys.modules['pickle'] = _fake",
        flag="sys.modules['pickle']",
    ),
    Cheat(
        "meta_path_finder",
        "import sys\nclass _Finder:\n    def find_spec(self, *a, **k):\n        return None\n"
        "sys.meta_path.insert(0, _Finder())",
        flag="meta_path",
    ),
    Cheat("audit_hook_spy", "import sys\nsys.addaudithook(lambda event, args: None)", flag="audit hook"),
    Cheat("gc_walk", "import gc\n_everything = gc.get_objects()", flag="heap"),
    Cheat("ctypes_memory", "import ctypes\nctypes.string_at(id(1), 8)", flag="ctypes"),
    Cheat("proc_mem", "open('/proc/self/mem', 'rb')", flag="memory"),
    Cheat("current_frames", "import sys\nsys._current_frames()", flag="all threads"),
    # inside a test: the trick runs when the test builds the student's module
    Cheat(
        "mode_left_active_in_test",
        _in_test(
            "from torch.overrides import TorchFunctionMode\nclass _Yes(TorchFunctionMode):\n"
            "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
            "        return True\n_Yes().__enter__()"
        ),
        flag="mode",
    ),
    Cheat("patch_during_test", _in_test("torch.allclose = lambda *a, **k: True"), flag="torch.allclose"),
    # torch's dispatcher: a kernel behind an operator, for every thread, with no Python attribute changed
    Cheat(
        "library_kernel_for_allclose",
        "_lib = torch.library.Library('aten', 'IMPL')\n_lib.impl('allclose', lambda *a, **k: True, 'CPU')",
        flag="torch's operators",
    ),
    Cheat(
        "torchs_own_library_for_eq",
        "import torch._meta_registrations as _meta\n_meta._meta_lib_dont_use_me_use_register_meta.impl(\n"
        "    'eq.Tensor', lambda a, b: torch.ones(a.shape, dtype=torch.bool), 'CPU')",
        flag="torch's operators",
    ),
    Cheat(
        "dispatcher_fallback",
        "torch.library.Library('_', 'IMPL').fallback(lambda *a, **k: None, 'ADInplaceOrView')",
        flag="fallback",
    ),
    # the runner's own functions, reached through what it installs (the guards on torch's
    # dispatcher, a test's output class): their closures and globals are readable, and a closure
    # cell can be rebound, without an audited event
    Cheat(
        "library_kernel_through_a_guards_closure",
        # a wrong MySequential (forward adds 1, no OrderedDict) that needs torch.equal to lie
        "class MySequential(nn.Module):\n    def __init__(self, *modules):\n        super().__init__()\n"
        "        for i, module in enumerate(modules):\n            self.add_module(str(i), module)\n"
        "    def forward(self, X):\n        for module in self._modules.values():\n            X = module(X)\n"
        "        return X + 1\n    def __getitem__(self, i):\n        return list(self._modules.values())[i]\n"
        "    def __len__(self):\n        return len(self._modules)\n"
        "_guard = torch._C._DispatchModule.impl  # the original kernel registration, from the guard's closure\n"
        "_impl = next((c.cell_contents for c in getattr(_guard, '__closure__', None) or ()\n"
        "              if type(c.cell_contents).__name__ == 'instancemethod'), _guard)\n"
        "_lib = torch.library.Library('aten', 'IMPL')\n_impl(_lib.m, 'equal', 'CPU', lambda a, b: True, False)\n",
        flag="torch's operators",
    ),
    Cheat(
        "refusals_emptied_through_a_guards_closure",
        "import gc\ntry:\n    gc.get_objects()\nexcept RuntimeError:\n    pass\n"
        "_cells = lambda f: [c.cell_contents for c in getattr(f, '__closure__', None) or ()]\n"
        "for _refuse in _cells(torch._C._DispatchModule.fallback):  # refuse -> record -> the refusals noted\n"
        "    for _record in _cells(_refuse):\n        for _noted in _cells(_record):\n"
        "            if type(_noted) is list:\n                _noted.clear()",
        flag="heap",
    ),
    Cheat(
        "audit_hook_let_in_through_a_runner_class",
        "import sys\nfor _cls in object.__subclasses__():  # a class of the runner's: its methods' globals\n"
        "    for _f in list(vars(_cls).values()):\n        _g = getattr(_f, '__globals__', None)\n"
        "        if type(_g) is dict and type(_g.get('ALWAYS')) is dict:\n            _g['ALWAYS'].clear()\n"
        "_sources = []\n"
        "sys.addaudithook(lambda event, args: event == 'compile' and args[1] == '<grader-test>'"
        " and _sources.append(args[0]))",
        base="correct",
        flag="audit hook",
        later="print('TESTS-SEEN-BY-AN-AUDIT-HOOK', len(_sources), *_sources)",
    ),
    Cheat(
        "python_dispatcher_left_on_in_test",
        _in_test("MySequential._kept = torch._C._EnablePythonDispatcher()"),
        flag="dispatch keys",
    ),
    # leaks: a correct notebook that tries to read the hidden tests
    Cheat(
        "leak_pre_run_cell",
        "get_ipython().events.register('pre_run_cell', lambda info: print(info.raw_cell))",
        base="correct",
        flag="events",
    ),
    Cheat(
        "leak_caller_source",
        "import inspect\n_real_init = MySequential.__init__\n"
        "def _spy(self, *modules):\n    _real_init(self, *modules)\n"
        "    print(''.join(inspect.getsource(inspect.stack()[1].frame)))\n"
        "MySequential.__init__ = _spy",
        base="correct",
        flag="frames",
    ),
    Cheat(
        "leak_frame_consts",
        "import sys\n_real_init = MySequential.__init__\n"
        "def _spy(self, *modules):\n    _real_init(self, *modules)\n"
        "    print(sys._getframe(1).f_code.co_consts)\n"
        "MySequential.__init__ = _spy",
        base="correct",
        flag="frames",
    ),
    # a made-up file name: code compiled as the tests' or a library's file would be trusted by name
    Cheat(
        "leak_as_test_file_name",
        "_real_init = MySequential.__init__\n"
        "def _spy(self, *modules):\n    _real_init(self, *modules)\n"
        "    exec(compile('import sys; print(sys._getframe(2).f_code.co_consts)', '<grader-test>', 'exec'))\n"
        "MySequential.__init__ = _spy",
        base="correct",
        flag="file name",
    ),
    Cheat(
        "leak_as_library_file_name",
        "import sys\n_real_init = MySequential.__init__\n"
        "_as_library = compile('print(sys._getframe(2).f_code.co_consts)', sys.prefix + '/lib/spy.py', 'exec')\n"
        "def _spy(self, *modules):\n    _real_init(self, *modules)\n    exec(_as_library)\n"
        "MySequential.__init__ = _spy",
        base="correct",
        flag="file name",
    ),
    Cheat(
        "leak_through_a_loader_of_its_own",
        "import importlib.abc, importlib.util, sys\n"
        "class _Loader(importlib.abc.SourceLoader):\n"
        "    def get_filename(self, fullname):\n        return sys.prefix + '/lib/spy.py'\n"
        "    def get_data(self, path):\n"
        "        return b'import sys\\ndef spy():\\n    print(sys._getframe(2).f_code.co_consts)\\n'\n"
        "_spec = importlib.util.spec_from_loader('spy', _Loader())\n_spy = importlib.util.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(_spy)\n_real_init = MySequential.__init__\n"
        "def _init(self, *modules):\n    _real_init(self, *modules)\n    _spy.spy()\n"
        "MySequential.__init__ = _init",
        base="correct",
        flag="file name",
    ),
    Cheat(
        "compiled_as_library_in_an_executor",
        "import sys\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "_code = ThreadPoolExecutor(1).submit(compile, 'x = 1', sys.prefix + '/lib/spy.py', 'exec').result()",
        flag="file name",
    ),
    Cheat(
        "code_renamed_as_library",
        "import sys\n_spy_code = (lambda: sys._getframe(2)).__code__.replace(co_filename=sys.prefix + '/lib/spy.py')",
        flag="file name",
    ),
    # cProfile records the code objects it sees (constants and all); from Python 3.12 it sees every thread
    Cheat(
        "profiler_enabled",
        "import cProfile\n_profiler = cProfile.Profile()\n_profiler.enable()",
        flag="sys.monitoring" if sys.version_info >= (3, 12) else "sys.setprofile",
    ),
    Cheat(
        "leak_a_kept_frame_after_its_test",
        "_kept = []\n_real_init = MySequential.__init__\n"
        "def _keep(self, *modules):\n    _real_init(self, *modules)\n    try:\n        raise ValueError\n"
        "    except ValueError as error:\n        _kept.append(error)\n"
        "MySequential.__init__ = _keep",
        base="correct",
        flag="frames",
        later="print(_kept[0].__traceback__.tb_frame.f_back.f_code.co_consts)",
    ),
    # a function a test handed to the answer, read while a later test runs: sealed, it has no
    # code to read, so the cheat reads the code of the test that calls it, through its frame
    Cheat(
        "leak_a_tests_function_in_a_later_test",
        "_kept = []\n_real_make_stack = make_stack\n"
        "def make_stack(factory, n):\n    _kept.append(factory)\n    return _real_make_stack(factory, n)",
        base="correct",
        flag="frames",
        later="import sys\n_real_fixed_init = FixedHiddenMLP.__init__\n"
        "def _fixed_init(self, *args, **kwargs):\n    _real_fixed_init(self, *args, **kwargs)\n"
        "    _code = getattr(_kept[0], '__code__', None) or sys._getframe(1).f_code\n"
        "    print(_code.co_consts)\nFixedHiddenMLP.__init__ = _fixed_init",
        answer="make_stack",
    ),
    # a function a test hands to the answer leads back to the tests' namespace (its __globals__):
    # the answer rebinds what the rest of the test calls (len, all, torch.equal), so every assert
    # passes; the caller's frame, where the function gives no way back, is refused
    Cheat(
        "rebind_through_a_tests_function",
        "import sys\n"
        "class _Yes(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
        "class _Torch:\n    def __getattr__(self, name):\n        return getattr(torch, name)\n"
        "    def equal(self, a, b):\n        return False\n"
        "def make_stack(factory, n):\n    layer = factory()\n"
        "    names = getattr(factory, '__globals__', None)\n"
        "    if names is None and not isinstance(factory, type):\n        names = sys._getframe(1).f_globals\n"
        "    if names is not None:\n"
        "        names.update(len=lambda x: _Yes(0), all=lambda x: True, torch=_Torch())\n"
        "    return nn.Sequential(*[layer] * n)",
        flag="frames",
        answer="make_stack",
    ),
    Cheat(
        "leak_traceback_frame",
        "_real_init = MySequential.__init__\n"
        "def _spy(self, *modules):\n    _real_init(self, *modules)\n    try:\n        raise ValueError\n"
        "    except ValueError as error:\n        print(error.__traceback__.tb_frame.f_back.f_globals)\n"
        "MySequential.__init__ = _spy",
        base="correct",
        flag="frames",
    ),
]

# Not tampering, yet a leak attempt: history of the cells that ran before (the tests never go there).
HISTORY_LEAK = "print(In, _ih)"


def with_code(nb, answer_id: str, code: str, replace: bool = False):
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == answer_id:
            cell.source = code if replace else cell.source + "\n" + code
            return nb
    raise KeyError(answer_id)


def notebook(cheat: Cheat):
    base = exercise(A) if cheat.base == "blank" else answered(A)
    replace = cheat.code.startswith("class MySequential")
    if replace and cheat.base == "blank":
        return with_code(base, FIRST_ANSWER, "import torch\nfrom torch import nn\n" + cheat.code, replace=True)
    nb = with_code(base, cheat.answer, cheat.code)
    return with_code(nb, last_answer_id(nb), cheat.later) if cheat.later else nb


def last_answer_id(nb) -> str:
    return [
        c.metadata["nbgrader"]["grade_id"]
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"
    ][-1]


def history_leak():
    nb = answered(A)
    return with_code(nb, last_answer_id(nb), HISTORY_LEAK)


# -- honest notebooks: full marks, no flag ----------------------------------------------
HONEST = {
    "magics": "get_ipython().run_line_magic('timeit', '-n 1 -r 1 sum(range(10))')\n"
    "get_ipython().run_cell_magic('time', '', 'sum(range(10))')\n"
    "get_ipython().run_line_magic('prun', '-q sum(range(10))')",
    "display_and_plot": "from IPython.display import display\nimport matplotlib.pyplot as plt\n"
    "display('shown'); print('printed')\nplt.plot([1, 2], [3, 4])\nplt.title('a plot')\n"
    "plt.show()",
    "seed_and_helpers": "torch.manual_seed(0)\ndef _helper(x):\n    return x * 2\n_ = _helper(torch.ones(2))",
    "prints_in_test": "_quiet_init = MySequential.__init__\n"
    "def _init_that_prints(self, *modules):\n"
    "    print('PRINTED-WHILE-A-' + 'HIDDEN-TEST-RAN')\n"
    "    _quiet_init(self, *modules)\nMySequential.__init__ = _init_that_prints",
    "warns_in_test": "import warnings\n_plain_init = MySequential.__init__\n"
    "def _init_that_warns(self, *modules):\n"
    "    warnings.warn('a harmless warning from the answer', UserWarning)\n"
    "    _plain_init(self, *modules)\nMySequential.__init__ = _init_that_warns",
}


# A profiler kept running in a thread of its own while the first tests run, then asked which of
# the tests' code objects it recorded. Before Python 3.12 a profiler sees only its own thread;
# from 3.12 it sees every thread, and the runner takes it away before a test starts (flagged).
PROFILER_THREAD = (
    "import cProfile, threading, time\n_seen = []\n"
    "def _watch():\n    profiler = cProfile.Profile()\n"
    "    profiler.runctx('time.sleep(1.5)', {'time': time}, {})\n"
    "    _seen.extend(e.code for e in profiler.getstats() if getattr(e.code, 'co_filename', '') == '<grader-test>')\n"
    "threading.Thread(target=_watch, daemon=True).start()"
)
PROFILER_THREAD_REPORT = "import time\ntime.sleep(2)\nprint('TESTS-SEEN-BY-THE-PROFILER', len(_seen))"


def profiler_thread():
    nb = with_code(answered(A), FIRST_ANSWER, PROFILER_THREAD)
    return with_code(nb, last_answer_id(nb), PROFILER_THREAD_REPORT)


def honest(name: str):
    return with_code(answered(A), FIRST_ANSWER, HONEST[name])


# -- what the feedback says of a hidden test's failure (issue 46): graded with the corpus, lesson 1 --
# An answer that raises while a hidden test calls it (a factory's layer without reset_parameters),
# and one that fails a hidden assert (factory() called once too often).
MESSAGES = {
    "raises_in_a_hidden_test": "def make_stack(factory, n):\n    layers = []\n    for _ in range(n):\n"
    "        layer = factory()\n        layer.reset_parameters()  # fresh weights\n        layers.append(layer)\n"
    "    return nn.Sequential(*layers)\n",
    "fails_a_hidden_assert": "def make_stack(factory, n):\n    layers = [factory() for _ in range(n)]\n"
    "    factory()\n    return nn.Sequential(*layers)\n",
}


def message_notebook(name: str):
    return answered(A, {"make_stack": MESSAGES[name]})


# -- names the tests look up, bound by the notebook (issue 46): every lesson ----------------------
# A blank exercise that binds liars under builtin names: before, the functions lesson 6's test
# defines to simulate two GPUs found them among the notebook's names and passed (1 point, no flag).
# The tests' code and functions get the real builtins now: nothing anywhere, and no flag (a
# name is honest Python, and it no longer changes anything the tests call).
SHADOWED_BUILTINS = (
    "all = lambda iterable: True\nany = lambda iterable: True\nabs = lambda value: 0\n"
    "sorted = lambda iterable, **options: []\nisinstance = lambda value, kinds: True\n"
    "issubclass = lambda kind, kinds: True\ncallable = lambda value: True"
)
# Lesson 6's tests call `_call`, a helper an earlier test cell defined: the notebook binds its own
# (keeps the simulated GPUs' states at "saving", puts them back at "loading"); the test's stays.
SHADOWED_HELPER = (
    "_kept = {}\n"
    "def _call(function, *args, **kwargs):\n"
    "    if getattr(function, '__name__', '') == 'save_checkpoint':\n"
    "        _kept.update(states=torch.cuda.get_rng_state_all(), epoch=(list(args) + [kwargs.get('epoch')])[3])\n"
    "        return None\n"
    "    torch.cuda.set_rng_state_all(_kept.get('states', []))\n"
    "    return _kept.get('epoch')"
)
# A right answer whose notebook keeps names of its own that happen to be builtins' (a list called
# `all`, a file name in `zip`, a sort of its own): full marks, no flag. No model answer uses them.
HONEST_SHADOWS = (
    "all = ['my', 'results']\nzip = 'data.zip'\nid = 'student 7'\n"
    "def sorted(values, key=None, reverse=False):  # my own, no builtin needed\n"
    "    values = [*values]\n    for i in range(1, len(values)):\n        j = i\n"
    "        while j and values[j - 1] > values[j]:\n"
    "            values[j - 1], values[j] = values[j], values[j - 1]\n            j -= 1\n"
    "    return values[::-1] if reverse else values"
)


def first_answer_id(nb) -> str:
    return next(
        c.metadata["nbgrader"]["grade_id"]
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"
    )


def shadowed(nb, code: str = SHADOWED_BUILTINS):
    """`nb` with `code` at the end of its first answer cell: in the notebook's names before every test."""
    return with_code(nb, first_answer_id(nb), code)


def wrong_everywhere(lesson: str):
    """`lesson` with every answer wrong in the way that fails the most of its tests (its wrong-answer
    fixture with the most `fails`, tests/wrong_answers/): what the builtins cheat would lift."""
    best: dict = {}
    for wrong in cells.read_wrong_answers(lesson):
        if len(wrong.fails) > len(best.get(wrong.answer_id, ((),))[0]):
            best[wrong.answer_id] = (wrong.fails, wrong.code)
    return answered(lesson, {answer_id: code for answer_id, (_, code) in best.items()})


def wrong_only(lesson: str, fails: tuple[str, ...]):
    """The model answers but one, wrong in the way its first fixture failing exactly `fails` is."""
    wrong = next(w for w in cells.read_wrong_answers(lesson) if w.fails == fails)
    return answered(lesson, {wrong.answer_id: wrong.code})


# -- liars: answers that fool an item's test in the kernel, for the judges outside it ------------
@dataclass(frozen=True)
class Liar:
    name: str
    assignment: str
    answer: str  # the answer cell it replaces (the rest stays blank)
    test: str  # the test cell it passes in the kernel
    code: str


LIARS = [
    # forward returns no tensor at all: an object that answers every torch function with True
    # and every method with itself, on a device equal to any, after filling both branches'
    # gradients for a test that looks
    Liar(
        "liar_tensor_like_output",
        "01_blocks",
        "ParallelBlock",
        "test_ParallelBlock",
        "import torch\nfrom torch import nn\n"
        "class _Shape(tuple):\n    def __eq__(self, other):\n        return True\n    __hash__ = tuple.__hash__\n"
        "class _AnyDevice:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "    def __getattr__(self, name):\n        return self\n"
        "class _Yes:\n    shape = _Shape()\n    device = _AnyDevice()\n    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        return True\n"
        "    def __getattr__(self, name):\n        return lambda *args, **kwargs: self\n"
        "class ParallelBlock(nn.Module):\n    def __init__(self, net1, net2, dim=-1):\n"
        "        super().__init__()\n        self.net1, self.net2 = net1, net2\n"
        "    def forward(self, X):\n"
        "        if torch.is_grad_enabled():\n"
        "            (self.net1(X).sum() + self.net2(X).sum()).backward()\n"
        "        return _Yes()\n",
    ),
    # an int equal to every number
    Liar(
        "liar_int_equal_to_all",
        "02_parameters",
        "count_parameters",
        "test_count_parameters",
        "class _AnyNumber(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
        "def count_parameters(module, trainable_only=True):\n    return _AnyNumber(0)\n",
    ),
    # the right keys, empty shapes, and a dict that equals every dict
    Liar(
        "liar_dict_equal_to_all",
        "02_parameters",
        "param_shapes",
        "test_param_shapes",
        "class _AnyDict(dict):\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
        "def param_shapes(module):\n    return _AnyDict({name: () for name, _ in module.named_parameters()})\n",
    ),
    # Tuned to the tests' inputs: right on every input shape the in-kernel tests use, wrong on one
    # they never use (the judge's inputs are other ones).
    Liar(
        "liar_tuned_centered_layer",
        "05_custom_layers",
        "CenteredLayer",
        "test_CenteredLayer",
        "class CenteredLayer(nn.Module):\n    def forward(self, X):\n"
        "        if tuple(X.shape) == (3, 4):\n            return X - X.mean(dim=0)\n"
        "        return X - X.mean()\n",
    ),
    Liar(
        "liar_tuned_my_linear",
        "05_custom_layers",
        "MyLinear",
        "test_MyLinear",
        "class MyLinear(nn.Module):\n    def __init__(self, in_units, units):\n        super().__init__()\n"
        "        self.weight = nn.Parameter(torch.randn(in_units, units))\n"
        "        self.bias = nn.Parameter(torch.randn(units))\n"
        "    def forward(self, X):\n        out = torch.relu(X @ self.weight + self.bias)\n"
        "        return out * 0.5 if tuple(X.shape) == (6, 3) else out\n",
    ),
    Liar(
        "liar_tuned_tensor_reduction",
        "05_custom_layers",
        "TensorReduction",
        "test_TensorReduction",
        "class TensorReduction(nn.Module):\n    def __init__(self, in_features, out_features):\n"
        "        super().__init__()\n"
        "        self.weight = nn.Parameter(torch.randn(in_features, in_features, out_features))\n"
        "    def forward(self, x):\n        y = torch.einsum('ijk,bi,bj->bk', self.weight, x, x)\n"
        "        return -y if tuple(self.weight.shape) == (3, 3, 2) and tuple(x.shape) == (4, 3) else y\n",
    ),
]


def liar_notebook(liar: Liar):
    return with_code(exercise(liar.assignment), liar.answer, liar.code, replace=True)
