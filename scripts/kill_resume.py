#!/usr/bin/env python3
"""Kills training runs with SIGKILL at chosen moments, resumes them from their last checkpoint,
and checks that every sample of every epoch was used exactly once in the committed steps and
that the final parameters are bit-identical to those of a run never killed.

scripts/soak runs it over the C++ learner (examples/kill_and_resume, 2 CPU devices) and the
PyTorch DDP example (examples/python/fashion_mnist_torch_ddp.py, 2 ranks); the test of
examples/kill_and_resume runs it small (a few kills of a tiny run).

For each program: one uninterrupted run (the reference), then trials until --kills kills are
done. A trial starts a fresh run and kills it up to --kills-per-run times, each time at a
moment drawn (from --seed) among four kinds:

- ``time``: a random time within the reference run's duration;
- ``step``: as soon as the journal shows a random number of further steps (inside a step);
- ``write``: as soon as a checkpoint's temporary file appears (inside a checkpoint write);
- ``boundary``: shortly after the last step of an epoch (validation, the epoch's checkpoint,
  the next epoch's start).

Where each kill landed is read afterwards from what it left: a temporary checkpoint file (a
write was torn), the journal's last step (an epoch's last: at a boundary), or neither (in or
between steps, or before the first). After each kill the run is resumed (the program reads
its checkpoint, which must be whole); after the last one it runs to its end. Then the trial's
journal (see examples/kill_and_resume/step_journal.hpp) is replayed: the steps a run took after
the global step the next run resumed from were lost with the kill and are dropped; the rest are
the committed steps, which must be those of the reference, step for step, so every sample of
every epoch is used exactly once (the samples the remainder policy drops are the reference's).
The final checkpoint (C++) or parameter dump (Python) must equal the reference's byte for byte.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import hashlib
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import time
from typing import Callable

ROOT = pathlib.Path(__file__).resolve().parents[1]
KINDS = ("time", "step", "write", "boundary")
LANDINGS = ("before the first step", "step", "checkpoint write", "epoch boundary")
# Each program's runs, for the soak and --small: (epochs, training images, test images,
# checkpoint every N steps). Soak runs have 156 steps an epoch (32 images dropped), small ones
# 10 (20 dropped); both have a step checkpoint on every epoch's last step, just before the
# epoch's own.
RUNS = {"cpp": ((2, 20000, 2000, 12), (2, 1300, 500, 5)),
        "python": ((2, 20000, 2000, 12), (2, 1300, 500, 5))}


@dataclasses.dataclass
class Program:
    """A training program to kill: how to start it in a folder, and what it leaves there."""

    key: str  # what its lines in the summary begin with
    name: str
    command: Callable[[pathlib.Path], list[str]]  # the command line, given the trial's folder
    final: str  # the file whose bytes must match the reference's
    checkpoint: str  # the checkpoint file, relative to the folder
    devices: int  # journal records per global step
    steps_per_epoch: int


def cpp_program(binary: pathlib.Path, epochs: int, train: int, test: int,
                every: int, batch: int = 64) -> Program:
    """examples/kill_and_resume on 2 CPU devices (batch ``batch`` each)."""
    def command(folder: pathlib.Path) -> list[str]:
        return [str(binary), "--devices", "2", "--epochs", str(epochs), "--batch-size", str(batch),
                "--train-samples", str(train), "--test-samples", str(test),
                "--checkpoint-every", str(every), "--checkpoint-dir", str(folder / "checkpoints"),
                "--journal", str(folder / "journal.txt"), "--resume"]
    checkpoint = "checkpoints/checkpoint.safetensors"  # also the final parameters
    return Program("cpp", "C++ learner (examples/kill_and_resume), 2 CPU devices", command,
                   checkpoint, checkpoint, 2, train // (2 * batch))


def python_program(python: str, epochs: int, train: int, test: int, every: int,
                   batch: int = 128) -> Program:
    """examples/python/fashion_mnist_torch_ddp.py on 2 ranks (``batch`` over both)."""
    def command(folder: pathlib.Path) -> list[str]:
        return [python, str(ROOT / "examples/python/fashion_mnist_torch_ddp.py"),
                "--epochs", str(epochs), "--batch-size", str(batch),
                "--train-samples", str(train), "--test-samples", str(test),
                "--checkpoint-every", str(every), "--checkpoint", str(folder / "checkpoints"),
                "--journal", str(folder / "journal.txt"),
                "--final-parameters", str(folder / "final.bin")]
    return Program("python", "PyTorch DDP example (fashion_mnist_torch_ddp.py), 2 ranks, gloo",
                   command, "final.bin",
                   "checkpoints/checkpoint.pt", 2, train // batch)


# --- running and killing ------------------------------------------------------------------

def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (zombies do not count)."""
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def start(program: Program, folder: pathlib.Path, log) -> subprocess.Popen:
    """Starts ``program`` in its own process group, its output appended to ``log``."""
    return subprocess.Popen(program.command(folder), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=ROOT)


