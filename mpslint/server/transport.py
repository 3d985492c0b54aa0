"""Reading LSP messages off stdin so that no input stops the server answering.

pygls' own loop (``pygls.io_.run_async``) has three gaps an editor can fall into:

- a header it cannot parse (``Content-Length: abc``) leaves the message's body
  in the stream, glued to the next header, and every later message after it
  is lost the same way: the server lives on but never answers again. Here a
  ``Content-Length:`` header is looked for wherever a line has one, so the
  stream is back in step at the next message;
- a request whose params cannot be read into the method's types gets no
  response at all; JSON-RPC wants InvalidParams (or ParseError for a body that
  is not JSON, InvalidRequest for one that is not a request object);
- a request after ``shutdown`` is dropped in silence; LSP wants InvalidRequest.

``exit`` ends the loop here, with LSP's exit code (0 after ``shutdown``, else 1),
so the server can stop its workers while its event loop still runs.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any, Optional

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcParseError

logger = logging.getLogger(__name__)

_HEADER = b"Content-Length:"
_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*\r?\n?$")


class MessageReader:
    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol
        self.shutdown_requested = False

    async def run(self, stop: threading.Event, reader: Any) -> int:
        """Read and dispatch messages until ``exit`` or the end of stdin; the exit code LSP asks for."""
        length: Optional[int] = None
        while not stop.is_set():
            line = await reader.readline()
            if not line:
                break
            start = line.find(_HEADER)
            if start > 0:
                line = line[start:]  # the rest of a body that was not framed right: the next message starts here
            if not line.strip():
                if length is None:
                    continue  # the end of the headers of a message whose length was unreadable: skip it
                body = await reader.readexactly(length)
                if len(body) < length:
                    break
                length = None
                if self.dispatch(body) == "exit":
                    return 0 if self.shutdown_requested else 1
                continue
            if start >= 0:
                match = _LENGTH.match(line)
                length = int(match.group(1)) if match else None
                if match is None:
                    logger.error("mpslint: skipping a message with an unreadable header: %r", line[:200])
            # Other headers (Content-Type) say nothing the server needs.
        return 0 if self.shutdown_requested else 1

    def dispatch(self, body: bytes) -> Optional[str]:
        """Hand one message to pygls, answering what it would leave unanswered; "exit" when the client said so."""
        try:
            raw = json.loads(body)
        except (ValueError, RecursionError) as exc:
            self._answer(None, JsonRpcParseError(f"the message is not JSON: {exc}"))
            return None
        if not isinstance(raw, dict):
            self._answer(None, JsonRpcInvalidRequest("a message must be a JSON object"))
            return None
        method = raw.get("method")
        request = "id" in raw and isinstance(method, str)
        if method == lsp.EXIT:
            return "exit"
        if self.shutdown_requested and request:
            self._answer(raw["id"], JsonRpcInvalidRequest(f"the server is shut down: no request but `exit` ({method})"))
            return None
        try:
            message = json.loads(body, object_hook=self.protocol.structure_message)
        except JsonRpcException as exc:
            if request:
                error = exc if isinstance(exc, JsonRpcInvalidParams) else JsonRpcInvalidParams()
                error.message = f"cannot read the params of {method}: {error.message or 'they do not match its type'}"
                self._answer(raw["id"], error)
            return None
        except Exception:  # noqa: BLE001 - one bad message must not end the server
            logger.exception("mpslint: cannot read a message")
            if request:
                self._answer(raw["id"], JsonRpcInvalidParams(f"cannot read the params of {method}"))
            return None
        if method == lsp.SHUTDOWN and request:
            self.shutdown_requested = True
        try:
            self.protocol.handle_message(message)
        except Exception:  # noqa: BLE001 - as above
            logger.exception("mpslint: cannot handle a message")
        return None

    def _answer(self, msg_id: Any, error: JsonRpcException) -> None:
        logger.error("mpslint: %s", error.message)
        # pygls sends error responses this way itself (json_rpc.JsonRPCProtocol._handle_request).
        self.protocol._send_response(msg_id, None, error.to_response_error())
