"""The engine's iterations without a server: continuous batching runs ONE forward per iteration over a
mixed batch (decode tokens + prompt chunks within a token budget), and that mixed, chunked forward over
the paged KV pool yields the same greedy tokens as separate prefill and decode forwards and as the plain
decoder's full-sequence forward."""

from __future__ import annotations

import pytest

from aiworkbook.errors import SpecError
from aiworkbook.serving.backends import SyntheticBackend
from aiworkbook.serving.engine import Engine, Sequence
from aiworkbook.serving.pool import BlockPool, blocks_for

PROMPTS = (3, 17, 33, 50)  # one shorter than a block, several blocks, one split over 4+ chunks
NEW = 6


class Recording:
    """Wraps a backend: keeps every forward's work as (sequence id, n tokens, was prompt)."""

    def __init__(self, backend) -> None:
        self.backend, self.name, self.forwards = backend, backend.name, []

    def step(self, work):
        self.forwards.append([(s.id, n, s.prefilled < s.prompt_len) for s, n in work])
        return self.backend.step(work)

    def release(self, seq) -> None:
        self.backend.release(seq)


def _collect(tokens: dict[int, list], sid: int):
    def emit(kind, payload):
        if kind == "token":
            tokens.setdefault(sid, []).append(payload)

    return emit


def _drive(eng: Engine, arrivals: dict[int, list[tuple[int, int, list[str]]]], limit: int = 500) -> None:
    """Run the engine's iterations on this thread; at iteration k submit arrivals[k]."""
    for k in range(limit):
        for prompt_len, max_tokens, words in arrivals.get(k, []):
            eng.submit(prompt_len, max_tokens, words[0], words[1])
        if k > max(arrivals) and not eng.running and not eng.waiting:
            return
        eng._iterate()
    raise AssertionError("the engine did not finish")


def test_admitting_costs_no_forward_of_its_own():
    tokens: dict[int, list] = {}
    be = Recording(SyntheticBackend(step_s=0.0))
    eng = Engine(be, BlockPool(64, 16, 1), max_batch=4)
    arrivals = {0: [(8, 5, (_collect(tokens, 0), []))], 2: [(8, 5, (_collect(tokens, 1), []))]}
    _drive(eng, arrivals)
    # A: prompt+1st token, 2nd; then B's prompt rides along A's 3rd, 4th, 5th decode; B's 4th, 5th alone
    assert [[(n, p) for _, n, p in f] for f in be.forwards] == [
        [(8, True)],
        [(1, False)],
        [(1, False), (8, True)],
        [(1, False), (1, False)],
        [(1, False), (1, False)],
        [(1, False)],
        [(1, False)],
    ]
    assert eng.counters["iterations"] == 7 and tokens == {0: [1] * 5, 1: [1] * 5}
    assert eng.counters["prompt_tokens"] == 16 and eng.pool.used == 0


def test_synthetic_cost_is_one_forward_per_mixed_step(monkeypatch):
    """Each step sleeps once (one forward), for the fixed cost plus its decode rows and prompt tokens;
    the sleeps are recorded rather than timed, so a loaded machine cannot make this fail."""
    import aiworkbook.serving.backends as backends

    slept: list[float] = []
    monkeypatch.setattr(backends.time, "sleep", slept.append)
    be = SyntheticBackend(step_s=0.02, per_seq_s=0.001, prefill_s_per_token=0.0001)
    a, b = Sequence(0, 8, 4, None), Sequence(1, 8, 4, None)
    a.prefilled = 8
    assert be.step([(a, 1), (b, 8)]) == [1, 1]
    assert be.step([(a, 1), (Sequence(2, 40, 4, None), 16)]) == [1, None]  # a chunk short of its prompt
    assert slept == pytest.approx([0.02 + 0.001 + 8 * 0.0001, 0.02 + 0.001 + 16 * 0.0001])  # two, not four


def test_budget_below_the_batch_is_refused():
    with pytest.raises(SpecError, match="max_batched_tokens"):
        Engine(SyntheticBackend(), BlockPool(8, 16, 1), max_batch=8, max_batched_tokens=4)


def _torch_backend(pool):
    from aiworkbook.serving.backends import TorchBackend
    from aiworkbook.specs import load_model

    return TorchBackend(load_model("tiny-llama"), pool)


def _words(n: int, tag: str) -> list[str]:
    return [f"{tag}{j}" for j in range(n)]


