"""The runner's end of the channel to the grader (trusted.RUNNER_PARTS; the grader's end is
trusted.RunnerChannel). The runner listens once on a Unix socket in the kernel's folder, takes
the first connection (the grader's, made as soon as the kernel answers, before the student's
first cell), removes the socket's file, and reads a 32-byte key. From then on each request is a
length-prefixed Python literal (`run`, `collect` or `check`, with an id); each reply is the
literal of a dict, length-prefixed and signed with HMAC-SHA256 under that key, so that bytes
student code writes into the socket never pass for the runner's. It serves from a thread of its
own, with the C socket's methods kept at start."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def make_answer(run: Callable[..., dict], check: Callable[[], list[str]]) -> Callable[[dict], dict]:
    """`answer(request)`: the reply to one request, with its id; a failure of the runner itself is
    reported to the grader (and flagged), never lost."""
    _type, _base_exception = type, BaseException
    name_of = _type.__dict__["__name__"].__get__

    def answer(request: dict) -> dict:
        try:
            if request["op"] in ("run", "collect"):
                reply = run(
                    request["source"], request["imports"], request["timeout"], collect=request["op"] == "collect"
                )
            else:
                reply = {"flags": check()}
        except _base_exception as error:  # (reported to the grader, never lost)
            reply = {
                "runner_error": f"{name_of(_type(error))}: {error}",
                "passed": False,
                "flags": [f"the grader's runner failed here ({name_of(_type(error))})"],
            }
        reply["id"] = request["id"]
        return reply

    return answer


def listen(socket_module: Any, path: str) -> Any:
    """A Unix socket listening at `path` (relative to the kernel's folder) for one connection."""
    listener = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    return listener


def make_serve(
    listener: Any,
    path: str,
    socket_module: Any,
    answer: Callable[[dict], dict],
    unlink: Callable[[str], None],
    hmac_digest: Callable[[bytes, bytes, str], bytes],
) -> Callable[[], None]:
    """`serve()`, for a thread of its own: take the grader's connection, then answer its requests
    to the end of the kernel."""
    recv, sendall, connect_fd = socket_module.socket.recv, socket_module.socket.sendall, socket_module.socket
    af_unix, stream = socket_module.AF_UNIX, socket_module.SOCK_STREAM
    _len, _eval, _repr, _int, _eof, _os_error = len, eval, repr, int, EOFError, OSError

    def read_exactly(conn: Any, size: int) -> bytes:
        data = b""
        while _len(data) < size:
            chunk = recv(conn, size - _len(data))
            if not chunk:
                raise _eof
            data += chunk
        return data

    def serve() -> None:
        descriptor, _ = listener._accept()  # the C socket's accept: a file descriptor
        conn = connect_fd(af_unix, stream, 0, descriptor)
        listener.close()
        try:
            unlink(path)
        except _os_error:
            pass
        key = read_exactly(conn, 32)
        while True:
            size = _int.from_bytes(read_exactly(conn, 4), "big")
            request = _eval(read_exactly(conn, size).decode(), {"__builtins__": {}})
            payload = _repr(answer(request)).encode()
            sendall(conn, _len(payload).to_bytes(4, "big") + hmac_digest(key, payload, "sha256") + payload)

    return serve
