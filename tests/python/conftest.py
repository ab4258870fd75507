"""pytest setup for stoke_loader's tests: they run against the installed package (python/test.sh
builds and installs it into .tools/venv first)."""

import json
import os
import pathlib
import subprocess
import sys
import urllib.parse
import urllib.request

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # reference.py


@pytest.fixture
def table():
    """Rows whose values name them: x[i] = [i*4, i*4+1, i*4+2, i*4+3], y[i] = i."""
    n = 23
    x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    y = np.arange(n, dtype=np.int64)
    return x, y


@pytest.fixture(scope="session")
def servers(tmp_path_factory):
    """The storage servers of tests/storage/storage_servers.py (SeaweedFS, an HTTP server),
    started once for the run, with the AWS variables pointing at them; skips where the `weed`
    binary is missing."""
    script = pathlib.Path(__file__).resolve().parents[1] / "storage" / "storage_servers.py"
    root = tmp_path_factory.mktemp("storage_servers") / "servers"
    started = subprocess.run([sys.executable, str(script), "start", str(root)],
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    if (root / "skip.txt").exists():
        pytest.skip((root / "skip.txt").read_text())
    info = json.loads((root / "servers.json").read_text())
    saved = dict(os.environ)
    os.environ.update({"AWS_ACCESS_KEY_ID": info["access_key"],
                       "AWS_SECRET_ACCESS_KEY": info["secret_key"],
                       "AWS_ENDPOINT_URL": info["s3"], "AWS_REGION": "us-east-1"})
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        os.environ.pop(name, None)
    try:
        yield info
    finally:
        os.environ.clear()
        os.environ.update(saved)
        subprocess.run([sys.executable, str(script), "stop", str(root)], timeout=60)


@pytest.fixture(scope="session")
def put(servers):
    """``put(key, payload)``: writes ``payload`` as ``key`` under the servers' data folder (read by
    ``file://`` and HTTP) and puts it into the S3 bucket; returns the file's path."""
    def put_object(key, payload):
        path = pathlib.Path(servers["data"]) / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
        url = f"{servers['filer']}/buckets/{servers['bucket']}/{urllib.parse.quote(key)}"
        urllib.request.urlopen(urllib.request.Request(url, data=payload, method="PUT"),
                               timeout=30).close()
        return path

    return put_object
