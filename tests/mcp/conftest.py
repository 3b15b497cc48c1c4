"""Fixtures for the MCP tests: the server object over the test API server, and an in-memory SDK client."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="kubegap[mcp] is not installed")

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from mcp import Client  # noqa: E402
from mcp.server import MCPServer  # noqa: E402

from kubegap.config import Settings  # noqa: E402
from kubegap.mcp import server  # noqa: E402
from kubegap.mcp.cluster import Connection, Target  # noqa: E402
from kubegap.mcp.tools import Toolbox  # noqa: E402
from tests.support.apiserver import ApiServer  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def apiserver() -> Iterator[ApiServer]:
    with ApiServer() as api:
        yield api


@pytest.fixture
def kubeconfig(apiserver: ApiServer, tmp_path: Path) -> Path:
    return apiserver.kubeconfig(tmp_path / "kubeconfig")


ToolboxFactory = Callable[..., Toolbox]


@pytest.fixture
def make_toolbox(kubeconfig: Path) -> Iterator[ToolboxFactory]:
    made: list[Toolbox] = []

    def make(require_read_only: bool = False, page_size: int = 500) -> Toolbox:
        target = Target(str(kubeconfig), None, "default")
        toolbox = Toolbox(Settings(), Connection(target, require_read_only, 10.0), page_size)
        made.append(toolbox)
        return toolbox

    yield make
    for toolbox in made:
        toolbox.close()


@pytest.fixture
def mcp_server(make_toolbox: ToolboxFactory) -> MCPServer:
    return server.build(make_toolbox())


@pytest.fixture
async def client(mcp_server: MCPServer) -> AsyncIterator[Client]:
    async with Client(mcp_server) as connected:
        yield connected
