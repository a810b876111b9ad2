"""The embedded server's engine: one worker thread, a waiting queue with a bound, a block-based KV
pool and two schedulers. Every backend call is one forward pass over a list of (sequence, n tokens).

- static: wait for `max_batch` requests (or `batch_timeout_s` after the first), prefill the batch's
  prompts in one forward, then decode it until its longest sequence finishes; newcomers wait for the
  next batch. The batch is rectangular, as in HF `generate` or FasterTransformer: a sequence that has
  finished stays in every decode forward as a padding row (work item n == 0) until the longest ends;
  its client has its answer at once, but its row's compute is spent (Orca's argument).
- continuous: every iteration is ONE forward over a mixed batch (vLLM V1 / Sarathi-Serve): a decode
  token for every running sequence past its prompt, then prompt chunks of sequences still prefilling,
  then newly admitted sequences' prompts, within a budget of `max_batched_tokens` tokens per forward
  (vLLM's max_num_batched_tokens); a prompt longer than what is left of the budget is prefilled in
  chunks over several iterations (chunked prefill). Admitting never costs a forward of its own.

Admission control: a sequence reserves the blocks of prompt + max_tokens when admitted, so a running
sequence never runs out of KV mid-decode (no OOM, no preemption); when slots or blocks run out
requests wait, and past `max_queue` waiting they are refused (the server answers HTTP 429).
Tokens go back to each request's asyncio queue through `loop.call_soon_threadsafe`.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiworkbook.errors import SpecError
from aiworkbook.serving.backends import Backend
from aiworkbook.serving.limits import check_batching
from aiworkbook.serving.pool import BlockPool, blocks_for

#: emit(kind, payload): 'token' with a token, 'done' with the finish reason, 'error' with its text;
#: called from the engine thread, so it must be thread-safe
Emit = Callable[[str, Any], None]

SCHEDULERS = ("static", "continuous")
#: tokens per continuous-batching forward: vLLM V1's max_num_batched_tokens below 70 GiB GPUs
MAX_BATCHED_TOKENS = 2048


class Rejected(Exception):
    """The waiting queue is full (HTTP 429) or the request can never fit the pool (HTTP 400)."""

    def __init__(self, reason: str, status: int = 429) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(eq=False)  # identity: cancel() finds its own sequence in the queue
class Sequence:
    id: int
    prompt_len: int
    max_tokens: int
    emit: Emit
    prompt_words: list[str] = field(default_factory=list)
    generated: int = 0
    prefilled: int = 0  # prompt tokens in the KV cache (a chunked prefill takes several forwards)
    blocks: list[int] = field(default_factory=list)  # KV block ids, reserved for prompt + max_tokens
    arrived: float = field(default_factory=time.perf_counter)
    cancelled: bool = False
    told: bool = False  # the client has its 'done' (static batching tells it before the batch ends)

    @property
    def done(self) -> bool:
        return self.generated >= self.max_tokens


class Engine:
    """The scheduler between the server's requests and one `Backend` (serving/backends.py)."""

    def __init__(
        self,
        backend: Backend,
        pool: BlockPool,
        *,
        scheduler: str = "continuous",
        max_batch: int = 16,
        max_queue: int = 64,
        batch_timeout_s: float = 0.05,
        max_context: int | None = None,
        max_batched_tokens: int = MAX_BATCHED_TOKENS,
    ) -> None:
        if scheduler not in SCHEDULERS:
            raise SpecError("scheduler", scheduler, ", ".join(SCHEDULERS))
        check_batching(max_batch, max_queue, max_batched_tokens)
        self.max_batched_tokens = max_batched_tokens
        self.backend, self.pool, self.scheduler = backend, pool, scheduler
        self.max_batch, self.max_queue, self.batch_timeout_s = max_batch, max_queue, batch_timeout_s
        self.max_context = max_context
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.counters = {
            "admitted": 0,
            "finished": 0,
            "rejected": 0,
            "cancelled": 0,  # sequences whose client went away before their last token
            "iterations": 0,  # forward passes
            "prompt_tokens": 0,
            "tokens": 0,
            "peak_running": 0,
        }
        self.busy_s = 0.0  # seconds inside backend forwards (the engine's own time, not the server's)
        self._ids = itertools.count()
        self._cv = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="aiworkbook-serve-engine", daemon=True)
        self.error: str = ""

    # -- outside API (any thread) ---------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        self._thread.join(timeout=10)

    def submit(
        self, prompt_len: int, max_tokens: int, emit: Emit, prompt_words: list[str] | None = None
    ) -> Sequence:
        """Queue a sequence, or raise Rejected (429: queue full; 400: larger than the pool or context)."""
        need = blocks_for(prompt_len + max_tokens, self.pool.block_size)
        if need > self.pool.num_blocks:
            raise Rejected(
                f"prompt + max_tokens = {prompt_len + max_tokens} tokens needs {need} KV blocks; "
                f"the pool has {self.pool.num_blocks}",
                400,
            )
        if self.max_context is not None and prompt_len + max_tokens > self.max_context:
            raise Rejected(f"prompt + max_tokens exceeds the model's context of {self.max_context}", 400)
        seq = Sequence(next(self._ids), prompt_len, max_tokens, emit, prompt_words or [])
        with self._cv:
            if len(self.waiting) >= self.max_queue:
                self.counters["rejected"] += 1
                raise Rejected(f"queue full ({self.max_queue} waiting)")
            self.waiting.append(seq)
            self._cv.notify_all()
        return seq

    def cancel(self, seq: Sequence) -> None:
        """The client went away: stop generating for it. A waiting sequence leaves the queue now; a
        running one frees its blocks and batch slot at the next step (counted as `cancelled`).
        A no-op once the sequence has all its tokens: a client that leaves after its answer cancels
        nothing, so a static batch still carries that row as padding until its longest ends."""
        if seq.done or seq.cancelled:
            return
        with self._cv:
            seq.cancelled = True
            if seq in self.waiting:
                self.waiting.remove(seq)
                self.counters["cancelled"] += 1
            self._cv.notify_all()

    def reset_peaks(self) -> None:
        """Start a new measurement window for the peaks (KV blocks, running sequences)."""
        with self._cv:
            self.pool.reset_peak()
            self.counters["peak_running"] = len(self.running)

    def stats(self) -> dict[str, Any]:
        with self._cv:
            return {
                "scheduler": self.scheduler,
                "backend": self.backend.name,
                "running": len(self.running),
                "waiting": len(self.waiting),
                "max_batch": self.max_batch,
                "max_queue": self.max_queue,
                "max_batched_tokens": self.max_batched_tokens,
                **self.counters,
                "busy_s": self.busy_s,
                **self.pool.to_dict(),
            }

    # -- the worker -----------------------------------------------------------------------------
    def _admit(self, limit: int, budget: int | None = None) -> list[Sequence]:
        """FIFO admission while slots (`limit`), KV blocks and (continuous) forward tokens last."""
        new: list[Sequence] = []
        with self._cv:
            while self.waiting and len(self.running) + len(new) < limit and (budget is None or budget > 0):
                seq = self.waiting[0]
                if seq.cancelled:
                    self.waiting.popleft()
                    continue
                need = blocks_for(seq.prompt_len + seq.max_tokens, self.pool.block_size)
                ids = self.pool.try_reserve(need)
                if ids is None:
                    break  # FIFO: the head waits for blocks, nobody overtakes it
                seq.blocks = ids
                self.waiting.popleft()
                new.append(seq)
                if budget is not None:
                    budget -= seq.prompt_len
            self.counters["admitted"] += len(new)
        return new

    def _finish(self, seq: Sequence, reason: str) -> None:
        self.pool.release(seq.blocks)
        seq.blocks = []
        self.backend.release(seq)
        self.counters["finished"] += 1
        self._tell(seq, reason)

    @staticmethod
    def _tell(seq: Sequence, reason: str) -> None:
        if not seq.cancelled and not seq.told:
            seq.told = True
            seq.emit("done", reason)

    def _forward(self, work: list[tuple[Sequence, int]]) -> None:
        """One backend forward; prompt progress, and each token that comes back goes to its client."""
        t0 = time.perf_counter()
        toks = self.backend.step(work)
        self.busy_s += time.perf_counter() - t0
        self.counters["iterations"] += 1
        for (s, n), t in zip(work, toks, strict=True):
            if n and s.prefilled < s.prompt_len:
                s.prefilled += n
                self.counters["prompt_tokens"] += n
            if t is None or s.done or s.cancelled:
                continue
            s.generated += 1
            self.counters["tokens"] += 1
            s.emit("token", t)

    def _ready_for_static_batch(self) -> bool:
        if not self.waiting:
            return False
        if len(self.waiting) >= self.max_batch:
            return True
        return time.perf_counter() - self.waiting[0].arrived >= self.batch_timeout_s

    def _loop(self) -> None:
        try:
            while True:
                with self._cv:
                    while not self._stop and not self.running:
                        if self.scheduler == "continuous" and self.waiting:
                            break
                        if self.scheduler == "static" and self._ready_for_static_batch():
                            break
                        self._cv.wait(timeout=self.batch_timeout_s / 4 if self.waiting else 0.1)
                    if self._stop:
                        break
                if self.scheduler == "continuous":
                    self._iterate()
                else:
                    self._static_step()
        except Exception as exc:  # a backend failure: every request gets an error, the server stays up
            self.error = f"{type(exc).__name__}: {exc}"
            for s in [*self.running, *self.waiting]:
                s.emit("error", self.error)
        finally:
            for s in [*self.running, *self.waiting]:
                try:
                    s.emit("error", "server stopping")
                except Exception:  # a listener gone with its event loop must not kill the shutdown
                    pass

    def _drop_cancelled(self) -> None:
        for s in [s for s in self.running if s.cancelled]:
            self.running.remove(s)
            self.counters["cancelled"] += 1
            self._finish(s, "cancelled")

    def _running_more(self, new: list[Sequence]) -> None:
        self.running.extend(new)
        self.counters["peak_running"] = max(self.counters["peak_running"], len(self.running))

    def _iterate(self) -> None:
        """Continuous batching: one forward over decode tokens, pending prompt chunks and new prompts."""
        self._drop_cancelled()
        budget = self.max_batched_tokens
        work = [(s, 1) for s in self.running if s.prefilled >= s.prompt_len and not s.done]
        budget -= len(work)
        for s in self.running:  # sequences admitted earlier whose prompt is still being prefilled
            if s.prefilled < s.prompt_len and budget > 0:
                n = min(s.prompt_len - s.prefilled, budget)
                work.append((s, n))
                budget -= n
        new = self._admit(self.max_batch, budget)
        for s in new:
            n = min(s.prompt_len, budget)
            work.append((s, n))
            budget -= n
        self._running_more(new)
        if work:
            self._forward(work)
        for s in [s for s in self.running if s.done]:
            self.running.remove(s)
            self._finish(s, "length")

    def _static_step(self) -> None:
        """Static batching: a new batch's prompts in one forward, then one decode step of the batch."""
        self._drop_cancelled()
        if not self.running:
            new = self._admit(self.max_batch)
            if new:
                self._forward([(s, s.prompt_len) for s in new])
                self._running_more(new)
        if any(not s.done for s in self.running):  # the batch is rectangular: finished rows ride as padding
            self._forward([(s, 0 if s.done else 1) for s in self.running])
        if all(s.done for s in self.running):  # the batch ends with its longest sequence
            for s in self.running:
                self._finish(s, "length")
            self.running = []
        else:  # finished sequences are done for the client, their slot stays idle
            for s in self.running:
                if s.done:
                    self._tell(s, "length")
