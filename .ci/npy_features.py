"""Print the value of NPY_DISABLE_CPU_FEATURES that switches off numpy's AVX-512 (or AVX2 and up)
dispatch on this host and numpy version.

Only names from numpy's own dispatch list are printed: numpy refuses to disable a baseline
feature, and the names differ between releases (numpy 1.x: AVX512F, AVX512_SKX, ...; numpy 2.x
groups them as X86_V3, X86_V4, AVX512_ICL, ...).  On a host without the feature the value is
empty and the pass tests numpy's default path again, which is what that host runs anyway.

    python .ci/npy_features.py avx512|avx2
"""

import sys

try:  # numpy >= 2
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
except ImportError:  # numpy 1.x
    from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__


def _is_avx512(name: str) -> bool:
    return name.startswith("AVX512") or name == "X86_V4"


def _is_avx2_or_up(name: str) -> bool:
    return _is_avx512(name) or name in {"AVX", "AVX2", "FMA3", "F16C", "X86_V3"}


def main(level: str) -> str:
    if level not in ("avx512", "avx2"):
        raise SystemExit(f"usage: {sys.argv[0]} avx512|avx2 (got {level!r})")
    keep = _is_avx512 if level == "avx512" else _is_avx2_or_up
    names = [n for n in __cpu_dispatch__ if keep(n) and __cpu_features__.get(n, False)]
    return " ".join(names)


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else ""))
