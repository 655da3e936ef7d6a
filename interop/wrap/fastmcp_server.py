"""A FastMCP server for the `portcullis wrap` interop checks: `echo`
(its description from $ECHO_DESCRIPTION, so a check can change the tool
between two runs) and `sleep` (for cancellation)."""

import asyncio
import os

from fastmcp import FastMCP

server = FastMCP("wrap-interop-fastmcp")


@server.tool(description=os.environ.get("ECHO_DESCRIPTION", "Echo the message back"))
def echo(message: str) -> str:
    return message


@server.tool(description="Sleep for the given number of seconds")
async def sleep(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "slept"


if __name__ == "__main__":
    server.run()
