"""IPython start-up file of ``make shapes``: torch takes more threads than the machine has cores.

``make shapes`` copies this file into a scratch ``IPYTHONDIR``'s ``profile_default/startup/``,
so every notebook kernel nbval starts runs it before the first cell. ``OMP_NUM_THREADS`` alone
does not do it: torch caps the thread count it reads from the environment at the number of
cores, while ``torch.set_num_threads`` takes any count. The count comes from
``TRICKS_SHAPES_THREADS`` (the Makefile's ``SHAPES_THREADS``, ``2 x nproc + 1`` by default).
A chapter that sets its own count (``cores.use_cores``) still does so, visibly, in a cell.
"""

import os

#: The environment variable the Makefile sets to the thread count.
THREADS_ENV = "TRICKS_SHAPES_THREADS"


def threads_from_env(environ=os.environ) -> int:
    """The thread count ``make shapes`` asks for.

    Raises:
        ValueError: the variable is missing, not an integer, or below 1.
    """
    raw = environ.get(THREADS_ENV)
    if raw is None or not raw.strip().isdigit() or int(raw) < 1:
        raise ValueError(f"{THREADS_ENV} must be a thread count >= 1, got {raw!r}")
    return int(raw)


if __name__ == "__main__":  # run by IPython in the kernel's namespace: leave no names there
    import torch as _torch

    _torch.set_num_threads(threads_from_env())
    del _torch, threads_from_env, THREADS_ENV, os
