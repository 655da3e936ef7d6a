#!/usr/bin/env python3
"""Run `portcullis mcp` as a client's stdio server and record how it ended.

    serverwatch.py RECORD -- /path/to/portcullis mcp --policy FILE

Every client under test launches the gateway through this wrapper, because no
client reports its server's exit status, and the checks need it: after the
client closes the gateway's stdin, the gateway must exit 0 within 2 s on its
own (clients send SIGTERM only when it does not).

stdin is inherited, not proxied: the gateway reads the client's pipe itself,
and the wrapper only polls its own copy of the read end for POLLHUP to learn
when the client closed it. stdout is relayed byte for byte (the wrapper never
writes anything of its own there), so the wrapper can read the
`protocolVersion` the gateway answered `initialize` with: the Inspector CLI
does not print the revision it negotiated, and for the other clients it is a
cross-check of what they report. stderr is inherited.

One JSON line is appended to RECORD per run (O_APPEND, one write), so the
Inspector CLI's several sessions can share a file. RECORD.pids gets the
wrapper's and the gateway's pids at start, so the check can end a gateway its
client left running (clients start servers in their own sessions, out of
reach of the check's process-group kill).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time


def watch_hangup(seen: dict, hung_up: threading.Event) -> None:
    poller = select.poll()
    # With no events requested, poll still reports POLLHUP (and POLLERR):
    # the client closed its end, whether or not the gateway has read
    # everything it wrote.
    poller.register(0, 0)
    while True:
        for _fd, _events in poller.poll():
            seen["stdin_closed_at"] = time.time()
            hung_up.set()
            return


def sniff(line: bytes, seen: dict) -> None:
    if "initialize_protocol_version" in seen:
        return
    try:
        message = json.loads(line)
    except ValueError:
        return
    result = message.get("result") if isinstance(message, dict) else None
    if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
        seen["initialize_protocol_version"] = result["protocolVersion"]
    elif isinstance(result, dict) and isinstance(result.get("supportedVersions"), list):
        seen.setdefault("discover_supported_versions", result["supportedVersions"])


def relay_stdout(source: int, seen: dict) -> None:
    pending = b""
    sink_ok = True
    while True:
        try:
            chunk = os.read(source, 65536)
        except OSError:
            break
        if not chunk:
            break
        if sink_ok:
            try:
                view = memoryview(chunk)
                while view:
                    written = os.write(1, view)
                    view = view[written:]
            except OSError:
                # The client went away: close our read end so the gateway
                # meets the same broken pipe it would have met unwrapped.
                sink_ok = False
                seen["stdout_broken"] = True
                break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            sniff(line, seen)
        if len(pending) > 1 << 20:
            pending = b""
    os.close(source)


def append(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.stderr.write(__doc__ or "")
        return 2
    record_path, command = sys.argv[1], sys.argv[3:]
    seen: dict = {"stdin_closed_at": None}
    signals: list[str] = []
    started_at = time.time()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdout is not None
    source = os.dup(child.stdout.fileno())
    child.stdout.close()
    append(record_path + ".pids", f"{os.getpid()} {child.pid}\n")

    def forward(signum: int, _frame: object) -> None:
        signals.append(signal.Signals(signum).name)
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    hung_up = threading.Event()
    threading.Thread(target=watch_hangup, args=(seen, hung_up), daemon=True).start()
    relay = threading.Thread(target=relay_stdout, args=(source, seen), daemon=True)
    relay.start()
    code = child.wait()
    exited_at = time.time()
    relay.join(timeout=2)
    # The gateway exits on the same hangup the watcher waits for; give the
    # watcher a moment to note it rather than report "never closed".
    hung_up.wait(timeout=0.2)
    closed_at = seen["stdin_closed_at"]
    record = {
        "pid": child.pid,
        "command": os.path.basename(command[0]),
        "code": code,
        "started_at": started_at,
        "stdin_closed_at": closed_at,
        "exited_at": exited_at,
        # The watcher thread may note the hangup a few ms after the gateway,
        # woken by the same close, has exited.
        "exit_after_stdin_closed_s": None if closed_at is None else round(max(0.0, exited_at - closed_at), 3),
        "signals": signals,
        "initialize_protocol_version": seen.get("initialize_protocol_version"),
        "discover_supported_versions": seen.get("discover_supported_versions"),
        "stdout_broken": seen.get("stdout_broken", False),
    }
    append(record_path, json.dumps(record) + "\n")
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
