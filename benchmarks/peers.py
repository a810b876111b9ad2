"""`make bench-peers`: this project's load generator beside GuideLLM and vLLM's benchmark client
against the same planted-delay stand-in (first token 50 ms after the handler's entry, then a token
every 5 ms; 16 tokens per request), in one run, alternating tools within each round.

Per tool and concurrency (1, 16, 64; max(32, 4 x c) requests): the client overhead (TTFT minus the
planted 50 ms) p50/p99, the CPU the client spends per request, and its TTFT, ITL, TPOT and output
tokens/s beside the truth: the planted TTFT 50 ms (from the handler's entry) and ITL 5 ms, and the
tokens/s the stand-in served to that tool run by its own records (GET /timings: the run's tokens over
its first handler entry to the start of its last token's write; `served`). The old bound, c x 16 /
0.125 s, is printed beside it as an upper bound (no closed loop reaches it: a request's end and the
next one's start take time the bound does not count). Each
tool's figures come from its own result file, with its own definitions: GuideLLM and vLLM count TTFT
from the request's send, this load generator from its scheduled time (the same in a closed loop);
GuideLLM's ITL is its per-request inter_token_latency_ms. CPU per request: the tool's process tree
for the run over its requests: GuideLLM's process tree (getrusage of reaped children) less a
one-request run of it (its start-up: imports, tokenizer, worker processes); vLLM's client, one
process, the CPU of its main() (past the imports; its dataset sampling included; 0.34 sends no
test request unless --ready-check-timeout-sec is given); ours in this process after a one-request
warm-up. Ours is also measured request by request (the CPU of each request's own steps, p50 with n:
"CPU each request"), which no peer's can be, so the CPU/req column keeps one method for all three.
Overhead counts from the send for all three; this load generator's own figure, from the scheduled
time, is beside it. The peers run from
.venv-peers (`python tools/peer_results.py --setup`); kept out of `make test` and `make bench`.

    python benchmarks/peers.py [--rounds 5] [--out NEW_FOLDER] [--json FILE]

At least 5 rounds, alternating the tools' order; the headline is the median of the per-round ratios
(ours over the best peer's, each round on its own) with their range, "unsettled" when the rounds fall
on both sides of the goal. Each round's files are kept in its own folder under --out (default
benchmarks/out/peers-<time>); nothing is left in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import peer_results as P  # noqa: E402

PLANTED_TTFT_S, PLANTED_ITL_S, TOKENS = 0.05, 0.005, P.OUTPUT_TOKENS
CONCURRENCY = (1, 16, 64)
MIN_ROUNDS = 5  # the headline is the median of per-round ratios, with its range


def _requests(c: int) -> int:
    return max(32, 4 * c)


def _children_cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def _timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    """CPU seconds of the command's process tree (its reaped children included), and its stdout."""
    c0 = _children_cpu()
    with (cwd / "log.txt").open("a") as log:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, text=True, cwd=cwd, timeout=600)
    if out.returncode:
        raise RuntimeError(f"{cmd[0]} exited {out.returncode}; see {cwd / 'log.txt'}")
    return _children_cpu() - c0, out.stdout


# vLLM's client in one process: the CPU of its main() alone (past the imports), printed at the end
_VLLM_TIMED = P._VLLM_BENCH.replace(
    "main(parser.parse_args(sys.argv[1:]))",
    "import time\nargs = parser.parse_args(sys.argv[1:])\nt0 = time.process_time()\nmain(args)\n"
    "print('AIWB_CPU_S', time.process_time() - t0)",
)


def _stats(ttft_s: list[float], itl_s: list[float], tpot_s: list[float], tok_s: float | None) -> dict:
    """`ttft_s` from each request's send (as GuideLLM and vLLM count it)."""
    over = [t - PLANTED_TTFT_S for t in ttft_s]
    return {
        "n": len(ttft_s),
        "overhead_p50_ms": float(np.percentile(over, 50)) * 1e3,
        "overhead_p99_ms": float(np.percentile(over, 99)) * 1e3,
        "ttft_p50_ms": float(np.median(ttft_s)) * 1e3,
        "itl_p50_ms": float(np.median(itl_s)) * 1e3,
        "tpot_p50_ms": float(np.median(tpot_s)) * 1e3,
        "tok_s": tok_s,
    }


