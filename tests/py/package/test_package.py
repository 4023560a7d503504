"""imgbatch-client as a package: built from client/ alone, installed into fresh
venvs with the oldest and the newest protobuf runtime it supports, a Job and
a Result round-tripped in each; mypy on the package and on a typed user.

Needs PyPI (pip builds in an isolated environment with the pinned
setuptools and grpcio-tools of client/pyproject.toml). Every version is pinned.
"""
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CLIENT = os.path.join(ROOT, "client")

PIP = "pip==24.3.1"
PROTOBUF_OLDEST = "protobuf==3.20.0"  # the first with google.protobuf.internal.builder
PROTOBUF_NEWEST = "protobuf==7.36.2"  # upb
EXTRAS = ["pillow==12.3.0", "confluent-kafka==2.16.1"]
TYPECHECK = ["mypy==1.20.2", "types-protobuf==7.35.1.20260906"]


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


def venv(path):
    run([sys.executable, "-m", "venv", path])
    py = os.path.join(path, "bin", "python")
    run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", PIP])
    return py


def pip(py, *args):
    return run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args])


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("package")
    # client/ alone, no build tree and no checkout around it (the proto
    # symlink is copied as the file it points to, as an sdist carries it).
    src = tmp / "client"
    shutil.copytree(CLIENT, src, symlinks=False,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "imgbatch_pb2.py*"))
    return tmp, str(src)


@pytest.fixture(scope="module")
def wheel(work):
    tmp, src = work
    out = tmp / "dist"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
         "-w", str(out), src])
    (whl,) = out.glob("imgbatch_client-*.whl")
    return str(whl)


ROUND_TRIP = textwrap.dedent('''
    import io, sys
    import google.protobuf
    from google.protobuf.internal import api_implementation
    import imgbatch
    assert "site-packages" in imgbatch.__file__, imgbatch.__file__
    P = imgbatch.pb()
    job = P.Job(key_string="a.png", contract_version=imgbatch.CONTRACT_VERSION, correlation_id="c")
    job.source.fill.mode, job.source.fill.width, job.source.fill.height = "L", 2, 1
    job.source.fill.color = b"\\x07"
    job.nodes.add().source.index = 0
    n = job.nodes.add()
    n.inputs.append(0)
    n.gaussian_blur.radius_x = n.gaussian_blur.radius_y = 2.0
    job.output.cpu.format = P.PNG
    job.metadata["m"].map_value.entries["k"].list_value.items.add().uint_value = 2 ** 64 - 1
    data = job.SerializeToString()
    back = P.Job.FromString(data)
    assert back == job and back.contract_version == 3 and back.WhichOneof("input_key") == "key_string"
    if "PIL" in sys.argv:
        from imgbatch import Image, ImageFilter
        lazy = Image.new("L", (2, 1), 7).filter(ImageFilter.GaussianBlur(2))
        rec = P.Job.FromString(lazy.to_job(key="a.png", output="png"))
        # Nothing of contract 3 in it (no draft, metadata policy or renditions).
        assert rec.contract_version == 2 and list(rec.nodes) == list(job.nodes), rec
        assert lazy.replay().size == (2, 1)
    else:
        try:
            imgbatch.Image
        except ImportError as e:
            assert "PIL" in str(e), e
        else:
            raise AssertionError("imgbatch.Image imported without Pillow")
    res = P.Result(job_id=5, worker_id="w", key_string="a.png", correlation_id="c",
                   contract_version=imgbatch.CONTRACT_VERSION)
    res.source.topic, res.source.partition, res.source.offset = "imgbatch.jobs", 3, 2 ** 40
    res.file.path, res.file.mode, res.file.width, res.file.height = "imgbatch.jobs-3-1.png", "L", 2, 1
    res.file.format, res.file.size, res.file.worker_id = P.PNG, 99, "w"
    res.timings.gpu_us = 12
    buf = io.BytesIO()
    imgbatch.write_delimited(buf, [res, res.SerializeToString()])
    buf.seek(0)
    a, b = imgbatch.read_results(buf)
    assert a == b and a.raw == res.SerializeToString()
    assert (a.job_id, a.input_key, a.source, a.correlation_id, a.contract_version) == \\
        (5, "a.png", ("imgbatch.jobs", 3, 2 ** 40), "c", 3)
    assert a.file == imgbatch.ImageFile("imgbatch.jobs-3-1.png", "L", 2, 1, "png", 99, "w")
    assert a.timings["gpu_us"] == 12 and a.ok
    print(google.protobuf.__version__, api_implementation.Type())
''')


def test_pip_install_of_client_dir_with_the_oldest_protobuf(work):
    tmp, src = work
    py = venv(str(tmp / "oldest"))
    pip(py, PROTOBUF_OLDEST, src)  # pip builds ./client itself: no protoc, no CMake
    out = run([py, "-c", ROUND_TRIP], cwd=str(tmp))
    assert out.split()[0] == "3.20.0"