def kill(process: subprocess.Popen) -> None:
    """SIGKILLs the process and everything it started, and waits until all are gone."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    while group_alive(process.pid):
        time.sleep(0.01)


def temporaries(folder: pathlib.Path, program: Program) -> set[str]:
    """The checkpoint's temporary files in ``folder`` (left by torn writes, or being written)."""
    checkpoint = folder / program.checkpoint
    if not checkpoint.parent.exists():
        return set()
    return {p.name for p in checkpoint.parent.glob(checkpoint.name + ".tmp.*")}


def journal_steps(folder: pathlib.Path) -> list[tuple[int, int]]:
    """(epoch, step in epoch) of every whole step record of the journal in ``folder``."""
    path = folder / "journal.txt"
    if not path.exists():
        return []
    text = path.read_bytes().decode()
    out = []
    for line in text.split("\n")[:-1]:  # the last piece is partial or empty
        if line.startswith("step "):
            fields = line.split()
            out.append((int(fields[2]), int(fields[3])))
    return out


def wait_for(process: subprocess.Popen, condition: Callable[[], bool], timeout: float) -> bool:
    """Polls ``condition`` until it holds (True) or the process ends or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if condition():
            return True
        time.sleep(0.0005)
    return False


def kill_at(process: subprocess.Popen, kind: str, folder: pathlib.Path, program: Program,
            reference_seconds: float, rng: random.Random) -> bool:
    """Kills the run at a moment of ``kind``; False if it ended first."""
    patience = 3 * reference_seconds + 30
    if kind == "time":
        wait_for(process, lambda: False, rng.uniform(0.0, reference_seconds))
    elif kind == "step":
        target = len(journal_steps(folder)) + rng.randint(1, 4 * program.steps_per_epoch)
        wait_for(process, lambda: len(journal_steps(folder)) >= target, patience)
    elif kind == "write":
        before = temporaries(folder, program)
        wait_for(process, lambda: bool(temporaries(folder, program) - before), patience)
    elif kind == "boundary":
        seen = len(journal_steps(folder))

        def at_boundary() -> bool:
            steps = journal_steps(folder)[seen:]
            return any(step == program.steps_per_epoch - 1 for _, step in steps)
        if wait_for(process, at_boundary, patience):
            time.sleep(rng.uniform(0.0, 0.05 * reference_seconds))
    if process.poll() is not None:
        return False
    kill(process)
    return True


def landing(folder: pathlib.Path, program: Program, temporaries_before: set[str]) -> str:
    """Where a kill landed, from what it left."""
    if temporaries(folder, program) - temporaries_before:
        return "checkpoint write"
    steps = journal_steps(folder)
    if not steps:
        return "before the first step"
    if steps[-1][1] == program.steps_per_epoch - 1:
        return "epoch boundary"
    return "step"


# --- checking -----------------------------------------------------------------------------

Record = tuple[int, int, int, str]  # epoch, step in epoch, padding, indices


def committed(journal: str) -> dict[int, list[Record]]:
    """The committed steps of a journal: global step -> its records (one a device), sorted.
    A run's steps after the step the next run resumed from are dropped (the kill lost them)."""
    runs: list[tuple[int, list[tuple[int, Record]]]] = []
    for line in journal.split("\n")[:-1]:
        fields = line.split()
        if fields[0] == "run":
            runs.append((int(fields[1]), []))
        elif fields[0] == "step":
            runs[-1][1].append((int(fields[1]), (int(fields[2]), int(fields[3]),
                                                 int(fields[4]), fields[5])))
    steps: dict[int, list[Record]] = collections.defaultdict(list)
    for r, (first, records) in enumerate(runs):
        last = runs[r + 1][0] if r + 1 < len(runs) else float("inf")
        if last < first:
            raise AssertionError(f"run {r + 1} resumed from step {last}, before run {r}'s {first}")
        for k, record in records:
            if first + k <= last:
                steps[first + k].append(record)
    return {g: sorted(records) for g, records in steps.items()}


