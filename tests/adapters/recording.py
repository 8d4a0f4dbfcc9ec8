"""`python recording.py LOG COMMAND...`: run an adapter with every line it reads and writes appended to
LOG (`> ` requests, `< ` answers), so that a test can check each message against the protocol's JSON
Schema (docs/adapter-protocol.schema.json)."""

from __future__ import annotations

import subprocess
import sys
import threading


def main() -> int:
    log_path, *command = sys.argv[1:]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    stdin, stdout = child.stdin, child.stdout
    assert stdin is not None
    assert stdout is not None
    lock = threading.Lock()
    with open(log_path, "ab") as log:

        def forward() -> None:
            for line in sys.stdin.buffer:
                with lock:
                    log.write(b"> " + line)
                    log.flush()
                stdin.write(line)
                stdin.flush()
            stdin.close()

        threading.Thread(target=forward, daemon=True).start()
        for line in stdout:
            with lock:
                log.write(b"< " + line)
                log.flush()
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
