"""What the runner hands back to the grader: a judge's data as plain literals (for judging outside
the kernel, judges.py) and what a test printed, up to a limit; and how what it hands out to
student code is sealed (`make_seal`).

trusted.install() writes this file ahead of runner/assembly.py into the one file the kernel runs at
start, so `make_plain` is called before any student code, with the references it keeps.
"""


def make_seal(lru_cache_wrapper):
    """`seal(function)`: a callable of C that calls `function` and gives no way back to it.

    A function of the runner's that student code can reach (a guard on torch's dispatcher, a
    method of a test's output class) would hand out, without any audited event, its
    `__globals__` (the runner's namespace: every maker), its `__builtins__` and its closure's
    cells, whose contents can be read and even rebound (`cell.cell_contents = ...`): the
    original of what it guards, `refuse` and through it the list of refusals noted. Sealed, it
    is `functools._lru_cache_wrapper(function, 0, ...)`: with no cache it calls `function` on
    every call and keeps it where Python cannot read it (no `__wrapped__`, `__closure__`,
    `__globals__`, `__code__` or `__func__`; `gc.get_referents` is always refused). Its
    `__wrapped__` is None: torch._dynamo reads that attribute of every lru_cache wrapper among
    torch's functions (torch._C._dispatch_library is one) and unwraps only a function. It binds
    as a method (`__get__`), so a sealed function can stand in a class. A frame of the function,
    in a traceback, is the runner's: the audit hook refuses it."""
    _tuple = tuple

    def seal(function):
        sealed = lru_cache_wrapper(function, 0, False, _tuple)
        sealed.__wrapped__ = None
        return sealed

    return seal


def make_seal_test(seal, names, staticmethod, classmethod):
    """{name: sealer} for `names` (runner_test.SEAL_NAMES): what every `def` and `lambda` of a
    test is wrapped in (trusted.seal_functions), so that a function a test hands to student code
    (a factory, a hook, a method of a test's class) gives no way back to the tests' namespace: a
    Python function would hand out its `__globals__` with no audited event, and student code
    could rebind there what the rest of the test calls (`len`, `torch`, a helper). Sealed
    (`seal`, make_seal's), it keeps its name, qualified name, module and docstring (plain
    strings, for messages); it binds as a method, and zero-argument `super()` still works.
    The second and third sealers make the sealed function a staticmethod (`__new__`) and a
    classmethod (`__init_subclass__`, `__class_getitem__`), as a class body does with a plain
    function of those names. The sealers are sealed too."""
    _type, _str, _getattr, _setattr = type, str, getattr, setattr
    kept = ("__name__", "__qualname__", "__module__", "__doc__")

    def seal_test(function):
        sealed = seal(function)
        for name in kept:
            value = _getattr(function, name, None)
            if _type(value) is _str:
                _setattr(sealed, name, value)
        return sealed

    def seal_static(function):
        return staticmethod(seal_test(function))

    def seal_class(function):
        return classmethod(seal_test(function))

    return {name: seal(sealer) for name, sealer in zip(names, (seal_test, seal_static, seal_class))}


def make_plain(tensor_types, size_type, tensor_tolist, dtype_name, numpy=None, limit=1_000_000):
    """`plain(value)`: exact built-in types only, built without calling a method of a student's
    object; a real tensor as ("tensor", dtype, nested lists), anything else as ("object", type
    name). NaN and infinities have no literal, so they travel as "non-finite".

    Honest forms of the same value arrive as that value (judges compare values, never types):
    a subclass of int, float or str as the exact built-in it holds, a subclass of dict (an
    OrderedDict) as a dict, of list or tuple (a namedtuple) as a list or tuple, and numpy's own
    bool, integer and float scalars (`np.prod(shape)`) as the Python number. Each is read by the
    built-in type's own C method (`int.__int__`, `dict.items`, `numpy.generic.item`, ...), so a
    student's class can change how it compares or prints, never what is read."""
    _type, _repr, _str, _len, _list, _tuple, _dict, _any = type, repr, str, len, list, tuple, dict, any
    _float, _value_error = float, ValueError
    name_of = _type.__dict__["__name__"].__get__
    mro_of = _type.__dict__["__mro__"].__get__
    tuple_iter, list_iter, dict_items = _tuple.__iter__, _list.__iter__, _dict.items
    exact = (int, float, bool, _str, _type(None))
    # A subclass of one of these is read as the built-in value it holds.
    values_of = ((int, int.__int__), (float, float.__float__), (_str, _str.__str__))
    numbers = _tuple({numpy.dtype(code).type for code in "?bBhHiIlLqQefdg"}) if numpy is not None else ()
    number_value = numpy.generic.item if numpy is not None else None

    def one_of(kind, kinds):
        return _any(kind is k for k in kinds)  # identity: a student's metaclass may define ==

    def derives(kind, base):
        return _any(k is base for k in mro_of(kind))

    def encode(value, budget):
        budget[0] -= 1
        if budget[0] < 0:
            raise _value_error("the judged results are too large")
        kind = _type(value)
        if one_of(kind, exact):
            return "non-finite" if kind is _float and _repr(value) in ("nan", "inf", "-inf") else value
        if one_of(kind, tensor_types):
            values = tensor_tolist(value)
            text = _repr(values)
            budget[0] -= _len(text) // 8
            return ("tensor", _str(dtype_name(value)), "non-finite" if "nan" in text or "inf" in text else values)
        if kind is size_type:
            return _tuple(encode(v, budget) for v in tuple_iter(value))
        if one_of(kind, numbers):
            return encode(number_value(value), budget)
        for base, value_of in values_of:
            if derives(kind, base):
                return encode(value_of(value), budget)
        if derives(kind, _dict):
            return {encode(k, budget): encode(v, budget) for k, v in dict_items(value)}
        if derives(kind, _list):
            return _list(encode(v, budget) for v in list_iter(value))
        if derives(kind, _tuple):
            return _tuple(encode(v, budget) for v in tuple_iter(value))
        return ("object", name_of(kind))

    def plain(value):
        return encode(value, [limit])

    return plain


def make_capped_text(limit, seal):
    """A file-like class that keeps what is written to it, up to `limit` characters. Student code
    can reach it (`object.__subclasses__()`, `sys.stdout` while a test runs), so each method is
    sealed (`seal`, make_seal's): none leads back to the runner."""
    _str, _len, _type = str, len, type

    def __init__(self):
        self.parts, self.size, self.truncated = [], 0, False

    def write(self, text):
        text = _str(text)
        if self.size < limit:
            self.parts.append(text[: limit - self.size])
        self.truncated = self.truncated or self.size + _len(text) > limit
        self.size += _len(text)
        return _len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def getvalue(self):
        return "".join(self.parts)

    methods = {"__init__": __init__, "write": write, "flush": flush, "isatty": isatty, "getvalue": getvalue}
    return _type("CappedText", (), {name: seal(method) for name, method in methods.items()})
