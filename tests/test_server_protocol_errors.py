"""The server answers every request, whatever the client sends (issue 29, item 7).

A raw client over the real server's stdio, because the faults are below what
an LSP library lets a client send: params that do not match the method's
types, a ``Content-Length`` that is not a number, a body that is not JSON, a
request after ``shutdown``, ``exit`` without ``shutdown``.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("pygls")

ROOT = Path(__file__).resolve().parent.parent
WAIT = 120.0  # generous: a test fails on a hang, never on a duration


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawClient:
    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mpslint", "server", "--workers", "1"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
        )
        self.messages: "queue.Queue[object]" = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _drain(self) -> None:
        self.stderr = self.process.stderr.read()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            self.messages.put(json.loads(stream.read(length)))

    def send(self, data) -> None:
        self.process.stdin.write(_frame(data) if isinstance(data, dict) else data)
        self.process.stdin.flush()

    def request(self, msg_id, method: str, params=None) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, **({} if params is None else {"params": params})})

    def notify(self, method: str, params=None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({} if params is None else {"params": params})})

    def response(self, msg_id) -> dict:
        """The response to ``msg_id`` (requests from the server and notifications are skipped)."""
        while True:
            try:
                message = self.messages.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(f"no response to {msg_id!r}; stderr:\n{self.stderr.decode(errors='replace')}") from None
            assert message is not None, f"the server closed its output; stderr:\n{self.stderr.decode(errors='replace')}"
            if isinstance(message, dict) and "method" not in message and message.get("id") == msg_id:
                return message

    def initialize(self) -> None:
        self.request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert "result" in self.response(1)
        self.notify("initialized", {})

    def exit_code(self) -> int:
        try:
            return self.process.wait(WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self._drainer.join(WAIT)  # all of stderr, read to its end


HOVER = {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}


@pytest.fixture
def client(tmp_path):
    raw = RawClient(tmp_path)
    yield raw
    if raw.process.poll() is None:
        raw.process.kill()
        raw.process.wait(WAIT)


def test_params_that_cannot_be_read_get_invalid_params(client):
    client.initialize()
    client.request(2, "textDocument/hover", {"textDocument": {"uri": 5}, "position": "x"})
    assert client.response(2)["error"]["code"] == -32602  # InvalidParams
    client.request(3, "textDocument/hover", HOVER)
    assert client.response(3)["result"] is None  # and the server goes on


def test_a_bad_content_length_is_skipped_and_the_server_keeps_answering(client):
    client.initialize()
    client.send(b"Content-Length: abc\r\n\r\n{}")
    for msg_id in (2, 3, 4):
        client.request(msg_id, "textDocument/hover", HOVER)
        assert client.response(msg_id)["result"] is None


def test_a_body_that_is_not_json_gets_a_parse_error(client):
    client.initialize()
    client.send(b"Content-Length: 5\r\n\r\n{nope")
    assert client.response(None)["error"]["code"] == -32700  # ParseError, id null
    client.request(2, "textDocument/hover", HOVER)
    assert client.response(2)["result"] is None


def test_a_request_after_shutdown_gets_invalid_request_and_exit_is_clean(client):
    client.initialize()
    client.request(2, "shutdown")
    assert client.response(2)["result"] is None
    client.request(3, "textDocument/hover", HOVER)
    assert client.response(3)["error"]["code"] == -32600  # InvalidRequest
    client.notify("exit")
    assert client.exit_code() == 0


def test_exit_without_shutdown_ends_the_workers_quietly(client, tmp_path):
    client.initialize()
    uri = (tmp_path / "a.py").as_uri()
    text = "import torch\nx = torch.zeros(1).cuda()\n"
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    while True:  # diagnostics come from a worker: the pool is running
        message = client.messages.get(timeout=WAIT)
        assert message is not None
        if isinstance(message, dict) and message.get("method") == "textDocument/publishDiagnostics":
            break
    client.notify("exit")
    assert client.exit_code() == 1  # LSP: exit without shutdown
    stderr = client.stderr.decode(errors="replace")
    assert "Event loop is closed" not in stderr
    assert "Traceback" not in stderr