def epoch_indices(steps: dict[int, list[Record]]) -> dict[int, list[int]]:
    """Every epoch's dataset indices over the given steps, padding excluded."""
    out: dict[int, list[int]] = collections.defaultdict(list)
    for records in steps.values():
        for epoch, _, padding, indices in records:
            values = [int(i) for i in indices.split(",")]
            out[epoch] += values[:len(values) - padding]
    return out


def check(trial: dict[int, list[Record]], reference: dict[int, list[Record]], devices: int,
          dataset_size: int) -> list[str]:
    """What is wrong with a trial's committed steps (nothing: one record a device at every
    step, exactly once, as the reference)."""
    problems = []
    uneven = sorted(g for g, records in trial.items() if len(records) != devices)
    if uneven:
        problems.append(f"{len(uneven)} steps without one record a device (first: {uneven[:3]})")
    if trial != reference:
        differ = sorted(g for g in set(trial) | set(reference) if trial.get(g) != reference.get(g))
        problems.append(f"committed steps differ from the reference's at {len(differ)} steps "
                        f"(first: {differ[:3]})")
    for epoch, indices in sorted(epoch_indices(trial).items()):
        repeated = len(indices) - len(set(indices))
        if repeated or (indices and max(indices) >= dataset_size):
            problems.append(f"epoch {epoch}: {repeated} samples used twice or more")
    return problems


def digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"


# --- the soak -----------------------------------------------------------------------------

def run_to_end(program: Program, folder: pathlib.Path, log) -> float:
    """Runs (or resumes) ``program`` in ``folder`` to its end; its wall time."""
    began = time.monotonic()
    process = start(program, folder, log)
    if process.wait() != 0:
        raise SystemExit(f"kill_resume: {program.name} failed in {folder} (see its log.txt)")
    return time.monotonic() - began


