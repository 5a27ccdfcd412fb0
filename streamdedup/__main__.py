"""The `streamdedup` command (`python -m streamdedup`, and the console script).

numpy's bundled OpenBLAS starts a thread per core when numpy is imported (~0.07 CPU-s a process on
2 cores) and runs its matrix products on them; nothing of ours wants them (the one matrix product,
`randproj`'s, is a vector times a matrix; parallelism is the prepare threads' and the workers').
So one BLAS thread, unless the environment says otherwise, set before numpy loads."""

import os


def main() -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from streamdedup.cli import main as run

    return run()


if __name__ == "__main__":
    raise SystemExit(main())
