"""aiworkbook.lazy_exports: aiworkbook.profile (and aiworkbook.patterns) load a name's module on first
use, so the KV planner's deployment snippets load without the profile model and check (a dashboard
kernel's start-up, issue 33); `check` and `lock` stay the functions, also after their submodules
(check.py, lock.py) were imported first, as the eager package did."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout.split()


@pytest.mark.timeout(150)
def test_the_snippets_load_without_the_profile_model_and_check():
    code = (
        "import sys\n"
        "from aiworkbook.profile.snippets import vllm_args\n"
        "print(*(m in sys.modules for m in ('aiworkbook.profile.model', 'aiworkbook.profile.check')))\n"
        "from aiworkbook.profile import load_profile\n"
        "print('aiworkbook.profile.model' in sys.modules, 'aiworkbook.profile.check' in sys.modules)\n"
    )
    assert _run(code) == ["False", "False", "True", "False"]


@pytest.mark.timeout(150)
def test_a_submodule_imported_first_leaves_the_function_of_its_name():
    code = (
        "import aiworkbook.profile.check, aiworkbook.profile.lock\n"
        "from aiworkbook.profile.check import check as real_check\n"
        "from aiworkbook.profile import check, lock\n"
        "import aiworkbook.profile as p\n"
        "print(check is real_check, callable(lock), p.lock is lock, type(p.check).__name__)\n"
    )
    assert _run(code) == ["True", "True", "True", "function"]


def test_every_public_name_resolves_and_an_unknown_one_is_an_attribute_error():
    import aiworkbook.profile as profile
    from aiworkbook.profile.model import LockedProfile

    assert all(getattr(profile, name) is not None for name in profile.__all__)
    assert profile.LockedProfile is LockedProfile
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        profile.nothing_here  # noqa: B018