def served(records: list[dict], since: float, n: int) -> dict:
    """What the stand-in delivered to one tool run, by its own records (`GET /timings`, perf_counter,
    one clock for all processes here): the run's `n` requests, the last `n` to enter its handler at or
    after `since` (a probe a tool sends before its run, as vLLM's client does with
    --ready-check-timeout-sec, is left out), their tokens over the first
    handler entry to the start of the last token's write. Streams with no last write (cut) count
    neither tokens nor end."""
    seen = sorted((t for t in records if t["entered"] >= since), key=lambda t: t["entered"])
    mine = seen[-n:]
    done = [t for t in mine if "last_write" in t]
    out: dict = {"served_tok_s": None, "served_requests": len(done), "requests_seen": len(seen)}
    if done:
        window = max(t["last_write"] for t in done) - min(t["entered"] for t in mine)
        out["served_tok_s"] = sum(t["tokens"] for t in done) / window if window > 0 else None
    return out


def off_pct(got: float | None, truth: float | None) -> float | None:
    """How far a figure is from its truth, in % of the truth."""
    return None if got is None or not truth else (got / truth - 1) * 100


def run_ours(url: str, c: int, n: int, work: Path) -> tuple[dict, float]:
    from aiworkbook.serving.client import Load, Target, run_load_sync
    from aiworkbook.serving.metrics import summarize_run

    load = Load(requests=n, concurrency=c, prompt_tokens=P.PROMPT_TOKENS, output_tokens=TOKENS, warmup=0)
    t0 = time.process_time()
    recs = run_load_sync(Target(url, "stand-in"), load)
    cpu = time.process_time() - t0
    ok = [r for r in recs if r.ok]
    sm = summarize_run(recs)
    itls = [x for r in ok for x in r.itls()]
    tpots = [t for r in ok if (t := r.tpot_s) is not None]
    st = _stats([r.ttft_s - r.queue_s for r in ok], itls, tpots, sm["output_throughput_tok_s"])
    # this load generator's own TTFT counts from the scheduled time: the send's wait included
    st["overhead_p50_from_scheduled_ms"] = float(np.median([r.ttft_s - PLANTED_TTFT_S for r in ok])) * 1e3
    # this load generator's CPU per request measured request by request (serving/cpumeter.py); the
    # peers' processes cannot be split by request, so the table's CPU/req column stays one method for all
    st["cpu_each_p50_ms"] = float(np.median([r.cpu_s for r in ok])) * 1e3 if ok else None
    st["cpu_each_n"] = len(ok)
    return st, cpu


def run_guidellm(py: Path, url: str, tok: str, c: int, n: int, work: Path) -> tuple[dict, float]:
    out = work / f"g-{c}-{n}.json"
    cmd = P.guidellm_command(py, url, tok, [f"kind=concurrent,streams={c}"], n, out) + ["--disable-console"]
    cpu, _ = _timed(cmd, work)
    b = json.loads(out.read_text())["benchmarks"][0]
    ok = b["requests"]["successful"]
    tokens = sum(q["output_tokens"] for q in ok)
    itl = [q["inter_token_latency_ms"] / 1e3 for q in ok]
    st = _stats([q["time_to_first_token_ms"] / 1e3 for q in ok], itl, itl, tokens / b["duration"])
    st["own_tpot_p50_ms"] = float(np.median([q["time_per_output_token_ms"] for q in ok]))
    return st, cpu


