"""Builds the package with the gRPC stubs of tavli.v1 generated from the .proto.

`build_py` runs grpcio-tools' protoc on proto/tavli/v1/engine.proto (found two
directories up, in this repository, or in $TAVLI_PROTO_DIR) and writes the modules
`tavli.v1.engine_pb2` and `tavli.v1.engine_pb2_grpc` (and .pyi type stubs) into the
build, beside `tavli_client`, and copies the gRPC service config
deploy/grpc-service-config.json (found the same way, or $TAVLI_SERVICE_CONFIG) into
`tavli_client/service_config.json` (`tavli_client.channel`). The runtime
requirements are the grpcio and protobuf versions of the grpcio-tools that generated
them. Everything else is in pyproject.toml.
"""

import json
import os
import pathlib
import shutil
from importlib.metadata import version

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
PROTO_FILE = "tavli/v1/engine.proto"
SERVICE_CONFIG = "deploy/grpc-service-config.json"


def proto_dir():
    candidates = [os.environ.get("TAVLI_PROTO_DIR"), HERE.parent.parent / "proto"]
    for c in candidates:
        if c and (pathlib.Path(c) / PROTO_FILE).is_file():
            return pathlib.Path(c)
    raise SystemExit(
        f"cannot find {PROTO_FILE}: build from the tavli-engine repository "
        "(clients/python) or set TAVLI_PROTO_DIR to its proto/ directory"
    )


def service_config():
    candidates = [os.environ.get("TAVLI_SERVICE_CONFIG"), HERE.parent.parent / SERVICE_CONFIG]
    for c in candidates:
        if c and pathlib.Path(c).is_file():
            return pathlib.Path(c)
    raise SystemExit(
        f"cannot find {SERVICE_CONFIG}: build from the tavli-engine repository "
        "(clients/python) or set TAVLI_SERVICE_CONFIG to that file"
    )


class BuildWithStubs(build_py):
    """build_py, then the generated stubs and the service config into the build
    directory."""

    def run(self):
        super().run()
        from grpc_tools import protoc
        import grpc_tools

        out = pathlib.Path(self.build_lib)
        (out / "tavli" / "v1").mkdir(parents=True, exist_ok=True)
        include = pathlib.Path(grpc_tools.__file__).parent / "_proto"
        args = [
            "grpc_tools.protoc",
            f"-I{proto_dir()}",
            f"-I{include}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            PROTO_FILE,
        ]
        if protoc.main(args) != 0:
            raise SystemExit("grpc_tools.protoc failed on " + PROTO_FILE)
        for pkg in (out / "tavli", out / "tavli" / "v1"):
            (pkg / "__init__.py").touch()
        config = service_config()
        json.loads(config.read_text())  # refuse to ship a broken file
        shutil.copyfile(config, out / "tavli_client" / "service_config.json")


def requirements():
    """grpcio and protobuf no older than those of the generating grpcio-tools."""
    tools = version("grpcio-tools")
    protobuf = version("protobuf")
    major = int(protobuf.split(".")[0])
    return [f"grpcio>={tools},<2", f"protobuf>={protobuf},<{major + 1}"]


setup(cmdclass={"build_py": BuildWithStubs}, install_requires=requirements())
