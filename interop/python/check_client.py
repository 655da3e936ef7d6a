"""Driver for the official Python MCP SDK (`mcp` on PyPI).

    check_client.py CONFIG               # stdio_client + ClientSession (initialize)
    check_client.py --high-level CONFIG  # mcp.Client, default mode "auto": probes
                                         # server/discover first, falls back to initialize

Run by interop/check.py with its config file; prints what the client saw as
JSON lines on stdout. The check judges them.
"""

from __future__ import annotations

import json
import sys
import time
from importlib.metadata import version

import anyio
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# The SDK has no default request timeout; check.py bounds the whole run at
# 30 s, and this makes a hung step a reported failure rather than a kill.
STEP_TIMEOUT_S = 20.0


def emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def dump(model: object) -> dict:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)  # type: ignore[attr-defined]


async def main(config: dict) -> None:
    emit(event="client", name="mcp", version=version("mcp"))
    server = StdioServerParameters(
        command=config["server"]["command"],
        args=config["server"]["args"],
        # Merged over the SDK's default environment (HOME LOGNAME PATH SHELL TERM USER).
        env=config["env"],
    )
    step = "initialize"
    try:
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=STEP_TIMEOUT_S) as session:
                result = await session.initialize()
                emit(
                    event="initialized",
                    protocolVersion=session.protocol_version or result.protocol_version,
                    serverInfo=dump(result.server_info),
                )
                step = "tools/list"
                listed = await session.list_tools()
                emit(event="tools", tools=[dump(tool) for tool in listed.tools])
                step = "bad call"
                try:
                    bad = await session.call_tool(config["tool"], config["bad_arguments"])
                    emit(event="bad_call", result=dump(bad))
                except Exception as err:  # the check reports what the client raised
                    emit(event="bad_call", error=f"{type(err).__name__}: {err}")
                step = "good call"
                try:
                    good = await session.call_tool(config["tool"], config["good_arguments"])
                    emit(event="good_call", result=dump(good))
                except Exception as err:
                    emit(event="good_call", error=f"{type(err).__name__}: {err}")
            step = "close"
            closing = time.time()
        # Leaving stdio_client closed the server's stdin and waited for it to exit.
        emit(event="closed", at=closing, returned_at=time.time())
    except BaseException as err:  # noqa: BLE001 (anyio wraps failures in groups)
        emit(event="fatal", step=step, error=f"{type(err).__name__}: {err}")
        raise SystemExit(1) from None


async def main_high_level(config: dict) -> None:
    emit(event="client", name="mcp", version=version("mcp"))
    server = StdioServerParameters(
        command=config["server"]["command"], args=config["server"]["args"], env=config["env"]
    )
    step = "initialize"
    try:
        async with Client(server, read_timeout_seconds=STEP_TIMEOUT_S) as client:
            emit(
                event="initialized",
                protocolVersion=client.protocol_version,
                serverInfo=dump(client.server_info) if client.server_info else None,
            )
            step = "tools/list"
            listed = await client.list_tools()
            emit(event="tools", tools=[dump(tool) for tool in listed.tools])
            step = "bad call"
            try:
                emit(event="bad_call", result=dump(await client.call_tool(config["tool"], config["bad_arguments"])))
            except Exception as err:
                emit(event="bad_call", error=f"{type(err).__name__}: {err}")
            step = "good call"
            try:
                emit(event="good_call", result=dump(await client.call_tool(config["tool"], config["good_arguments"])))
            except Exception as err:
                emit(event="good_call", error=f"{type(err).__name__}: {err}")
            step = "close"
            closing = time.time()
        emit(event="closed", at=closing, returned_at=time.time())
    except BaseException as err:  # noqa: BLE001
        emit(event="fatal", step=step, error=f"{type(err).__name__}: {err}")
        raise SystemExit(1) from None


if __name__ == "__main__":
    HIGH_LEVEL = sys.argv[1] == "--high-level"
    with open(sys.argv[-1]) as config_file:
        CONFIG = json.load(config_file)
    anyio.run(main_high_level if HIGH_LEVEL else main, CONFIG)
