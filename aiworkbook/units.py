"""Units and formatting for people: the one place where bytes become GiB and seconds become ms.

Values inside the library are plain: bytes as int, seconds as float, rates as float per second.
GiB means 2**30 bytes and GB means 1e9 bytes; every label says which.
"""

from __future__ import annotations

import math

from aiworkbook.i18n_format import decimal_sign, fixed, general, money, percent

GiB = 2**30
MiB = 2**20
KiB = 2**10
GB = 10**9
MB = 10**6
TB = 10**12

#: Storage width of each dtype name in bits (bits, so int4 / nf4 stay exact integers).
DTYPE_BITS: dict[str, int] = {
    "fp32": 32,
    "tf32": 32,
    "bf16": 16,
    "fp16": 16,
    "fp8": 8,
    "int8": 8,
    "int4": 4,
    "nf4": 4,
}

KV_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")


def dtype_bits(name: str, field: str = "dtype", allowed: tuple[str, ...] | None = None) -> int:
    """Bits per element of a dtype name, or a SpecError naming the field and the choices."""
    from aiworkbook.errors import SpecError

    choices = allowed or tuple(DTYPE_BITS)
    key = str(name).lower()
    if key not in choices or key not in DTYPE_BITS:
        raise SpecError(field, name, ", ".join(choices))
    return DTYPE_BITS[key]


TiB = 2**40

#: The explicit units fmt_bytes accepts (besides "auto").
BYTE_UNITS: dict[str, int] = {"TiB": TiB, "GiB": GiB, "MiB": MiB, "KiB": KiB, "TB": TB, "GB": GB, "MB": MB}


def _na(lang: str) -> str:
    """ "n/a" in `lang` (the catalogue's value.na: no arguments, so its template is its words)."""
    return "n/a" if lang == "en" else _word("value.na", lang)


def _word(id: str, lang: str) -> str:
    """A unit's word in `lang` (`unit.days`, `unit.per_mtok`, `value.na` of the catalogues)."""
    from aiworkbook.catalogue import template

    return template(id, lang)


def _missing(x: object) -> bool:
    """None, NaN or infinite: nothing a person should read as a number."""
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def fmt_bytes(n: float, unit: str = "auto", lang: str = "en") -> str:
    """Binary units (KiB..TiB) chosen by size, or the unit asked for (GiB, MiB, KiB, TiB, or decimal
    GB/MB/TB), always labelled, numbers in `lang` (aiworkbook.i18n_format). None/NaN give "n/a"; an
    unknown unit is a SpecError."""
    if _missing(n):
        return _na(lang)
    if unit != "auto":
        if unit not in BYTE_UNITS:
            from aiworkbook.errors import SpecError

            raise SpecError("unit", unit, "auto, " + ", ".join(BYTE_UNITS))
        digits = 1 if unit in ("MB", "MiB", "KiB") else 2
        return f"{fixed(n / BYTE_UNITS[unit], digits, lang)} {unit}"
    sign = "-" if n < 0 else ""
    a = abs(n)
    for name, size in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if a >= size:
            return f"{sign}{fixed(a / size, 2, lang)} {name}"
    return f"{sign}{int(a)} B"


def fmt_count(n: float, lang: str = "en") -> str:
    """Parameter-style counts: 8.03 B, 124.4 M, with the exact integer kept elsewhere."""
    a = abs(n)
    for name, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if a >= size:
            return f"{fixed(n / size, 2, lang)} {name}"
    return fixed(n, 0, lang)


def fmt_seconds(s: float, lang: str = "en") -> str:
    """ns/us/ms/s/min/h/days chosen by magnitude."""
    if s is None or (isinstance(s, float) and (math.isnan(s) or math.isinf(s))):
        return _na(lang)
    a = abs(s)
    if a < 1e-6:
        return f"{fixed(s * 1e9, 1, lang, False)} ns"
    if a < 1e-3:
        return f"{fixed(s * 1e6, 1, lang, False)} us"
    if a < 1:
        return f"{fixed(s * 1e3, 2, lang, False)} ms"
    if a < 120:
        return f"{fixed(s, 2, lang, False)} s"
    if a < 7200:
        return f"{fixed(s / 60, 1, lang, False)} min"
    if a < 172800:
        return f"{fixed(s / 3600, 1, lang, False)} h"
    return f"{fixed(s / 86400, 1, lang, False)} {_word('unit.days', lang)}"