def run_vllm(py: Path, url: str, tok: str, c: int, n: int, work: Path) -> tuple[dict, float]:
    name = f"v-{c}-{n}.json"
    cmd = [str(py), "-c", _VLLM_TIMED, "--backend", "openai", "--base-url", url, "--model", "stand-in"]
    cmd += ["--tokenizer", tok, "--dataset-name", "random", "--random-input-len", str(P.PROMPT_TOKENS)]
    cmd += ["--random-output-len", str(TOKENS), "--ignore-eos", "--num-prompts", str(n)]
    cmd += ["--max-concurrency", str(c), "--save-result", "--save-detailed", "--result-dir", str(work)]
    cmd += ["--result-filename", name, "--disable-tqdm"]
    _, stdout = _timed(cmd, work)
    cpu = float(stdout.rsplit("AIWB_CPU_S", 1)[1].split()[0])
    d = json.loads((work / name).read_text())
    ok = [i for i, e in enumerate(d["errors"]) if not e]
    itls = [x for i in ok for x in d["itls"][i]]
    tpots = [sum(d["itls"][i]) / (d["output_lens"][i] - 1) for i in ok]
    return _stats([d["ttfts"][i] for i in ok], itls, tpots, d["output_throughput"]), cpu


def table(rows: list[dict]) -> str:
    """The rows as text: ms unless said; tok/s beside the stand-in's served figure (off by %, median of
    the rounds' offsets) and the upper bound."""
    out = [
        "tool               c   ovh p50  ovh p99  CPU/req   TTFT    ITL    TPOT    tok/s   served  off %   bound"
    ]
    for x in sorted(rows, key=lambda x: (x["concurrency"], x["tool"])):
        off = f"{v:+6.2f}" if (v := x.get("tok_s_off_served_pct")) is not None else "     -"
        sched = x.get("overhead_p50_from_scheduled_ms")
        out.append(
            f"{x['tool']:<17} {x['concurrency']:>3} {x['overhead_p50_ms']:8.2f} {x['overhead_p99_ms']:8.2f} "
            f"{x['cpu_ms_per_request']:8.2f} {x['ttft_p50_ms']:6.1f} {x['itl_p50_ms']:6.2f} {x['tpot_p50_ms']:6.2f} "
            f"{x['tok_s']:8.1f} {x.get('served_tok_s') or float('nan'):8.1f} {off} {x['bound_tok_s']:7.0f}"
            + (f"  from scheduled: {sched:.2f}" if sched is not None else "")
            + (
                f"  CPU each request p50: {each:.3f} (n {x['cpu_each_n']:g})"
                if (each := x.get("cpu_each_p50_ms"))
                else ""
            )
        )
    return "\n".join(out)


def round_ratios(at_top: dict[str, dict], tool: str = "aiworkbook") -> list[float]:
    """Per round, `tool`'s overhead p50 over the best peer's in that same round (the rounds alternate
    the tools' order, so the ratio of one round compares runs minutes apart, not a round apart)."""
    ours = at_top.get(tool, {}).get("overhead_p50_ms_rounds") or []
    peers = [v["overhead_p50_ms_rounds"] for k, v in at_top.items() if k != tool]
    out = []
    for r, mine in enumerate(ours):
        best = [p[r] for p in peers if r < len(p) and p[r] and p[r] > 0]
        if best:
            out.append(mine / min(best))
    return out


