"""The rows of `stackbench results export --flat --format json` for the
bench scripts: one dict per class of a run record, every figure a column
named with its unit (docs/record.md lists them). The binary ($STACKBENCH,
else `stackbench` on PATH) reads every schema version, so the scripts carry
no schema logic."""

import json
import os
import subprocess


class FlatError(Exception):
    """The binary could not be run or refused the file; the message says why."""


def flat_rows(path):
    """The flat rows of the run record file PATH."""
    binary = os.environ.get("STACKBENCH") or "stackbench"
    try:
        out = subprocess.run([binary, "results", "export", "--flat", "--format", "json", path],
                             capture_output=True, text=True, check=False)
    except OSError as err:
        raise FlatError("cannot run %s (%s); set STACKBENCH to the stackbench binary"
                        % (binary, err)) from None
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise FlatError(lines[0] if lines else "%s exited with %d" % (binary, out.returncode))
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
