"""The `streamdedup` command (`python -m streamdedup`, and the console script).

Settings made before anything heavy loads, for the CPU a process spends starting:
- numpy's bundled OpenBLAS starts a thread per core when numpy is imported (~0.07 CPU-s a process
  on 2 cores) and runs its matrix products on them; nothing of ours wants them (the one matrix
  product, `randproj`'s, is a vector times a matrix; parallelism is the prepare threads' and the
  workers'). So one BLAS thread, unless the environment says otherwise.
- The imports (numpy, numba, ours: ~110,000 objects, all kept for the process's life) run without
  the cyclic collector, which would traverse them ~140 times for nothing (~0.03-0.04 CPU-s); they
  are then frozen out of its later collections (`gc.freeze`), and its youngest generation is
  collected every 10,000 allocations instead of 700: a batch's objects live until the batch ends,
  so frequent young collections only traverse survivors (6,000 homogeneous pages: 176 young
  collections, 0.045 CPU-s, against 11 and 0.012).
And numba's CPU target is started without importing scipy.linalg (~0.15 CPU-s; `streamdedup/jit.py`):
this process is the command's, so nothing else can want numba's BLAS check or import scipy meanwhile.
numba's own import asks for two modules it does not use here (`NUMBA_ASKS`): scipy, whose version
it checks (~0.017 CPU-s), and yaml, which it reads `.numba_config.yaml` with only if that file is in
the working directory (~0.023 CPU-s): both are hidden while numba imports (`hidden.py`), yaml only
where there is no such file, and import as usual after."""

import gc
import os
import sys

from streamdedup.hidden import hidden_modules

YOUNG_COLLECTION_ALLOCATIONS = 10_000
NUMBA_CONFIG_FILE = ".numba_config.yaml"  # numba.core.config's, read with yaml where it exists


def numba_asks() -> tuple[str, ...]:
    """What numba's import would import only to ask whether it is there, and need not here."""
    return ("scipy",) if os.path.isfile(NUMBA_CONFIG_FILE) else ("scipy", "yaml")


def main() -> int:
    """Run the `streamdedup` command, numba imported without what it only asks for (`numba_asks`)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    enabled = gc.isenabled()
    gc.disable()
    try:
        if "numba" not in sys.modules:
            with hidden_modules(*numba_asks()):
                import numba  # noqa: F401  # (the command's import: `numba_asks`)
        from streamdedup.cli import main as run
        from streamdedup.jit import start_cpu_target

        start_cpu_target()  # numba's target without scipy.linalg: this process is the command's (jit.py)
    finally:
        gc.freeze()
        gc.set_threshold(YOUNG_COLLECTION_ALLOCATIONS, *gc.get_threshold()[1:])
        if enabled:
            gc.enable()
    return run()


if __name__ == "__main__":
    raise SystemExit(main())