def verdict(rows: list[dict], tool: str = "aiworkbook", within_pct: float = 3.0) -> str:
    """The goal, for `tool`: its overhead p50 at the highest concurrency against the best peer's, and
    each of its figures against its truth (TTFT 50 ms, ITL and TPOT 5 ms, tok/s the served figure)."""
    lines = []
    top = max(x["concurrency"] for x in rows)
    at_top = {x["tool"]: x for x in rows if x["concurrency"] == top}
    ratios = round_ratios(at_top, tool)
    if ratios:
        med, lo, hi = statistics.median(ratios), min(ratios), max(ratios)
        ok = "met" if hi <= 0.5 else "missed" if lo > 0.5 else "unsettled (the rounds disagree)"
        lines.append(
            f"overhead p50 at {top} streams: {med:.2f}x the best peer's in each round (median of "
            f"{len(ratios)} rounds, range {lo:.2f}..{hi:.2f}); goal <= 0.5x: {ok}"
        )
    for x in sorted((x for x in rows if x["tool"] == tool), key=lambda x: x["concurrency"]):
        offs = {
            "TTFT": off_pct(x["ttft_p50_ms"], PLANTED_TTFT_S * 1e3),
            "ITL": off_pct(x["itl_p50_ms"], PLANTED_ITL_S * 1e3),
            "TPOT": off_pct(x["tpot_p50_ms"], PLANTED_ITL_S * 1e3),
            "tok/s": x.get("tok_s_off_served_pct"),  # the median of the rounds' offsets
        }
        bad = [k for k, v in offs.items() if v is None or abs(v) > within_pct]
        shown = ", ".join(f"{k} {v:+.1f} %" if v is not None else f"{k} -" for k, v in offs.items())
        lines.append(
            f"{tool} c={x['concurrency']}: {shown}; within {within_pct:g} %: {'no ' + str(bad) if bad else 'yes'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", type=Path, default=ROOT / ".venv-peers")
    ap.add_argument("--rounds", type=int, default=MIN_ROUNDS)
    ap.add_argument("--out", type=Path, help="a new folder: one sub-folder per round is kept there")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    if not MIN_ROUNDS <= a.rounds <= 100:
        ap.error(f"--rounds {a.rounds}: an integer {MIN_ROUNDS}..100 (the headline is a median of rounds)")
    out_dir = a.out or ROOT / "benchmarks" / "out" / time.strftime("peers-%Y%m%d-%H%M%S")
    try:
        out_dir.mkdir(parents=True)
    except FileExistsError:
        ap.error(f"--out {out_dir}: exists; give a new folder (no round overwrites another's files)")
    py = P.venv_python(a.venv)
    if not py.exists():
        P.setup(a.venv)
    from aiworkbook.serving.client import fetch_json

    tok = str(out_dir / "tokenizer")
    subprocess.run([str(py), "-c", P._TOKENIZER, tok], check=True)
    work = out_dir  # the round's folder, set per round below
    tools = {
        "aiworkbook": lambda c, n: run_ours(url, c, n, work),
        "guidellm": lambda c, n: run_guidellm(py, url, tok, c, n, work),
        "vllm bench serve": lambda c, n: run_vllm(py, url, tok, c, n, work),
    }
    got: dict[tuple[str, int], list[dict]] = {}
    with P.StandIn() as url:
        for r in range(a.rounds):
            work = out_dir / f"round-{r + 1}"
            work.mkdir()
            names = list(tools)
            names = names[r % len(names) :] + names[: r % len(names)]  # each round starts with another
            for name in names:
                # GuideLLM: its start-up (imports, worker processes) to take off; ours: a warm-up in this
                # process; vLLM's client times its main() itself
                startup = tools[name](1, 1)[1] if name != "vllm bench serve" else 0.0
                startup = 0.0 if name == "aiworkbook" else startup
                for c in CONCURRENCY:
                    n = _requests(c)
                    since = time.perf_counter()
                    st, cpu = tools[name](c, n)
                    st.update(served((fetch_json(url + "/timings") or {}).get("requests", []), since, n))
                    st["cpu_ms_per_request"] = max(0.0, cpu - startup) / max(1, n - 1) * 1e3
                    got.setdefault((name, c), []).append(st)
                    print(f"round {r + 1} {name} c={c}: {st}", file=sys.stderr, flush=True)
    rows = []
    for (name, c), runs in got.items():
        keys = [k for k in runs[0] if isinstance(runs[0][k], int | float)]
        med = {k: statistics.median(x[k] for x in runs if x.get(k) is not None) for k in keys}
        med["overhead_p50_ms_rounds"] = [round(x["overhead_p50_ms"], 2) for x in runs]
        # per round: the tool's tokens/s against what the stand-in served that same run
        med["tok_s_off_served_pct_rounds"] = [
            None if (v := off_pct(x["tok_s"], x["served_tok_s"])) is None else round(v, 2) for x in runs
        ]
        offs = [v for v in med["tok_s_off_served_pct_rounds"] if v is not None]
        med["tok_s_off_served_pct"] = statistics.median(offs) if offs else None
        rows.append({"tool": name, "concurrency": c, **med, "bound_tok_s": c * TOKENS / 0.125})
    print(table(rows))
    print(verdict(rows))
    if a.json:
        truth = {"ttft_ms": 50, "itl_ms": 5, "tok_s": "served_tok_s per row (the stand-in's records)"}
        a.json.write_text(json.dumps({"rows": rows, "truth": truth}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
