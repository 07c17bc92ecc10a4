"""Run a script under ``torchrun`` from a notebook or a test (introduced in chapter 08).

This face hands on the names of two modules, each name with one home:
:mod:`~tricks_helpers.launch.running` (:func:`run_torchrun` and its errors) and
:mod:`~tricks_helpers.launch.cli` (:func:`torchrun_command`, the command line it runs).

``torch.multiprocessing.spawn`` pickles the function it starts, and a function defined in a
notebook cell cannot be pickled by the child processes, so the book launches distributed
code the way it runs in production: ``python -m torch.distributed.run`` (``torchrun``) on a
script or a module.

Guarantees of :func:`run_torchrun`:

- the launch is single-node with ``--standalone``: torchrun picks a free port for the
  rendezvous itself, so two launches never collide on a fixed ``MASTER_PORT``;
- each rank's stdout and stderr are captured separately (``--redirects 3`` into a private
  log directory that is removed afterwards), so a rank's output is never interleaved with
  another's; for results, have the script write one file per rank (see
  :mod:`tricks_helpers.ddp_train`);
- a failing worker raises :class:`WorkerFailedError` carrying the failed rank, its exit code
  and the tail of its stderr (the Python traceback);
- every argument is checked before anything starts (wrong type: :class:`TypeError`, wrong
  value: :class:`ValueError`, the package's policy);
- on timeout, or on any exception while waiting (e.g. a KeyboardInterrupt), the launcher is
  sent SIGTERM, then after ``grace`` seconds it and every process it started (workers run in
  their own sessions, so each worker's process group) are sent SIGKILL;
- on success too, processes the launch started and left running (e.g. a background process a
  worker started and never waited for, even in a session of its own) are sent SIGTERM, then
  SIGKILL after ``grace`` seconds, and counted in :attr:`LaunchResult.leftover`: no process of
  the launch is left running when the function returns or raises.

How the launch's processes are found: every process started by the launch inherits an
environment variable with a marker unique to the launch (``TRICKS_HELPERS_LAUNCH_ID``), and
``/proc/<pid>/environ`` is searched for it; the launcher's process tree is walked as well. A
process that replaces its environment before starting a child, and then leaves the tree (a
double fork), escapes both. This cleanup reads ``/proc`` and so is complete on Linux; elsewhere
only the launcher's own process group is signalled.

Beware: torchrun parses the whole command line and accepts abbreviations of its own options,
so a script option that abbreviates one of torchrun's (``--run`` for ``--run-path``) is
rejected by torchrun ("ambiguous option") before the script starts. Name script options so
that they do not.
"""

from tricks_helpers.launch.cli import torchrun_command
from tricks_helpers.launch.running import (
    LaunchError,
    LaunchResult,
    LaunchTimeoutError,
    WorkerFailedError,
    run_torchrun,
)

__all__ = [
    "LaunchError",
    "WorkerFailedError",
    "LaunchTimeoutError",
    "LaunchResult",
    "torchrun_command",
    "run_torchrun",
]