def test_wheel_with_the_newest_protobuf_and_the_extras(work, wheel):
    tmp, _ = work
    py = venv(str(tmp / "newest"))
    pip(py, PROTOBUF_NEWEST, *EXTRAS, wheel + "[kafka,pillow]")
    out = run([py, "-W", "error", "-c", ROUND_TRIP, "PIL"], cwd=str(tmp))
    assert out.split() == ["7.36.2", "upb"]
    # the Producer/ResultReader import path with the kafka extra
    run([py, "-c", "import imgbatch; imgbatch.Producer; imgbatch.ResultReader"], cwd=str(tmp))


def test_wheel_contents_and_version(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for n in ("imgbatch/__init__.py", "imgbatch/imgbatch_pb2.py", "imgbatch/imgbatch_pb2.pyi",
              "imgbatch/py.typed", "imgbatch/_kafka.py", "imgbatch/__main__.py"):
        assert n in names, n
    code = zipfile.ZipFile(wheel).read("imgbatch/imgbatch_pb2.py").decode()
    assert "runtime_version" not in code  # the guard that would refuse older runtimes
    header = open(os.path.join(ROOT, "worker", "include", "imgbatch.h")).read()
    contract = int(re.search(r"#define IB_CONTRACT_VERSION (\d+)u?", header).group(1))
    version = re.search(r"imgbatch_client-([0-9.]+)-py3-none-any\.whl$", wheel).group(1)
    assert int(version.split(".")[0]) == contract
    init = zipfile.ZipFile(wheel).read("imgbatch/__init__.py").decode()
    assert f'__version__ = "{version}"' in init
    proto = zipfile.ZipFile(wheel).read("imgbatch/_proto.py").decode()
    assert f"CONTRACT_VERSION = {contract}\n" in proto


def test_proto_inside_client_is_the_contract():
    with open(os.path.join(CLIENT, "proto", "imgbatch.proto"), "rb") as a, \
            open(os.path.join(ROOT, "proto", "imgbatch.proto"), "rb") as b:
        assert a.read() == b.read()


def test_generated_module_is_not_committed():
    if not os.path.isdir(os.path.join(ROOT, ".git")) and not os.path.isfile(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    out = run(["git", "-C", ROOT, "ls-files", "client/imgbatch/imgbatch_pb2.py", "client/imgbatch/imgbatch_pb2.pyi"])
    assert out == ""


def test_mypy_on_the_package_and_on_a_typed_user(work, wheel):
    tmp, src = work
    py = os.path.join(str(tmp / "newest"), "bin", "python")
    if not os.path.exists(py):
        py = venv(str(tmp / "newest"))
        pip(py, PROTOBUF_NEWEST, *EXTRAS, wheel + "[kafka,pillow]")
    pip(py, *TYPECHECK)
    unpacked = tmp / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    run([py, "-m", "mypy", "--config-file", os.path.join(src, "pyproject.toml"), "-p", "imgbatch"],
        cwd=str(unpacked))
    user = tmp / "user.py"
    user.write_text(textwrap.dedent('''
        from typing import List, Optional
        import imgbatch
        from imgbatch import Image, ImageChops, ImageEnhance, ImageFilter, ImageOps, Result

        im = ImageOps.invert(Image.open("a.png").filter(ImageFilter.GaussianBlur(2)))
        im = im.transpose(Image.Transpose.ROTATE_90).transpose(Image.FLIP_LEFT_RIGHT)
        im = im.resize((4, 4), Image.Resampling.NEAREST).filter(ImageFilter.SHARPEN)
        im = ImageEnhance.Contrast(ImageChops.add(im, im.copy(), 2.0, 1)).enhance(1.2)
        with imgbatch.unchecked():
            im = Image.blend(im, im, 0.5)
        job: bytes = im.to_job(key="a.png", output="png")
        mode: str = im.mode
        def keys(rs: List[Result]) -> List[Optional[str]]:
            return [r.error.message if r.error else None for r in rs]
        with imgbatch.Producer("localhost:9092") as p:
            p.send(job)
            coords = [d.coordinates for d in p.flush()]
        version: int = imgbatch.CONTRACT_VERSION
    '''))
    # mypy reads the installed package through its py.typed marker
    run([py, "-m", "mypy", "--strict", "--ignore-missing-imports", str(user)], cwd=str(tmp))
    bad = tmp / "bad.py"
    bad.write_text("import imgbatch\nx: str = imgbatch.CONTRACT_VERSION\n")
    p = subprocess.run([py, "-m", "mypy", str(bad)], capture_output=True, text=True, cwd=str(tmp))
    assert p.returncode == 1 and "Incompatible types in assignment" in p.stdout, p.stdout
