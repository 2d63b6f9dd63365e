"""The kit's `WatcherClient` as a command, for tests/kits_python.rs: each call prints the typed
answer back as JSON (`to_dict`) on one line, so the test compares it with what the watcher holds.

    e2e_client.py WATCHER TOKEN fact FACT_KEY SUBJECT_TYPE SUBJECT_ID
    e2e_client.py WATCHER TOKEN lapses AGENT
    e2e_client.py WATCHER TOKEN subject SUBJECT_TYPE SUBJECT_ID
    e2e_client.py WATCHER TOKEN retry AGENT MESSAGE_ID
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

from a2a_watcher_kit import Fact, Subject, WatcherClient, utc


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    client = WatcherClient(argv[0], argv[1])
    command, args = argv[2], argv[3:]
    out: object
    if command == "fact":
        fact = Fact(fact_key=args[0], observed_at=utc(datetime.now(timezone.utc)),
                    subject=Subject(type=args[1], id=args[2]))
        out = client.report_fact(fact).to_dict()
    elif command == "lapses":
        out = [lv.to_dict() for lv in client.iter_lapses(agent=args[0])]
    elif command == "subject":
        out = [r.to_dict() for r in client.expectations_on(args[0], args[1])]
    elif command == "retry":
        out = client.retry(args[0], [args[1]]).to_dict()
    else:
        print(f"unknown command {command!r}\n{__doc__}", file=sys.stderr)
        return 2
    print(json.dumps(out, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