def test_mixed_chunked_forward_equals_separate_prefill_and_decode_and_the_plain_forward():
    import torch

    # 1. the plain decoder: the whole sequence through the model's own forward, no cache, per token
    pool = BlockPool(64, 16, 2048 * 16)
    be = _torch_backend(pool)
    assert be.pool_bytes() == 64 * 16 * 2048  # the budget, allocated up front
    vocab = be.spec.vocab_size
    plain = {}
    for i, n in enumerate(PROMPTS):
        ids = [hash(w) % vocab for w in _words(n, f"s{i}-")]
        with torch.inference_mode():
            for _ in range(NEW):
                ids.append(int(be.model(torch.tensor([ids]))[0, -1].argmax()))
        plain[i] = ids[n:]

    # 2. separate forwards: every prompt together in one, then decode steps of the whole batch
    seqs = []
    for i, n in enumerate(PROMPTS):
        s = Sequence(i, n, NEW, None, _words(n, f"s{i}-"))
        s.blocks = pool.try_reserve(blocks_for(n + NEW, 16))
        seqs.append(s)
    got = [be.step([(s, s.prompt_len) for s in seqs])]
    for s in seqs:
        s.prefilled = s.prompt_len
    got += [be.step([(s, 1) for s in seqs]) for _ in range(NEW - 1)]
    separate = {j: [step[j] for step in got] for j in range(len(seqs))}
    assert separate == plain

    # 3. the continuous engine: staggered arrivals, a 16-token budget, so prompts go in chunks beside
    #    other sequences' decode tokens, on a fresh backend with the same weights
    pool2 = BlockPool(64, 16, 2048 * 16)
    rec = Recording(_torch_backend(pool2))
    eng = Engine(rec, pool2, max_batch=4, max_batched_tokens=16)
    tokens: dict[int, list] = {}
    arrivals: dict[int, list] = {}
    for k, (i, n) in zip((0, 0, 2, 3), enumerate(PROMPTS), strict=True):
        arrivals.setdefault(k, []).append((n, NEW, (_collect(tokens, i), _words(n, f"s{i}-"))))
    _drive(eng, arrivals)
    assert tokens == plain
    mixed = [f for f in rec.forwards if any(p for *_, p in f) and any(not p for *_, p in f)]
    chunks = [n for f in rec.forwards for sid, n, p in f if sid == 3 and p]
    assert mixed, "no forward mixed decode tokens with prompt tokens"
    assert len(chunks) >= 4 and sum(chunks) == 50  # the 50-token prompt went in several chunks
    assert all(sum(n for _, n, _ in f) <= 16 for f in rec.forwards)  # the budget held
    assert eng.pool.used == 0 and be.state.keys() >= {0, 1, 2, 3} and rec.backend.state == {}


@pytest.mark.parametrize("family", ["gpt2", "phi-3-mini-4k", "mixtral-8x7b"])
def test_chunked_engine_matches_the_plain_forward_across_families(family):
    """Fused q/k/v with learned positions and a tied head (GPT-2), fused q/k/v with RoPE (Phi-3), GQA
    with routed experts (Mixtral), shrunk to a few thousand parameters: same tokens as the plain forward."""
    import dataclasses

    import torch

    from aiworkbook.serving.backends import TorchBackend
    from aiworkbook.specs import load_model

    spec = load_model(family)
    gqa = spec.num_kv_heads < spec.num_heads
    spec = dataclasses.replace(
        spec,
        num_layers=2,
        hidden_size=64,
        num_heads=4,
        num_kv_heads=2 if gqa else 4,
        head_dim=16,
        intermediate_size=128,
        vocab_size=512,
        max_position_embeddings=256,
        num_experts=4 if spec.num_experts else 0,
    )
    pool = BlockPool(32, 16, 1)
    be = TorchBackend(spec, pool)
    eng = Engine(be, pool, max_batch=4, max_batched_tokens=8)
    tokens: dict[int, list] = {}
    prompts = (3, 20)
    _drive(eng, {0: [(n, 4, (_collect(tokens, i), _words(n, f"s{i}-"))) for i, n in enumerate(prompts)]})
    for i, n in enumerate(prompts):
        ids = [hash(w) % spec.vocab_size for w in _words(n, f"s{i}-")]
        with torch.inference_mode():
            for _ in range(4):
                ids.append(int(be.model(torch.tensor([ids]))[0, -1].argmax()))
        assert tokens[i] == ids[n:]


def test_static_batch_is_rectangular_padding_rows_change_no_tokens():
    """Static batching carries a finished sequence as a padding row (n == 0) in every decode forward
    until the longest ends: the rows are computed (Orca's waste), each client has its answer at once,
    and the tokens equal the plain forward's (a padding row writes only inside its own reservation)."""
    import torch

    pool = BlockPool(64, 16, 2048 * 16)
    rec = Recording(_torch_backend(pool))
    eng = Engine(rec, pool, scheduler="static", max_batch=3, batch_timeout_s=0.0)
    lengths = {0: (5, 2), 1: (17, 7), 2: (9, 4)}  # id: (prompt, max tokens)
    tokens: dict[int, list] = {}
    told: list[int] = []
    for i, (n, new) in lengths.items():

        def emit(kind, payload, i=i):
            if kind == "token":
                tokens.setdefault(i, []).append(payload)
            elif kind == "done":
                told.append(i)

        eng.submit(n, new, emit, _words(n, f"p{i}-"))
    for _ in range(20):
        eng._static_step()
        if not eng.running and not eng.waiting:
            break
    decode = [f for f in rec.forwards if all(not p for *_, p in f)]
    assert [len(f) for f in decode] == [3] * 6  # the longest's 7 tokens: the prefill's, then 6 steps
    assert [sum(n == 0 for _, n, _ in f) for f in decode] == [0, 1, 1, 2, 2, 2]  # finished rows padded
    assert told == [0, 2, 1]  # each client is answered when its sequence ends, not with the batch
    vocab = rec.backend.spec.vocab_size
    for i, (n, new) in lengths.items():
        ids = [hash(w) % vocab for w in _words(n, f"p{i}-")]
        with torch.inference_mode():
            for _ in range(new):
                ids.append(int(rec.backend.model(torch.tensor([ids]))[0, -1].argmax()))
        assert tokens[i] == ids[n:]
    assert eng.pool.used == 0 and rec.backend.state == {}
