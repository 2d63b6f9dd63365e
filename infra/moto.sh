#!/usr/bin/env bash
# A local AWS emulator (moto) for the DynamoDB store's tests.
#
#   bash infra/moto.sh          # install moto into .venv if needed, start it, wait until it answers
#   bash infra/moto.sh stop     # stop the server this script started, and remove its log
#
# Idempotent: a server already answering on the port is left running. Binds only 127.0.0.1.
# The port is ${MOTO_PORT:-5005}; the tests read the endpoint from AWS_ENDPOINT_URL:
#
#   export AWS_ENDPOINT_URL=http://127.0.0.1:${MOTO_PORT:-5005}
#   export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
#
# moto keeps everything in memory: stopping it forgets every table.
#
# The server is moto_server's own (moto.server.main: the same application, request handler and
# -H/-p options), run by infra/moto_server.py with changes, each described above it there.
# First, requests are served one at a time. moto_server serves each request on its own thread without locking its backends, so
# two concurrent conditional writes (two UpdateItem ADDs on one counter, two TransactWriteItems
# on one item) can both pass their check and one update is lost. DynamoDB never does that, and
# the store's concurrency tests would fail on the emulator rather than on the store. The server
# stays threaded (HTTP/1.1 connections are kept, which werkzeug alone would close); a lock around the application makes each request
# atomic. Second, TransactWriteItems keeps a journal of the items it names for its rollback,
# where moto copies every table it touches: that copy made each transaction cost in proportion
# to the table's size (300 ms at a few thousand items), so the emulator, not the deployment,
# set the pace of every measurement on it. The transaction's checks, writes and cancellation
# reasons are moto's. Third, a Query is handed only the items of the partition it asks for (of
# the table, or of an index, from a grouping kept until the next write), where moto lists every
# item of the table for each Query: seconds a request at 100,000 items. Sorting, paging,
# conditions and filters are moto's. Among the others: a TransactWriteItems sent again with the
# ClientRequestToken of one that succeeded is answered as that success and not applied twice,
# as DynamoDB does (the SDK sends the same token when it retries).
set -euo pipefail

# The exact version the store's tests were checked against (DynamoDB conditions, transactions
# with cancellation reasons, GSIs and TTL settings behave as on AWS).
MOTO_VERSION="5.2.5"
AIOSMTPD_VERSION="1.4.6"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv"
PORT="${MOTO_PORT:-5005}"
# One pid file and log per port: servers on two ports (the test suite's, infra/aws-local.sh's)
# are started and stopped independently.
PID_FILE="$VENV/moto-$PORT.pid"
LOG_FILE="$VENV/moto-$PORT.log"
URL="http://127.0.0.1:$PORT"

# moto answers GET /moto-api/ once it serves requests.
answers() {
    python3 - "$URL" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/moto-api/", timeout=1).read()
EOF
}

running_pid() {
    [[ -f "$PID_FILE" ]] || return 1
    local pid
    pid="$(cat "$PID_FILE")"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

stop() {
    local pid
    if pid="$(running_pid)"; then
        kill "$pid"
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            # Still exiting after 5 s: a server holding millions of items (the scale runs)
            # takes minutes to free them one by one. It keeps nothing worth the wait.
            kill -9 "$pid" 2>/dev/null || true
            echo "moto: killed (pid $pid), still exiting 5 s after SIGTERM"
        else
            echo "moto: stopped (pid $pid)"
        fi
        # Its log goes with it: infra/aws-local.sh starts an emulator on a free port each run,
        # and one log per port would pile up in .venv. A server that died keeps its log.
        rm -f "$LOG_FILE"
    else
        echo "moto: not running (no live pid in $PID_FILE)"
    fi
    rm -f "$PID_FILE"
}

install() {
    if [[ ! -x "$VENV/bin/python" ]]; then
        echo "moto: creating $VENV"
        python3 -m venv "$VENV"
    fi
    if ! "$VENV/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; then
        echo "moto: installing moto[server]==$MOTO_VERSION"
        "$VENV/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
    fi
    # The local SMTP server of the email channel's tests (infra/smtp_sink.py), in the same venv.
    if ! "$VENV/bin/python" -c "import aiosmtpd, sys; sys.exit(aiosmtpd.__version__ != '$AIOSMTPD_VERSION')" 2>/dev/null; then
        echo "moto: installing aiosmtpd==$AIOSMTPD_VERSION (the email channel's test server)"
        "$VENV/bin/pip" install --quiet --disable-pip-version-check "aiosmtpd==$AIOSMTPD_VERSION"
    fi
}

start() {
    install
    if answers; then
        echo "moto: already answering at $URL"
        return 0
    fi
    echo "moto: starting at $URL (log: $LOG_FILE)"
    PYTHONPATH="$ROOT/infra${PYTHONPATH:+:$PYTHONPATH}" nohup "$VENV/bin/python" -m moto_server -H 127.0.0.1 -p "$PORT" >"$LOG_FILE" 2>&1 &
    echo $! >"$PID_FILE"
    # Deadline poll rather than a fixed sleep: up to 30 s for a cold start.
    for _ in $(seq 1 300); do
        if answers; then
            echo "moto: ready (pid $(cat "$PID_FILE"))"
            return 0
        fi
        if ! running_pid >/dev/null; then
            echo "moto: exited during start; its log:" >&2
            cat "$LOG_FILE" >&2
            rm -f "$PID_FILE"
            return 1
        fi
        sleep 0.1
    done
    echo "moto: no answer at $URL after 30 s; its log:" >&2
    cat "$LOG_FILE" >&2
    return 1
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    *)
        echo "usage: bash infra/moto.sh [start|stop]" >&2
        exit 2
        ;;
esac
