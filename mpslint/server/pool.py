"""Worker processes that run checks and fixes for the server, off its event loop.

``size`` workers start when the server is initialized and stay, each having
imported the engine and the rules once (``mpslint.server.worker``). A job
takes an idle worker, or waits for one. Two rules keep one document from
holding up the others:

- a job that has run longer than ``slow_after`` seconds stops counting
  against ``size``: up to ``extra`` more workers start, so a pathological
  file never blocks the rest;
- a job can be cancelled at any point: one still waiting leaves the queue,
  one running ends with its worker process (the next job starts a fresh one).
  Jobs that run longer than ``time_limit`` are cancelled that way too.

If no worker process can start at all, jobs run in a thread of this process
instead, so the editor still gets its diagnostics.

The first worker can be started before the server itself has imported pygls
(``prestart``): the two processes import side by side, and the first document
opened finds a worker ready instead of waiting for its imports.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import struct
import subprocess
import threading
import time
import pickle
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Awaitable, Callable, Deque, Dict, List, Optional, Set, Tuple

from mpslint.isolation import python_command
from mpslint.server import worker as worker_module

logger = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")


class JobFailed(Exception):
    """The job did not produce a result: its worker died, it ran too long, or it raised."""


class JobError(JobFailed):
    """The job raised in the worker (a bug in mpslint); the worker itself is fine."""


class WorkerStartError(Exception):
    pass


class Worker:
    """One checking process and the pipes to it."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._signalled = False

    @classmethod
    async def start(cls, command: List[str], spawned: Callable[["Worker"], None]) -> "Worker":
        """Start a worker and wait until it is ready; ``spawned`` learns of it as soon as its process exists."""
        try:
            process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
            )
        except OSError as exc:
            raise WorkerStartError(f"cannot start {command[0]}: {exc}") from None
        worker = cls(process)
        spawned(worker)
        try:
            ready = await worker._receive()
        except JobFailed as exc:
            worker.kill()
            raise WorkerStartError(str(exc)) from None
        except BaseException:
            worker.kill()
            raise
        if ready != worker_module.READY:
            worker.kill()
            raise WorkerStartError(f"unexpected first message from a worker: {ready!r}")
        return worker

    @classmethod
    async def adopt(cls, popen: "subprocess.Popen[bytes]", spawned: Callable[["Worker"], None]) -> "Worker":
        """A worker from ``prestart``, its pipes connected to this event loop, once it is ready."""
        worker = cls(await Prestarted.connect(popen))  # type: ignore[arg-type]
        spawned(worker)
        try:
            ready = await worker._receive()
        except JobFailed as exc:
            worker.kill()
            raise WorkerStartError(str(exc)) from None
        except BaseException:
            worker.kill()
            raise
        if ready != worker_module.READY:
            worker.kill()
            raise WorkerStartError(f"unexpected first message from a worker: {ready!r}")
        return worker

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def call(self, request: Tuple[str, tuple]) -> Any:
        data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(_HEADER.pack(len(data)) + data)
            await self.process.stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            await self._exit_code()  # let asyncio reap it first (see kill)
            raise JobFailed(f"the worker process is gone ({exc})") from None
        status, value = await self._receive()
        if status != "ok":
            raise JobError(value)
        return value

    async def _receive(self) -> Any:
        assert self.process.stdout is not None
        try:
            header = await self.process.stdout.readexactly(_HEADER.size)
            body = await self.process.stdout.readexactly(_HEADER.unpack(header)[0])
        except (asyncio.IncompleteReadError, ConnectionError):
            code = await self._exit_code()
            raise JobFailed(f"the worker process died (exit code {code})") from None
        return pickle.loads(body)

    async def _exit_code(self) -> Optional[int]:
        try:
            return await asyncio.wait_for(self.process.wait(), 5)
        except asyncio.TimeoutError:
            return None

    def kill(self) -> None:
        """End the process: signalled once at most, and only while asyncio has not seen it exit.

        ``Process.kill`` polls the child before signalling it (``Popen.send_signal``
        does, against pid reuse), and polling reaps a child that has died. A second
        kill of a process that died since the first would reap it behind the back of
        asyncio's child watcher, which then finds no such child, prints "Unknown child
        process pid N, will report returncode 255" on stderr and reports a false exit
        code. A process still alive when signalled the first time is not reaped by
        that poll.
        """
        if self.alive and not self._signalled:
            self._signalled = True
            try:
                self.process.kill()
            except ProcessLookupError:
                pass
        # Closing our end lets the event loop reap the process without waiting for it here.
        if self.process.stdin is not None:
            self.process.stdin.close()


