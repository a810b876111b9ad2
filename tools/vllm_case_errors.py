"""Print the model's error for every published vLLM start-up case (tests/data/vllm_startup_cases.json):
the figures behind the accuracy table in docs/sizing.md. Usage: .venv/bin/python tools/vllm_case_errors.py"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_sizing_vllm import CASES, predict  # noqa: E402  (the one prediction the tests hold to 3 %)


def main() -> None:
    for case in CASES:
        tag = " (not modelled)" if case.get("not_modelled") else ""
        for key, value in predict(case).items():
            want = case["logged"][key]
            print(
                f"{case['id'] + tag:55s} {key:18s} logged {want:>12} model {value:>14.4f} {100 * (value - want) / want:+.2f} %"
            )


if __name__ == "__main__":
    main()
