"""``python -m tricks_helpers.resume``: the child process of ``resume_in_fresh_process``."""

from tricks_helpers.resume.fresh_process import main

main()
