"""When each document is checked: debounced, latest text wins, stale work cancelled.

Per document there is at most one check running and at most one waiting.
A change asks for a check after ``debounce`` seconds of quiet; each newer
change moves that moment, so typing is checked once per pause, not once per
keystroke. What is checked is decided when the check starts (``make`` reads
the buffer then), so a check never runs on text already replaced.

A check still running when its document changes again (or closes) has gone
stale. If it is about to finish its result is dropped; once it has run longer
than ``stale_grace`` seconds it is cancelled, which ends its worker, and the
new text is checked right away.

Code actions and hovers need findings for exactly the text they see:
``result_for`` waits for the check of the current text, starting it at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Hashable, List, Optional, Tuple

logger = logging.getLogger(__name__)

Token = Hashable  # identifies what a result is for: the document's version and the settings epoch


@dataclass
class _State:
    due: Optional[float] = None  # a check is wanted at this (monotonic) time
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    driver: Optional["asyncio.Task[None]"] = None
    running: Optional[Tuple[Token, "asyncio.Task[Any]", float]] = None
    result: Optional[Tuple[Token, Any]] = None
    waiters: List[Tuple[Token, "asyncio.Future[Any]"]] = field(default_factory=list)


class Scheduler:
    def __init__(
        self,
        run: Callable[[Any], "asyncio.Future[Any]"],
        deliver: Callable[[Hashable, Token, Any], None],
        *,
        debounce: float = 0.25,
        stale_grace: float = 1.0,
    ) -> None:
        """``run(job)`` checks; ``deliver(key, token, result)`` receives each result that is still current."""
        self._run = run
        self._deliver = deliver
        self.debounce = debounce
        self.stale_grace = stale_grace
        self._states: Dict[Hashable, _State] = {}
        self._makers: Dict[Hashable, Callable[[], Tuple[Token, Any]]] = {}
        self._current: Dict[Hashable, Callable[[], Token]] = {}

    def track(self, key: Hashable, make: Callable[[], Tuple[Token, Any]], current: Callable[[], Token]) -> None:
        """Register a document: ``make()`` gives (token, job) for its text now; ``current()`` its token now."""
        self._makers[key] = make
        self._current[key] = current
        self._states.setdefault(key, _State())

    def request(self, key: Hashable, *, delay: Optional[float] = None) -> None:
        """Check ``key`` after ``delay`` seconds (default: the debounce), or sooner if already due."""
        state = self._states.get(key)
        if state is None:
            return
        due = time.monotonic() + (self.debounce if delay is None else delay)
        state.due = due if state.due is None or delay is None else min(state.due, due)
        state.wake.set()
        self._cancel_if_stale(key, state)
        if state.driver is None or state.driver.done():
            state.driver = asyncio.ensure_future(self._drive(key, state))

    def latest(self, key: Hashable) -> Optional[Tuple[Token, Any]]:
        state = self._states.get(key)
        return state.result if state is not None else None

    def settled(self, key: Hashable) -> bool:
        """No check of ``key`` is waiting or running."""
        state = self._states.get(key)
        return state is None or (state.due is None and state.running is None)

    async def result_for(self, key: Hashable) -> Optional[Any]:
        """The result for the document's current text and settings (None if it changes meanwhile)."""
        state = self._states.get(key)
        if state is None:
            return None
        token = self._current[key]()
        if state.result is not None and state.result[0] == token:
            return state.result[1]
        waiter = asyncio.get_running_loop().create_future()
        state.waiters.append((token, waiter))
        self.request(key, delay=0)
        try:
            return await waiter
        finally:
            state.waiters = [(t, w) for t, w in state.waiters if w is not waiter]

    def forget(self, key: Hashable) -> None:
        """The document closed: drop its pending work and results."""
        state = self._states.pop(key, None)
        self._makers.pop(key, None)
        self._current.pop(key, None)
        if state is None:
            return
        state.due = None
        if state.driver is not None:
            state.driver.cancel()
        self._cancel_if_stale(key, state, closing=True)
        for _, waiter in state.waiters:
            if not waiter.done():
                waiter.set_result(None)

    def close(self) -> None:
        for key in list(self._states):
            self.forget(key)

    # -----------------------------------------------------------------------------------

    def _cancel_if_stale(self, key: Hashable, state: _State, *, closing: bool = False) -> None:
        if state.running is None:
            return
        token, task, started = state.running
        if not closing and key in self._current and self._current[key]() == token:
            return  # still the right text: let it finish
        remaining = self.stale_grace - (time.monotonic() - started)
        if remaining <= 0:
            task.cancel()
        else:
            asyncio.get_running_loop().call_later(remaining, self._cancel_later, key, task, token, closing)

    def _cancel_later(self, key: Hashable, task: "asyncio.Task[Any]", token: Token, closing: bool) -> None:
        if task.done():
            return
        if closing or key not in self._current or self._current[key]() != token:
            task.cancel()

    async def _drive(self, key: Hashable, state: _State) -> None:
        while state.due is not None:
            wait = state.due - time.monotonic()
            if wait > 0:
                state.wake.clear()
                try:
                    await asyncio.wait_for(state.wake.wait(), wait)
                except asyncio.TimeoutError:
                    pass
                continue
            state.due = None
            make = self._makers.get(key)
            if make is None:
                return
            try:
                token, job = make()
            except Exception:  # a bug, not the user's: their next edit tries again
                logger.exception("mpslint: preparing the check of %s failed", key)
                continue
            task = asyncio.ensure_future(self._run(job))
            state.running = (token, task, time.monotonic())
            try:
                # Shielded: closing the document stops this loop, but the job's fate is _cancel_if_stale's.
                result = await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise  # this loop itself was cancelled: the document closed
                if state.due is None and self._current_token(key) not in (None, token):
                    state.due = time.monotonic()
                continue  # cancelled as stale: the new text is checked next
            except Exception:
                logger.exception("mpslint: checking %s failed", key)
                result = None
            finally:
                state.running = None
            self._settle(key, state, token, result)

    def _current_token(self, key: Hashable) -> Optional[Token]:
        current = self._current.get(key)
        return current() if current is not None else None

    def _settle(self, key: Hashable, state: _State, token: Token, result: Any) -> None:
        now = self._current_token(key)
        if result is not None:
            state.result = (token, result)
        for wanted, waiter in list(state.waiters):
            if waiter.done():
                continue
            if wanted == token:
                waiter.set_result(result)
            elif wanted != now:
                waiter.set_result(None)  # that text is gone: nobody can use findings for it
        if now == token:
            if result is not None:
                self._deliver(key, token, result)
        elif now is not None and state.due is None:
            state.due = time.monotonic() + self.debounce  # changed while running and nobody asked yet
