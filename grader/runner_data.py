"""What the runner hands back to the grader: a judge's data as plain literals (for judging outside
the kernel, judges.py) and what a test printed, up to a limit.

trusted.install() writes this file ahead of runner.py into the one file the kernel runs at
start, so `make_plain` is called before any student code, with the references it keeps.
"""


def make_plain(tensor_types, size_type, tensor_tolist, dtype_name, limit=1_000_000):
    """`plain(value)`: exact built-in types only, built without calling a method of a student's
    object; a real tensor as ("tensor", dtype, nested lists), anything else as ("object", type
    name). NaN and infinities have no literal, so they travel as "non-finite"."""
    _type, _repr, _str, _len, _list, _tuple, _dict, _any = type, repr, str, len, list, tuple, dict, any
    name_of = _type.__dict__["__name__"].__get__
    tuple_iter, dict_items = _tuple.__iter__, _dict.items
    exact = (int, float, bool, _str, _type(None))

    def one_of(kind, kinds):
        return _any(kind is k for k in kinds)  # identity: a student's metaclass may define ==

    def encode(value, budget):
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError("the judged results are too large")
        kind = _type(value)
        if one_of(kind, exact):
            return "non-finite" if kind is float and _repr(value) in ("nan", "inf", "-inf") else value
        if one_of(kind, tensor_types):
            values = tensor_tolist(value)
            text = _repr(values)
            budget[0] -= _len(text) // 8
            return ("tensor", _str(dtype_name(value)), "non-finite" if "nan" in text or "inf" in text else values)
        if kind is size_type:
            return _tuple(encode(v, budget) for v in tuple_iter(value))
        if kind is _list or kind is _tuple:
            return kind(encode(v, budget) for v in value)
        if kind is _dict:
            return {encode(k, budget): encode(v, budget) for k, v in dict_items(value)}
        return ("object", name_of(kind))

    def plain(value):
        return encode(value, [limit])

    return plain


def make_capped_text(limit):
    """A file-like class that keeps what is written to it, up to `limit` characters."""
    _str, _len = str, len

    class CappedText:
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

    return CappedText
