"""The package as a user installs it. python/test.sh builds the wheel from the sdist and names it
in STOKE_LOADER_WHEEL; this test makes a new virtual environment in a temporary directory
outside the repository, installs that wheel there with pip (which fetches numpy from PyPI, as
a user's pip does: the environment sees nothing of .tools/venv), and runs install_smoke.py in
that directory with `python -I`, so that nothing is imported from the source tree."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(command: list, cwd: pathlib.Path, timeout: float) -> str:
    """Runs `command` without this process's virtual environment or Python path; its output,
    or a failure showing it."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "STOKE_LOADER_WHEEL")}
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, (f"{' '.join(map(str, command))} exited {done.returncode}:\n"
                                  f"{done.stdout}\n{done.stderr}")
    return done.stdout


def test_the_wheel_from_the_sdist_works_in_a_new_environment(tmp_path_factory):
    wheel = os.environ.get("STOKE_LOADER_WHEEL")
    if not wheel:
        pytest.skip("no STOKE_LOADER_WHEEL: python/test.sh builds the wheel from the sdist and "
                    "names it")
    wheel = pathlib.Path(wheel).resolve()
    work = tmp_path_factory.mktemp("install").resolve()
    assert ROOT not in work.parents, f"{work} is inside the repository"
    run([sys.executable, "-m", "venv", work / "venv"], work, 120)
    python = work / "venv" / "bin" / "python"
    run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel],
        work, 600)
    shutil.copy(pathlib.Path(__file__).with_name("install_smoke.py"), work)
    out = run([python, "-I", "install_smoke.py"], work, 120)
    print(out)
    assert out.strip().endswith("install smoke: ok"), out


def test_features_say_what_a_build_lacks_and_how_to_get_it(monkeypatch):
    import stoke_loader as sl
    import stoke_loader.features as features

    monkeypatch.setattr(sl._native, "has_hdf5", False)
    monkeypatch.setattr(sl._native, "has_images", True)
    assert features.available() == {"hdf5": False, "images": True}
    hdf5, images = features.describe().splitlines()
    assert images.startswith("images: yes (")
    assert hdf5.startswith("hdf5: no. stoke_loader was built without HDF5")
    assert "apt install libhdf5-dev" in hdf5
    assert "pip install --force-reinstall --no-cache-dir" in hdf5
    monkeypatch.setattr(sl._native, "has_images", False)
    assert "apt install pkg-config libturbojpeg0-dev" in features.describe().splitlines()[1]
