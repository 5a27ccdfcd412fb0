"""numba for the kernels, and the command's start of its CPU target without scipy's BLAS.

Every module with a kernel imports numba from here (`from streamdedup.jit import numba`). The
command (`streamdedup/__main__.py`, which owns its process) calls `start_cpu_target` before any
kernel runs; a program that imports streamdedup as a library (a notebook, a Faust app started by
`faust`) leaves numba to start as it always does.

Why: numba starts its CPU target at the first compile or cache load (`BaseContext.refresh`,
"useful for third-party extensions" in its docstring), which imports `numba.np.arraymath`, and that
module asks once, at import, whether `scipy.linalg.cython_blas` imports (numba 0.68
`arraymath._check_blas` -> `linalg.ensure_blas`). Where scipy is installed (datasketch brings it)
the answer costs `import scipy.linalg`, ~0.15 CPU-s of every command's start-up (a quarter of
`streamdedup dedup` on 10 pages). The answer only picks how jitted `np.correlate` and
`np.convolve` take float inner products (`arraymath._get_inner_prod`: np.dot or a loop), for the
process's life; no kernel here calls those, nor any linear algebra. So the command starts the
target with `scipy.linalg` hidden from the import system (a None in `sys.modules`, which halts an
import with ImportError: the language reference's "The module cache") and puts it back at once: a
later `import scipy.linalg` (datasketch, a kernel's np.dot, whose typing imports BLAS itself)
imports it as usual. numba's extensions (the `numba_extensions` entry points, which the target's
start loads once and never again) are loaded first, outside the window, so one that imports scipy
is not lost. Only the command does this: in a library user's process the window could meet another
thread's import of scipy, and the user's own jitted `np.convolve` would take the loop.
"""

from __future__ import annotations

import numba
import numba.core.entrypoints
from numba.core.registry import cpu_target

from streamdedup.hidden import hidden_modules

__all__ = ["numba"]

HIDDEN = "scipy.linalg"  # what numba's BLAS check imports (its parent package, the costly part)


def start_cpu_target() -> None:
    """Start numba's CPU target (its registries, the runtime) without importing scipy.linalg.

    For the command's process only (the module docstring). numba's extensions are loaded first,
    with scipy in view; a target started already is left as it is (refresh is then cheap)."""
    numba.core.entrypoints.init_all()
    with hidden_modules(HIDDEN):
        cpu_target.target_context.refresh()