def worker_command() -> List[str]:
    return python_command("mpslint.server.worker")


def prestart(command: Optional[List[str]] = None) -> "Optional[subprocess.Popen[bytes]]":
    """Start a worker now, before there is an event loop, for the pool to adopt as its first worker (None if it cannot start)."""
    try:
        return subprocess.Popen(command or worker_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    except OSError as exc:
        logger.warning("mpslint: cannot start a worker early: %s", exc)
        return None


class Prestarted:
    """A worker process started by ``prestart``, as the pool sees a process: the parts of
    ``asyncio.subprocess.Process`` that ``Worker`` uses.

    asyncio does not watch this process; it is reaped here, by ``Popen`` (``poll``, and a
    daemon thread in ``wait``, which never holds up the interpreter's exit).
    """

    def __init__(self, popen: "subprocess.Popen[bytes]", stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.stdin = stdin
        self.stdout = stdout
        self._exited: "Optional[asyncio.Future[int]]" = None

    @classmethod
    async def connect(cls, popen: "subprocess.Popen[bytes]") -> "Prestarted":
        loop = asyncio.get_running_loop()
        assert popen.stdin is not None and popen.stdout is not None
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), popen.stdout)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, popen.stdin)
        return cls(popen, asyncio.StreamWriter(transport, protocol, None, loop), reader)

    @property
    def returncode(self) -> Optional[int]:
        return self.popen.poll()  # no child watcher to race: Popen is the only one that reaps this process

    def kill(self) -> None:
        self.popen.kill()

    async def wait(self) -> int:
        if self._exited is None:
            loop = asyncio.get_running_loop()
            exited: "asyncio.Future[int]" = loop.create_future()
            self._exited = exited

            def waiting() -> None:
                code = self.popen.wait()
                try:
                    loop.call_soon_threadsafe(lambda: exited.done() or exited.set_result(code))
                except RuntimeError:  # the event loop has closed: nobody is waiting any more
                    pass

            threading.Thread(target=waiting, name=f"mpslint-wait-{self.pid}", daemon=True).start()
        return await asyncio.shield(self._exited)


