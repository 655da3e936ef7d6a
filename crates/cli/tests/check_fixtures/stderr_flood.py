#!/usr/bin/env python3
"""A stdio MCP server that floods stderr, for the tests of `portcullis
check` (stdlib only, no network). Its stdout is always correct.

Usage: stderr_flood.py MODE BYTES

  answers         writes BYTES of log lines to stderr as fast as the pipe
                  takes them, from launch, while it answers every request;
                  once stdin closes it finishes the flood, then exits 0
  crash-after     a quiet, correct server until a frame with a duplicate
                  object key arrives: then it writes BYTES of log lines to
                  stderr and dies of an uncaught exception (a Python
                  traceback, the last thing on stderr), exit status 1
"""

import json
import os
import sys
import threading

MODE = sys.argv[1]
FLOOD_BYTES = int(sys.argv[2])
LOG_LINE = b"debug: handled a tick in 0.01 ms, nothing to report\n"
BLOCK = LOG_LINE * (1024 * 1024 // len(LOG_LINE))


def flood(total):
    written = 0
    while written < total:
        block = BLOCK[: min(len(BLOCK), total - written)]
        while block:
            n = os.write(2, block)
            written += n
            block = block[n:]


def send(message):
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def reject_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        flood(FLOOD_BYTES)
        raise ValueError("duplicate key")
    return dict(pairs)


def result_for(method, params):
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stderr-flood", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": []}
    return {}


def main():
    flooding = None
    if MODE == "answers":
        flooding = threading.Thread(target=flood, args=(FLOOD_BYTES,))
        flooding.start()
    for line in sys.stdin:
        try:
            message = json.loads(line, object_pairs_hook=reject_duplicates)
        except ValueError as error:
            if "duplicate" in str(error):
                raise
            send({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}})
            continue
        if not isinstance(message, dict) or "method" not in message:
            send({"jsonrpc": "2.0", "error": {"code": -32600, "message": "invalid request"}})
            continue
        if "id" not in message:
            continue
        result = result_for(message["method"], message.get("params") or {})
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    if flooding is not None:
        flooding.join()


main()