#: The units fmt_rate accepts (besides "auto").
RATE_UNITS: dict[str, float] = {"TB/s": TB, "GB/s": GB, "MB/s": MB, "kB/s": 1e3, "GiB/s": GiB, "MiB/s": MiB}


def fmt_rate(bps: float, unit: str = "GB/s", lang: str = "en") -> str:
    """Bandwidth in decimal units (GB/s = 1e9 B/s), the convention of datasheets and nccl-tests.
    unit="auto" picks B/s, kB/s, MB/s, GB/s or TB/s by size (host disk and network rates); binary
    GiB/s and MiB/s on request. None/NaN give "n/a"; an unknown unit is a SpecError."""
    if _missing(bps):
        return _na(lang)
    if unit == "auto":
        for name in ("TB/s", "GB/s", "MB/s", "kB/s"):
            if abs(bps) >= RATE_UNITS[name]:
                unit = name
                break
        else:
            return f"{fixed(bps, 0, lang)} B/s"
    if unit not in RATE_UNITS:
        from aiworkbook.errors import SpecError

        raise SpecError("unit", unit, "auto, " + ", ".join(RATE_UNITS))
    digits = {"TB/s": 3, "MB/s": 1, "kB/s": 1, "MiB/s": 1}.get(unit, 2)
    return f"{fixed(bps / RATE_UNITS[unit], digits, lang)} {unit}"


def fmt_flops(f: float, lang: str = "en") -> str:
    """FLOP/s in decimal units (TFLOP/s = 1e12); None/NaN give "n/a"."""
    if _missing(f):
        return _na(lang)
    for name, size in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)):
        if abs(f) >= size:
            return f"{fixed(f / size, 1, lang)} {name}"
    return f"{fixed(f, 0, lang)} FLOP/s"


def fmt_number(v: float, lang: str = "en") -> str:
    """A plain figure for people: thousands separated, never scientific notation between 1e-3 and 1e15."""
    if _missing(v):
        return _na(lang)
    a = abs(v)
    if isinstance(v, int) or a >= 100:
        return fixed(v, 0, lang)
    if a >= 1:
        return fixed(v, 2, lang)
    if a >= 1e-3 or a == 0:
        return f"{v:.4f}".rstrip("0").rstrip(".").replace(".", decimal_sign(lang)) if a else "0"
    return general(v, 3, lang)


def fmt_value(v: object, unit: str = "", lang: str = "en") -> str:
    """One figure in its unit (the unit a typed section's field declares): bytes binary, rates decimal,
    seconds in s (a long time also in min/h/days), fractions in %, money in $; None/NaN give n/a."""
    if isinstance(v, bool):
        return _word("value.yes" if v else "value.no", lang)
    if v is None or isinstance(v, str):
        return _na(lang) if v is None else v
    if not isinstance(v, int | float) or _missing(v):
        return _na(lang) if isinstance(v, int | float) else str(v)
    if unit == "B":
        return fmt_bytes(v, lang=lang)
    if unit == "B/s":
        return fmt_rate(v, "auto", lang)
    if unit == "FLOP/s":
        return fmt_flops(v, lang)
    if unit == "FLOP":
        return fmt_flops(v, lang).replace("/s", "")
    if unit == "s":
        return f"{fmt_number(v, lang)} s ({fmt_seconds(v, lang)})" if abs(v) >= 120 else fmt_seconds(v, lang)
    if unit == "fraction":
        return percent(v, 1, lang)
    if unit == "$":
        return money(v, lang)
    if unit == "$/h":
        return f"{money(v, lang)}/h"
    if unit == "$/Mtok":  # money()'s rule: $0.0259, not $0.03
        return f"{money(v, lang)} {_word('unit.per_mtok', lang)}"
    if unit == "J/Mtok":
        return f"{fmt_number(v, lang)} J {_word('unit.per_mtok', lang)}"
    if unit in ("tokens/s", "1/s"):
        return f"{fmt_number(v, lang)}/s" if unit == "1/s" else f"{fmt_number(v, lang)} tokens/s"
    if unit == "ratio":
        return fixed(v, 3, lang, False)
    if unit == "days":
        return f"{fmt_number(v, lang)} {_word('unit.days', lang)}"
    return f"{fmt_number(v, lang)} {unit}".rstrip()
