"""Print a NPY_DISABLE_CPU_FEATURES value that takes numpy's AVX-512 (or AVX2 and AVX-512) loops away.

Usage: ``python .ci/npy_disable.py avx512|avx2`` prints the value;
``NPY_DISABLE_CPU_FEATURES=... python .ci/npy_disable.py --check avx512|avx2`` checks that numpy
runs its float64 log/log1p/expm1 loops below that level and prints which targets they use.

The names come from numpy's own list of dispatched features, read at run time, because they
depend on the numpy build: numpy 2.4 dispatches ``X86_V3`` (AVX2/FMA3) ``X86_V4`` (AVX-512
Skylake) ``AVX512_ICL`` ``AVX512_SPR``, numpy 1.26 ``AVX2``, ``FMA3``, ``AVX512F``,
``AVX512_SKX``...  numpy only warns (an ImportWarning, hidden by default) and ignores a name
that is not in that list, e.g. ``AVX512F`` on numpy 2.4, so a hard-coded list can silently
disable nothing.  A dispatched feature that the CPU lacks may be named: disabling it is a no-op,
so the same value works on any x86-64 host.  Elsewhere (no x86 features) it prints nothing.
"""

from __future__ import annotations

import sys
import warnings

#: dispatched x86 feature names at or above AVX-512 (numpy 1.x and 2.x spellings)
AVX512 = ("X86_V4", "AVX512")
#: ... and at AVX2 (x86-64-v3: AVX2, FMA3, F16C, BMI) level
AVX2 = ("X86_V3", "AVX2", "FMA3", "F16C") + AVX512


def _umath():
    try:
        from numpy._core import _multiarray_umath as m  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import _multiarray_umath as m
    return m


def value(level: str) -> str:
    prefixes = {"avx512": AVX512, "avx2": AVX2}[level]
    dispatch = getattr(_umath(), "__cpu_dispatch__", [])
    return " ".join(f for f in dispatch if f.startswith(prefixes))


def check(level: str) -> int:
    """Exit status 1 when a float64 log/log1p/expm1 loop still runs at a disabled level."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = _umath()
    for w in caught:
        print(f"numpy warned: {w.message}", file=sys.stderr)
    info = getattr(m, "__cpu_targets_info__", None)
    if info is None:  # numpy 1.x: no per-loop report; the disabled features must be off
        feats = m.__cpu_features__
        bad = [f for f in value(level).split() if feats.get(f)]
        print("features still on:", bad)
        return 1 if bad else 0
    prefixes = {"avx512": AVX512, "avx2": AVX2}[level]
    status = 0
    for name in ("log", "log1p", "expm1", "exp"):
        current = info.get(name, {}).get("dd", {}).get("current", "?")
        print(f"{name}(float64): {current}")
        if current.startswith(prefixes):
            status = 1
    return status


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--check":
        sys.exit(check(args[1]))
    print(value(args[0]))