class Pool:
    def __init__(
        self,
        size: int,
        *,
        extra: int = 2,
        slow_after: float = 1.0,
        time_limit: float = 120.0,
        command: Optional[List[str]] = None,
        early: "Optional[subprocess.Popen[bytes]]" = None,
    ) -> None:
        """``early``: a worker from ``prestart``, adopted as the first one."""
        self.size = max(1, size)
        self.extra = max(0, extra)
        self.slow_after = slow_after
        self.time_limit = time_limit
        self.command = command or worker_command()
        self._idle: List[Worker] = []
        self._starting: List["asyncio.Task[Worker]"] = []
        self._busy = 0  # slots taken: jobs starting or running
        self._claimed = 0  # workers a job is waiting for (being started), not yet running it
        self._running: Dict[Worker, float] = {}  # worker -> when its job started
        self._waiters: Deque["asyncio.Future[None]"] = collections.deque()
        self._in_process: Optional[ThreadPoolExecutor] = None
        self._closed = False
        self._workers: Set[Worker] = set()  # every worker whose process has not been reaped yet
        self._early = early

    # -- public --------------------------------------------------------------------------

    def warm(self) -> None:
        """Start resident workers until there are ``size``, so no check waits for a worker's imports.

        One at a time: workers importing side by side would slow down the first one, which the first
        document waits for.
        """
        if self._closed or self._in_process is not None:
            return
        self._idle = [w for w in self._idle if w.alive]
        self._starting = [t for t in self._starting if not t.done() or (not t.cancelled() and t.exception() is None)]
        if any(not t.done() for t in self._starting):
            return  # its completion calls warm() again
        if self.size - len(self._idle) - len(self._starting) - len(self._running) - self._claimed > 0:
            task = asyncio.ensure_future(self._start())
            task.add_done_callback(self._started)
            self._starting.append(task)

    def _start(self) -> Awaitable[Worker]:
        early, self._early = self._early, None
        if early is not None:
            return Worker.adopt(early, self._spawned)
        return Worker.start(self.command, self._spawned)

    def _started(self, task: "asyncio.Task[Worker]") -> None:
        if not task.cancelled() and task.exception() is None:
            self.warm()  # the next one (a worker that cannot start is not retried in a loop)

    async def run(self, kind: str, *args: Any) -> Any:
        """Run one job; cancelling the awaiting task cancels the job (ending its worker if it runs)."""
        if self._closed:
            raise JobFailed("the server is shutting down")
        await self._acquire()
        try:
            if self._in_process is not None:
                return await self._run_in_process(kind, args)
            try:
                worker = await self._take_worker()
            except WorkerStartError as exc:
                logger.error("mpslint: %s; checking in the server process instead", exc)
                self._in_process = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mpslint-check")
                return await self._run_in_process(kind, args)
            return await self._run_on(worker, kind, args)
        finally:
            self._busy -= 1
            self._wake()

    def close(self) -> None:
        """End every worker now (shutdown, exit, or the client went away); once is enough."""
        if self._closed:
            return  # a second close would touch pipes whose event loop may be gone
        self._closed = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.cancel()
        self._waiters.clear()
        for task in self._starting:
            task.cancel()
        self._starting.clear()
        for worker in self._workers:  # idle, running and starting ones alike
            worker.kill()
        if self._early is not None:  # never adopted (the server ends before it was initialized)
            self._early.kill()
            self._early.wait()
            for pipe in (self._early.stdin, self._early.stdout):
                if pipe is not None:
                    pipe.close()
            self._early = None
        self._idle.clear()
        if self._in_process is not None:
            self._in_process.shutdown(wait=False)

    async def aclose(self) -> None:
        """``close``, then wait until the worker processes are gone (their pipes close with them)."""
        starting = list(self._starting)
        self.close()
        if starting:
            # One cancelled before its process was handed over kills and waits for it on its own: let it,
            # so that no process is left for asyncio to reap after the event loop has closed.
            await asyncio.wait(starting, timeout=10)
        for worker in list(self._workers):
            try:
                await asyncio.wait_for(worker.process.wait(), 10)
            except asyncio.TimeoutError:
                logger.warning("mpslint: worker process %s did not exit", worker.process.pid)
        self._workers.clear()

    @property
    def workers(self) -> int:
        """Worker processes alive now (idle or busy)."""
        return len([w for w in self._idle if w.alive]) + len(self._running)

    def _spawned(self, worker: Worker) -> None:
        self._workers = {w for w in self._workers if w.alive}
        self._workers.add(worker)

    # -- slots -----------------------------------------------------------------------------

    def _capacity(self) -> int:
        now = time.monotonic()
        slow = sum(1 for started in self._running.values() if now - started > self.slow_after)
        return self.size + min(self.extra, slow)

    def _wake(self) -> None:
        while self._waiters and self._busy < self._capacity():
            waiter = self._waiters.popleft()
            if waiter.done():
                continue
            self._busy += 1  # reserved for that waiter
            waiter.set_result(None)

    async def _acquire(self) -> None:
        if not self._waiters and self._busy < self._capacity():
            self._busy += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # a slot was reserved just before the cancel
                self._busy -= 1
                self._wake()
            else:
                try:
                    self._waiters.remove(waiter)
                except ValueError:
                    pass
            raise

    # -- running -------------------------------------------------------------------------

    async def _take_worker(self) -> Worker:
        while self._idle:
            worker = self._idle.pop()
            if worker.alive:
                return worker
        self._claimed += 1
        try:
            while self._starting:
                task = self._starting.pop(0)
                try:
                    return await asyncio.shield(task)
                except asyncio.CancelledError:
                    if not task.done():
                        self._starting.insert(0, task)  # still starting: the next job gets it
                    elif not task.cancelled() and task.exception() is None:
                        self._idle.append(task.result())
                    raise
                except WorkerStartError as exc:
                    logger.warning("mpslint: a worker did not start: %s", exc)
            return await self._start()
        finally:
            self._claimed -= 1

    async def _run_on(self, worker: Worker, kind: str, args: tuple) -> Any:
        loop = asyncio.get_running_loop()
        self._running[worker] = time.monotonic()
        # When this job turns slow, a waiting job may start on another worker.
        slow_timer = loop.call_later(self.slow_after + 0.01, self._wake)
        reusable = False  # only a worker that answered is in a known state
        try:
            result = await asyncio.wait_for(worker.call((kind, args)), self.time_limit)
            reusable = True
            return result
        except JobError:
            reusable = True
            raise
        except asyncio.TimeoutError:
            raise JobFailed(f"gave up after {self.time_limit:.0f} s") from None
        finally:
            slow_timer.cancel()
            del self._running[worker]
            if reusable and worker.alive and not self._closed and len(self._idle) < self.size:
                self._idle.append(worker)
            else:
                worker.kill()
                self.warm()  # a replacement starts now, not when the next job needs it

    async def _run_in_process(self, kind: str, args: tuple) -> Any:
        loop = asyncio.get_running_loop()
        assert self._in_process is not None
        status, value = await loop.run_in_executor(self._in_process, worker_module.handle, (kind, args))
        if status != "ok":
            raise JobFailed(value)
        return value
