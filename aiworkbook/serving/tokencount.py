"""Output tokens counted from the streamed text when the server's usage is missing or refused: the
served model's tokenizer (`--tokenizer`), never downloaded. Without one a request's output is counted
in chunks, and chunks are not tokens (a server may put several tokens in one chunk: FastChat sent 16
tokens in 9), so they stay out of TPOT and tokens/s.

The text is tokenised once per request, after the load point (no tokenizer work inside the timed
window), and each token is given to the chunk its last character arrived in, so ITL is per token too.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from aiworkbook.errors import SpecError
from aiworkbook.serving.metrics import RequestRecord

ALLOWED = (
    "a tokenizer.json, a folder holding one (a transformers tokenizer folder), or a model name "
    "already in the local Hugging Face cache (nothing is downloaded)"
)


@dataclass(frozen=True)
class TextTokenizer:
    """Where each token of a text ends (character offsets), and where the tokenizer came from."""

    source: str
    token_ends: Callable[[str], list[int]]


def load_tokenizer(spec: str) -> TextTokenizer:
    """A tokenizer.json (or a folder holding one) read with `tokenizers`; else a name or folder
    transformers' AutoTokenizer finds locally (local_files_only). A tokenizer without character offsets
    (a slow, Python one) is refused: each token could not be placed in its chunk."""
    path = Path(spec).expanduser()
    file = path / "tokenizer.json" if path.is_dir() else path
    if file.is_file():
        from tokenizers import Tokenizer

        try:
            tok = Tokenizer.from_file(str(file))
        except Exception as exc:  # noqa: BLE001 (any unreadable file: the field named, exit 2)
            raise SpecError("tokenizer", spec, f"{ALLOWED} ({type(exc).__name__}: {exc})"[:300]) from None

        def ends(text: str) -> list[int]:
            return [e for _, e in tok.encode(text, add_special_tokens=False).offsets]

        return TextTokenizer(str(file), ends)
    return _auto(spec)


def _auto(spec: str) -> TextTokenizer:
    import os

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(spec, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 (not found locally, or not a tokenizer)
        raise SpecError("tokenizer", spec, f"{ALLOWED} ({type(exc).__name__})") from None
    if not getattr(tok, "is_fast", False):
        raise SpecError("tokenizer", spec, f"{ALLOWED}, with character offsets (a fast tokenizer)")

    def ends(text: str) -> list[int]:
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        return [int(e) for _, e in enc["offset_mapping"]]

    return TextTokenizer(spec, ends)


def count_tokens(records: Iterable[RequestRecord], tok: TextTokenizer) -> int:
    """Count the output of every request without a usage count (none sent, or refused) from its
    streamed text: each chunk's tokens (those whose last character it carried; a chunk holding part
    of a token carries 0), `chunk_tokens` "tokenizer". Returns how many requests it counted."""
    n = 0
    for r in records:
        if r.usage_tokens is not None or not r.chunks or len(r.texts) != len(r.chunks):
            continue
        bounds, at = [], 0
        for text in r.texts:
            at += len(text)
            bounds.append(at)
        per_chunk = [0] * len(r.chunks)
        for end in tok.token_ends("".join(r.texts)):
            per_chunk[min(bisect_left(bounds, end), len(per_chunk) - 1)] += 1
        r.chunks = [(t, k) for (t, _), k in zip(r.chunks, per_chunk, strict=True)]
        r.chunk_tokens = "tokenizer"
        n += 1
    return n
