"""What the bench scripts' tests share: a check that fails the test with a message, and the work
folder named on the command line."""
import os
import sys


def check(cond, what):
    """Exits with "FAILED: what" unless cond holds."""
    if not cond:
        sys.exit("FAILED: " + what)


def work_dir(index=1):
    """The folder given as argument `index`, created if missing."""
    work = sys.argv[index]
    os.makedirs(work, exist_ok=True)
    return work
