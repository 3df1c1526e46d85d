"""Batches of episodes (`simrt batch`): exactness, resume, isolated failures, Ray, replays.

Every batch here runs in real worker processes on the real Panda scene. The oracle for a
batch episode is a plain single-process ``run_scene`` of that episode's parameters (fresh
stage, fresh engine): the recordings must be equal byte for byte, whichever executor or
worker count ran the batch. Replays are checked against a hand-written playback loop
(``KinematicPlayback`` + ``SensorRuntime``). Child processes get default signal
dispositions and every run is bounded in steps and time.
"""

from __future__ import annotations

import csv
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("zarr")
pytest.importorskip("pyarrow")

from runtime.batch import load_dataset, load_spec, parse_spec, run_batch  # noqa: E402
from runtime.batch.episode import EpisodeTask, run_kwargs  # noqa: E402
from runtime.errors import SimrtError  # noqa: E402
from runtime.recording import load_recording  # noqa: E402
from tests.helpers.batch import EPISODES, REPO, SCENE, SPEC, STEPS, _same_recordings  # noqa: E402, F401


def _default_signals() -> None:
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def _simrt(args: list[str], timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runtime.cli", *args],
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_default_signals,
    )


@pytest.fixture(scope="module")
def local_ds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 20-episode batch on 2 local worker processes (shared by the tests below)."""
    root = tmp_path_factory.mktemp("batch")
    spec = root / "spec.toml"
    spec.write_text(SPEC)
    summary = run_batch(spec, root / "ds", workers=2, retries=0)
    assert (summary.done, summary.failed, summary.skipped) == (EPISODES, 0, 0)
    return spec, root / "ds"


# ---------------------------------------------------------------------------- spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("episodes = 2\n", "scenes: missing"),
        ('[[scenes]]\npath = "a.usda"\n', "scenes[0].episodes: missing"),
        ('episodes = 0\n[[scenes]]\npath = "a.usda"\n', "episodes: expected an integer >= 1"),
        ('episodes = 1\nstep = 3\n[[scenes]]\npath = "a.usda"\n', "step: unknown key"),
        (
            'episodes = 1\n[[scenes]]\npath = "a.usda"\n[[randomize.ik]]\nlink = "h"\n'
            "box_min = [0, 0]\nbox_max = [1, 1, 1]\n",
            "randomize.ik[0].box_min: expected 3 finite numbers",
        ),
        (
            'episodes = 1\n[[scenes]]\npath = "a.usda"\n[randomize.scales]\nmass = [1.2, 0.8]\n',
            "randomize.scales.mass: expected [low, high]",
        ),
        ('episodes = 1\nimu_mode = "exact"\n[[scenes]]\npath = "a.usda"\n', "imu_mode: expected"),
        ("episodes = [1\n", "not valid TOML"),
    ],
)
def test_spec_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SimrtError, match="bad.toml") as error:
        load_spec(path)
    assert message in str(error.value)


def test_episode_seeds_come_from_seed_sequence() -> None:
    from runtime.batch.randomize import episode_seed

    for base, episode in ((0, 0), (11, 7), (2**40, 123)):
        expected = np.random.SeedSequence(base, spawn_key=(episode,)).generate_state(1, np.uint64)
        assert episode_seed(base, episode) == int(expected[0]) >> 1
    assert len({episode_seed(11, e) for e in range(1000)}) == 1000


# ---------------------------------------------------------------------------- local


def test_local_batch_equals_single_runs(local_ds: tuple[Path, Path], tmp_path: Path) -> None:
    from runtime.batch.randomize import draw_parameters
    from runtime.engine.mujoco_engine import MujocoEngine
    from runtime.run.loop import run_scene
    from runtime.run.scene import open_scene_stage as _open_stage

    spec_path, ds_path = local_ds
    spec = load_spec(spec_path)
    dataset = load_dataset(ds_path)
    rows = dataset.manifest.to_pylist()
    assert [r["status"] for r in rows] == ["done"] * EPISODES
    assert all(r["steps"] == STEPS and r["attempts"] == 1 for r in rows)
    # each worker built its engines once and reused them for its later episodes
    pids = {r["worker_pid"] for r in rows}
    assert len(pids) == 2
    assert sum(r["reused"] for r in rows) >= EPISODES - 2 * len(pids)
    # both IMU modes drawn, every randomized quantity present
    params = [json.loads(r["params"]) for r in rows]
    assert {p["imu_mode"] for p in params} == {"isaac", "physical"}
    assert all(set(p) == {"imu_mode", "joints", "ik_targets", "objects", "scales"} for p in params)
    stage = _open_stage(str(SCENE))
    for episode in (0, 1, EPISODES - 1):
        entry = dataset[episode]
        # the draw depends on the seed only (fresh engine, this process)
        fresh = MujocoEngine(stage)
        assert (
            draw_parameters(spec.randomize, entry.row["seed"], lambda _m, e=fresh: e)
            == entry.params
        )
        # the oracle: a single run_scene with those parameters, fresh build
        task = EpisodeTask(episode, str(SCENE), entry.row["seed"], "", steps=STEPS)
        single = tmp_path / f"single{episode}.zarr"
        run_scene(str(SCENE), out=single, **run_kwargs(task, entry.params, {}))
        _same_recordings(entry.store, single)
        assert load_recording(entry.store).run["episode"]["seed"] == entry.row["seed"]


def test_rerun_is_resumable_and_run_episode_is_exact(
    local_ds: tuple[Path, Path], tmp_path: Path
) -> None:
    from runtime.cli import main

    spec_path, ds_path = local_ds
    again = run_batch(spec_path, ds_path, workers=2)
    assert (again.skipped, again.done, again.failed) == (EPISODES, 0, 0)
    # simrt run --episode DATASET:ID re-runs one episode alone, exactly
    out = tmp_path / "again.zarr"
    code = main(["run", "--episode", f"{ds_path}:5", "--out", str(out), "--no-progress"])
    assert code == 0
    _same_recordings(ds_path / "episodes" / "000005.zarr", out)
    assert main(["run", "--episode", f"{ds_path}:99", "--no-progress"]) == 1
    # one batch at a time writes a dataset
    from runtime.batch.dataset import Dataset

    spec = load_spec(spec_path)
    holder = Dataset(ds_path, spec.to_json(), spec.fingerprint())
    try:
        with pytest.raises(SimrtError, match="another simrt batch is writing"):
            run_batch(spec_path, ds_path, workers=1)
    finally:
        holder.close()
    # another spec is refused for this dataset
    other = tmp_path / "other.toml"
    other.write_text(SPEC.replace("seed = 11", "seed = 12"))
    with pytest.raises(SimrtError, match="another spec .*seed"):
        run_batch(other, ds_path, workers=1)


def test_sigkilled_worker_is_retried_and_batch_completes(tmp_path: Path) -> None:
    spec = tmp_path / "kill.toml"
    spec.write_text(
        # (2,000 steps: an episode records for about 0.1 s, long enough to be seen stepping;
        # 100 steps took a few milliseconds once the loop got faster, and slipped past)
        SPEC.replace(f"episodes = {EPISODES}", "episodes = 3").replace(
            f"steps = {STEPS}", "steps = 2000"
        )
    )
    ds = tmp_path / "ds"
    killed: list[int] = []

    def killer() -> None:  # SIGKILL the worker running episode 1 once it is stepping
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not killed:
            attempts = ds / ".attempts"
            for store in attempts.glob("000001-*.zarr") if attempts.exists() else []:
                pid = int(store.name.removesuffix(".zarr").rsplit("-", 1)[1])
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.005)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    args = ["batch", str(spec), "--out", str(ds), "--workers", "1", "--retries", "1", "--json"]
    run = _simrt(args, timeout=300)
    thread.join(5)
    assert run.returncode == 0, run.stderr[-3000:]
    assert killed, "the killer never saw episode 1 stepping"
    summary = json.loads(run.stdout)
    assert (summary["done"], summary["failed"], summary["retried"]) == (3, 0, 1)
    rows = load_dataset(ds).manifest.to_pylist()
    assert [r["attempts"] for r in rows] == [1, 2, 1]
    assert rows[1]["worker_pid"] != killed[0] and rows[1]["status"] == "done"
    assert load_recording(ds / "episodes" / "000001.zarr").complete
    # the same command again does zero episodes
    second = _simrt(args, timeout=120)
    assert second.returncode == 0, second.stderr[-3000:]
    assert (json.loads(second.stdout)["done"], json.loads(second.stdout)["skipped"]) == (0, 3)


def test_a_spec_whose_object_is_no_body_is_refused_before_any_episode(tmp_path: Path) -> None:
    spec = tmp_path / "fail.toml"
    spec.write_text(
        SPEC.replace(f"episodes = {EPISODES}", "episodes = 2").replace(
            'path = "/World/RedBox"', 'path = "/World/Panda"'
        )
    )
    # a spec that cannot work is refused before any episode runs, naming its key (session
    # 14; episodes that fail for a reason a retry may not repeat are retried: see the
    # SIGKILLed worker above)
    with pytest.raises(SimrtError, match=r"randomize.objects\[0\].path: /World/Panda: not a rigid"):
        run_batch(spec, tmp_path / "ds", workers=0, retries=1)
    assert not (tmp_path / "ds").exists()


# ---------------------------------------------------------------------------- replay


def _write_logs(folder: Path, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    names = [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1"]
    rest = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8, 0.02])
    rng = np.random.default_rng(5)
    logs = []
    for k in range(count):
        t = np.arange(25) * 0.01
        amp = rng.uniform(0.05, 0.3, size=8) * np.r_[np.ones(7), 0.0]
        q = rest + amp * np.sin(2 * np.pi * rng.uniform(0.5, 2.0) * t)[:, None]
        columns = {"time": t, **{n: q[:, i] for i, n in enumerate(names)}}
        if k % 5 == 4:
            pq.write_table(pa.table(columns), folder / f"log{k:02d}.parquet")
        else:
            with open(folder / f"log{k:02d}.csv", "w", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(list(columns))
                for i in range(len(t)):
                    writer.writerow([repr(float(columns[c][i])) for c in columns])
        logs.append((t, q))
    return logs


def test_replay_batch_equals_single_playback(tmp_path: Path) -> None:
    from runtime.run.scene import open_scene_stage as _open_stage
    from runtime.sensors.playback import KinematicPlayback
    from runtime.sensors.runtime import SensorRuntime

    logs = _write_logs(tmp_path / "logs", 10)
    spec = parse_spec(
        # (the logs give 8 of the Panda's 9 joints: panda_finger_joint2 held where authored)
        {"replay": {"scene": str(SCENE), "logs": "logs", "imu_mode": "isaac", "missing": "hold"}},
        tmp_path / "replay.toml",
    )
    summary = run_batch(spec, tmp_path / "ds", workers=1, retries=0)
    assert (summary.done, summary.failed) == (10, 0)
    dataset = load_dataset(tmp_path / "ds")
    stage = _open_stage(str(SCENE))
    robot = stage.GetPrimAtPath("/World/Panda")
    for entry, (times, q) in zip(dataset, logs, strict=True):
        recording = entry.load()
        playback = KinematicPlayback(
            stage,
            robot,
            times,
            q,
            [
                f"/World/Panda/Physics/{n}"
                for n in [f"panda_joint{i}" for i in range(1, 8)] + ["panda_finger_joint1"]
            ],
        )
        sensors = SensorRuntime(stage, playback.body_paths, dof_names=playback.joint_names)
        imu = next(s for s in sensors.sensors if s.kind == "imu")
        lidar = next(s for s in sensors.sensors if s.kind == "raycast")
        acc, gyro, depths = [], [], []
        for state in playback.states():
            sensors.step(state)
            acc.append(np.array(imu.reading().linear_acceleration, dtype=np.float64))
            gyro.append(np.array(imu.reading().angular_velocity, dtype=np.float64))
            depths.append(np.array(lidar.reading().depths, dtype=np.float32))
        sensors.close()
        assert len(recording) == len(times)
        assert np.array_equal(recording.field(imu.prim_path, "linear_acceleration"), acc)
        assert np.array_equal(recording.field(imu.prim_path, "angular_velocity"), gyro)
        assert np.array_equal(recording.field(lidar.prim_path, "depths"), depths)
        assert np.array_equal(recording.data["/World/Panda.positions"], q)
        assert np.abs(np.asarray(acc)[1:]).max() > 0.1  # the log moves the IMU


# ---------------------------------------------------------------------------- Ray


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _stop_group(process: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            time.sleep(1.0)  # the group's other processes follow their leader
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_ray_two_node_cluster_equals_local(local_ds: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("ray")
    ray_cli = Path(sys.executable).parent / "ray"
    if not ray_cli.exists():
        pytest.skip("the ray command is not installed beside this Python")
    spec_path, local_path = local_ds
    root = Path(tempfile.mkdtemp(prefix="r13", dir="/tmp"))  # short: Ray's socket paths
    env = _env(
        RAY_AUTH_MODE="token",
        RAY_AUTH_TOKEN=secrets.token_hex(32),
        HOME=str(root),
        RAY_TMPDIR=str(root),
        TMPDIR=str(root),
        RAY_USAGE_STATS_ENABLED="0",
    )
    port = _free_port("127.0.0.2")
    common = ["--num-cpus=1", "--block", "--object-store-memory=200000000"]
    started: list[subprocess.Popen] = []

    def start(args: list[str], log: str) -> None:
        handle = open(root / log, "w")  # noqa: SIM115 - closed with the process
        started.append(
            subprocess.Popen(
                [str(ray_cli), "start", *args, *common],
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped by the test
                preexec_fn=_default_signals,
            )
        )

    try:
        start(
            [
                "--head",
                f"--port={port}",
                "--node-ip-address=127.0.0.2",
                f"--temp-dir={root}/head",
                "--include-dashboard=false",
            ],
            "head.log",
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.2", port), 0.5).close()
                break
            except OSError:
                time.sleep(0.5)
        start(
            [
                f"--address=127.0.0.2:{port}",
                "--node-ip-address=127.0.0.3",
                f"--temp-dir={root}/node",
            ],
            "node.log",
        )
        deadline = time.monotonic() + 120  # the second node joined (both nodes must work)
        while "Ray runtime started" not in (root / "node.log").read_text():
            assert time.monotonic() < deadline, (root / "node.log").read_text()[-2000:]
            time.sleep(0.5)
        out = tmp_path / "ray_ds"
        run = _simrt(
            ["batch", str(spec_path), "--out", str(out), "--ray", f"127.0.0.2:{port}", "--json"],
            timeout=400,
            env=env,
        )
        logs = "".join((root / n).read_text()[-1500:] for n in ("head.log", "node.log"))
        assert run.returncode == 0, run.stderr[-3000:] + logs
        summary = json.loads(run.stdout)
        assert summary["executor"] == "ray" and summary["done"] == EPISODES
        rows = load_dataset(out).manifest.to_pylist()
        nodes = {r["worker_host"].rsplit("@", 1)[1] for r in rows}
        assert nodes == {"127.0.0.2", "127.0.0.3"}, nodes  # both nodes ran episodes
        assert sum(r["reused"] for r in rows) >= EPISODES // 2  # Ray workers keep their cache
        for episode in range(EPISODES):
            name = f"{episode:06d}.zarr"
            _same_recordings(local_path / "episodes" / name, out / "episodes" / name)
    finally:
        for process in reversed(started):
            _stop_group(process)
        shutil.rmtree(root, ignore_errors=True)


def test_local_workers_share_the_cores_between_their_numba_threads(monkeypatch):
    """Each local worker gets cores // workers Numba threads (an explicit setting wins):
    a thread per core in every worker oversubscribes the cores."""
    from runtime.batch import executors

    started = []

    class _Context:
        def get_start_method(self):
            return "spawn"

        def Pipe(self):  # noqa: N802 - multiprocessing's name
            return object(), type("End", (), {"close": lambda self: None})()

        def Process(self, target, args, daemon):  # noqa: N802
            started.append(args[1])
            return type("P", (), {"start": lambda self: None})()

    monkeypatch.setattr(executors, "usable_cores", lambda: 4)
    for workers, threads in ((1, 4), (2, 2), (3, 1), (8, 1)):
        executor = executors.LocalExecutor(workers)
        executor._context = _Context()
        executor._start(executor._slots[0])
        assert started[-1] == threads
    code = (
        "from runtime.batch.executors import _share_cores\n"
        "_share_cores(1)\n"
        "import numba\n"
        "print(numba.config.NUMBA_NUM_THREADS)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    # a worker forked from the fork server has Numba imported with the server's count
    forked = "import numba\nfrom runtime.batch.executors import _share_cores\n_share_cores(1)\n"
    out = subprocess.run(
        [sys.executable, "-c", forked + "print(numba.get_num_threads())"],
        cwd=REPO,
        env={**env, "NUMBA_NUM_THREADS": "2"},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
    for explicit, expected in ((None, "1"), ("2", "2")):
        if explicit is not None:
            env["NUMBA_NUM_THREADS"] = explicit
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected


def test_local_episodes_are_made_durable_by_the_driver_before_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Episodes on this machine skip their own syncs; the driver syncs the dataset's file
    system before every manifest save, so a manifest never names an episode done whose
    store is not on disk (in-process executor, so the calls can be watched)."""
    from runtime.batch import dataset as dataset_module
    from runtime.recording import _disk
    from runtime.recording import store as store_module

    events: list[str] = []
    real_sync, real_save = _disk.make_durable, dataset_module.Dataset.save
    monkeypatch.setattr(store_module, "make_durable", lambda *a: events.append("episode sync"))

    def sync(root, paths):
        events.append("dataset sync")
        real_sync(root, paths)

    def save(self):
        real_save(self)
        events.append("manifest")

    monkeypatch.setattr(_disk, "make_durable", sync)
    monkeypatch.setattr(dataset_module.Dataset, "save", save)
    spec = tmp_path / "d.toml"
    spec.write_text(SPEC.replace(f"episodes = {EPISODES}", "episodes = 3"))
    summary = run_batch(spec, tmp_path / "ds", workers=0)
    assert summary.done == 3
    assert "episode sync" not in events
    # the first save (planning, nothing done yet) comes before the executor exists; every
    # later one is preceded by a sync of the dataset's file system
    later = events[events.index("manifest") + 1 :]
    assert later.count("manifest") >= 1
    assert all(later[i - 1] == "dataset sync" for i, e in enumerate(later) if e == "manifest")
    rows = load_dataset(tmp_path / "ds").manifest.to_pylist()
    assert [r["status"] for r in rows] == ["done"] * 3
    for row in rows:
        assert load_recording(tmp_path / "ds" / row["store"]).complete
