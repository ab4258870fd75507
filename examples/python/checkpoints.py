"""Checkpoints that a kill cannot tear, and a journal of the steps, for the DDP example.

A checkpoint is one file, ``DIR/checkpoint.pt``, replaced atomically: the new one is written
to a temporary file in the same directory, flushed and fsynced, renamed over the old one with
``os.replace``, and the directory is fsynced. A process killed at any moment leaves the old
checkpoint or the new one, never a mix (at most a stale temporary, which nothing reads).

The journal is a text file every rank appends to, one record a line, each one ``os.write`` to
a file opened with ``O_APPEND`` (whole lines, whichever rank writes; a kill leaves at most a
partial last line, which readers ignore): ``run G`` when training starts from global step
``G``, then ``step k epoch s padding i,i,...`` for the ``k``-th step a rank takes in this
process (its global step is ``G + k``), the batch's epoch, its step in the epoch, its padding
and its dataset indices. scripts/soak reads it to check that every sample of every epoch is
used exactly once in the steps a checkpoint committed.
"""

import io
import os
import pathlib
from typing import Any, Callable, Optional

import numpy as np
import torch

CHECKPOINT = "checkpoint.pt"


def write_atomically(path: pathlib.Path, write: Callable[[io.BufferedWriter], None]) -> None:
    """Replaces the file ``path`` by what ``write`` writes to the open file it is given, so that
    a crash leaves the old content or the new one."""
    temporary = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    with open(temporary, "wb") as file:
        write(file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def save_checkpoint(directory: pathlib.Path, state: dict[str, Any]) -> None:
    """Writes ``state`` (tensors, numbers, dicts of them) as the checkpoint of ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    write_atomically(directory / CHECKPOINT, lambda file: torch.save(state, file))


def load_checkpoint(directory: pathlib.Path) -> Optional[dict[str, Any]]:
    """The checkpoint of ``directory``, or None where there is none yet."""
    path = directory / CHECKPOINT
    if not path.exists():
        return None
    return torch.load(path, weights_only=False)


def final_parameters(net: torch.nn.Module, optimizer: torch.optim.Optimizer) -> bytes:
    """The model's parameters and the optimizer's state as raw bytes, in a fixed order, for
    comparing two runs bit for bit."""
    parts = [tensor.detach().contiguous().numpy().tobytes()
             for tensor in net.state_dict().values()]
    for state in optimizer.state_dict()["state"].values():
        for name in sorted(state):
            value = state[name]
            if isinstance(value, torch.Tensor):
                parts.append(value.detach().contiguous().numpy().tobytes())
    return b"".join(parts)


class StepJournal:
    """The journal of the steps (see the module's doc), appended to by every rank."""

    def __init__(self, path: pathlib.Path):
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        self._steps = 0

    def record_run(self, first_step: int) -> None:
        """Records that training starts from global step ``first_step``."""
        os.write(self._fd, f"run {first_step}\n".encode())

    def record_step(self, batch) -> None:
        """Records this rank's next step: ``batch``'s epoch, step, padding and indices."""
        self._steps += 1
        indices = ",".join(str(i) for i in np.asarray(batch.indices))
        os.write(self._fd, (f"step {self._steps} {batch.epoch} {batch.step} {batch.padding} "
                            f"{indices}\n").encode())

    def close(self) -> None:
        """Closes the journal's file."""
        os.close(self._fd)