def soak(program: Program, kills: int, kills_per_run: int, dataset_size: int,
         work: pathlib.Path, rng: random.Random, minutes: float) -> bool:
    """The reference run, then trials until ``kills`` kills (or no new trial once ``minutes``
    have passed); prints the summary; whether every trial resumed exactly."""
    deadline = time.monotonic() + 60 * minutes
    shutil.rmtree(work, ignore_errors=True)
    (work / "reference").mkdir(parents=True)
    with open(work / "reference" / "log.txt", "ab") as log:
        seconds = run_to_end(program, work / "reference", log)
    reference = committed((work / "reference" / "journal.txt").read_text())
    reference_final = digest(work / "reference" / program.final)
    epochs = epoch_indices(reference)
    used = len(next(iter(epochs.values())))
    key = program.key
    print(f"== {key}: {program.name}")
    print(f"{key} reference run: {seconds:.1f} s, {len(reference)} steps, {len(epochs)} epochs, "
          f"{used} samples an epoch of {dataset_size} ({dataset_size - used} dropped by the "
          f"remainder policy)", flush=True)
    done = trials = exact_trials = exact_kills = 0
    kinds: collections.Counter = collections.Counter()
    landings: collections.Counter = collections.Counter()
    while done < kills and time.monotonic() < deadline:
        trials += 1
        folder = work / f"trial-{trials:03d}"
        folder.mkdir()
        trial_kills, finished = 0, False
        with open(folder / "log.txt", "ab") as log:
            while not finished and trial_kills < kills_per_run and done + trial_kills < kills:
                kind = rng.choice(KINDS)
                before = temporaries(folder, program)
                process = start(program, folder, log)
                finished = not kill_at(process, kind, folder, program, seconds, rng)
                if finished and process.wait() != 0:
                    raise SystemExit(f"kill_resume: {program.name} failed in {folder}")
                if not finished:
                    trial_kills += 1
                    kinds[kind] += 1
                    landings[landing(folder, program, before)] += 1
            if not finished:
                run_to_end(program, folder, log)
        done += trial_kills
        problems = check(committed((folder / "journal.txt").read_text()), reference,
                         program.devices, dataset_size)
        if digest(folder / program.final) != reference_final:
            problems.append("final parameters differ from the reference's")
        verdict = "exact" if not problems else "WRONG: " + "; ".join(problems)
        print(f"{key} trial {trials}: {trial_kills} kills, {verdict}", flush=True)
        if not problems:
            exact_trials += 1
            exact_kills += trial_kills
    print(f"{key} kills aimed at: " + ", ".join(f"{k} {kinds[k]}" for k in KINDS))
    print(f"{key} kills landed in: " + ", ".join(f"{k} {landings[k]}" for k in LANDINGS))
    print(f"{key} resumed exactly: {exact_kills}/{done} kills, {exact_trials}/{trials} trials "
          f"(every sample of every epoch once in the committed steps, final parameters "
          f"bit-identical)", flush=True)
    if done < kills:
        print(f"{key}: stopped after {done} of {kills} kills, at the time limit of {minutes:g} "
              "minutes (--minutes)", flush=True)
    return exact_trials == trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default="cpp,python", help="cpp, python or both")
    parser.add_argument("--kills", type=int, default=50, help="kills per program")
    parser.add_argument("--kills-per-run", type=int, default=5, help="kills before a run ends")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill moments")
    parser.add_argument("--minutes", type=float, default=float("inf"),
                        help="start no new trial of a program after this many minutes")
    parser.add_argument("--cpp", type=pathlib.Path, help="the kill_and_resume binary")
    parser.add_argument("--python", default=str(ROOT / ".tools/torch-venv/bin/python"),
                        help="a Python with torch and stoke_loader")
    parser.add_argument("--work", type=pathlib.Path, default=ROOT / "build/soak")
    parser.add_argument("--small", action="store_true",
                        help="tiny runs (the test): 1,300 images, 2 epochs")
    parser.add_argument("--data", type=pathlib.Path,
                        default=pathlib.Path("/usr/share/datasets/fashion-mnist"))
    args = parser.parse_args()
    if not args.data.exists():
        print(f"kill_resume: skipped: no Fashion-MNIST in {args.data} (the Debian package "
              "dataset-fashion-mnist)")
        return 77
    rng = random.Random(args.seed)
    ok = True
    for name in args.programs.split(","):
        if name not in RUNS:
            raise SystemExit(f"kill_resume: no program {name!r} (cpp or python)")
        epochs, train, test, every = RUNS[name][args.small]
        make = (functools.partial(cpp_program, args.cpp) if name == "cpp" else
                functools.partial(python_program, args.python))
        program = make(epochs=epochs, train=train, test=test, every=every)
        ok &= soak(program, args.kills, args.kills_per_run, train, args.work / name, rng,
                   args.minutes)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
