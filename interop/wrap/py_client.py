"""The official Python MCP SDK (stdio_client + ClientSession) through
`portcullis wrap`: initialize, list the tools, call one, abandon a slow call
(the SDK sends notifications/cancelled on its timeout), call again. Prints
one JSON object with what it saw; interop/wrap/check.py judges it."""

import json
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def text_of(result) -> dict:
    data = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    content = data.get("content") or [{}]
    return {"isError": bool(data.get("isError")), "text": content[0].get("text", "")}


async def main(config: dict) -> None:
    out: dict = {"client": "python"}
    server = StdioServerParameters(command=config["command"], args=config["args"], env=config.get("env", {}))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=30) as session:
            await session.initialize()
            listed = await session.list_tools()
            out["tools"] = [tool.name for tool in listed.tools]
            out["call"] = text_of(await session.call_tool(config["tool"], config["arguments"]))
            if config.get("slow_tool"):
                started = time.monotonic()
                try:
                    await session.call_tool(config["slow_tool"], config["slow_arguments"], read_timeout_seconds=1.0)
                    out["cancel"] = "answered"
                except Exception as err:  # the SDK's timeout error
                    out["cancel"] = type(err).__name__
                out["cancel_s"] = round(time.monotonic() - started, 2)
                out["after_cancel"] = text_of(await session.call_tool(config["tool"], config["arguments"]))
    print(json.dumps(out), flush=True)


anyio.run(main, json.loads(sys.argv[1]))
