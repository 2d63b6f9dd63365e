#!/usr/bin/env bash
# The serverless shape on this machine, as processes: the four function binaries (api, timer,
# submitter, lesson-write), each behind a local Lambda Runtime API, over the moto emulator with
# the resources template.yaml defines, behind a local HTTP API, Scheduler and SQS event sources.
# docs/howto/aws-local.md, "Run the AWS shape locally"; the program is infra/aws_local/.
#
#   bash infra/aws-local.sh [--release] [--no-build] [--config FILE] [--port N] [--moto-port N]
#                           [--log FILE]
#
#   --release      build and run the release binaries (default: debug, as `cargo test` builds)
#   --no-build     run the binaries already in the target folder
#   --config FILE  the watcher's TOML configuration, stored as the configuration secret
#                  (default infra/aws_local/example.toml: the example agent on 127.0.0.1:9999)
#   --port N       the HTTP API's port on 127.0.0.1 (default 3000)
#   --moto-port N  the emulator's port on 127.0.0.1 (default 5010); an emulator already
#                  answering there is used and left running, one started here is stopped at the end
#   --dynamodb-port N
#                  the port of a second emulator, for DynamoDB alone (default: a free port); the
#                  same rule. `--dynamodb-port shared` keeps DynamoDB in the first emulator.
#                  Why two: the emulator serves one request at a time on one core, and a burst of
#                  lapses is mostly DynamoDB requests; on AWS each service scales on its own.
#
#   --visibility-timeout-cap SECONDS
#                  cap every queue's visibility timeout (tests of crashes: a record a dead
#                  instance held comes back after SECONDS, not the template's 6 or 12 minutes),
#                  the submitter's claim on a lapse task (SENDER_LEASE_SECONDS) below it, and
#                  the submitter's timeout below its claim (as on AWS: a live send never
#                  outlasts its claim)
#   --rate-cap SECONDS
#                  fire each sweep duty (every rate() or cron() schedule) at least every SECONDS,
#                  not every 1 or 5 minutes, each cron at its place in the shortened period (tests
#                  of what the sweep does: card re-reads, probes, following)
#   --iam on|off   evaluate every call a function makes against its role in template.yaml
#                  (default: on when node is there; infra/iam.sh installs the evaluator)
#   --log FILE     where the start-up output (the build, the emulators) and every function's
#                  lines go, made afresh each start (default ${CARGO_TARGET_DIR:-target}/aws-local.log);
#                  `--log -` leaves them all on standard output (the tests read them there)
#
# The terminal shows a line a step while it starts, then a banner with the API URL, the tokens,
# the emulator, the log and how to stop, ending with `[aws-local] ready at URL`: the last thing
# it prints until it stops (errors, and the stop, are printed too).
#
# Other options go to the program (python -m aws_local --help). Binaries are read from
# ${CARGO_TARGET_DIR:-target}/{debug,release}. Needs python3 with venv (infra/moto.sh installs
# moto, boto3 and PyYAML into .venv) and cargo unless --no-build. Ctrl-C or SIGTERM stops
# everything it started.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
profile=debug
build=true
moto_port=5010
dynamodb_port=
log_file=
pass=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --release) profile=release ;;
        --log)
            log_file="${2:?--log needs a file, or - for standard output}"
            shift
            ;;
        --no-build) build=false ;;
        --moto-port)
            moto_port="${2:?--moto-port needs a port}"
            shift
            ;;
        --dynamodb-port)
            dynamodb_port="${2:?--dynamodb-port needs a port, or shared}"
            shift
            ;;
        --config)
            # Absolute before the program runs from another folder.
            pass+=("--config" "$(cd "$(dirname "${2:?--config needs a file}")" && pwd)/$(basename "$2")")
            shift
            ;;
        *) pass+=("$1") ;;
    esac
    shift
done

target="${CARGO_TARGET_DIR:-target}"
[[ "$target" = /* ]] || target="$ROOT/$target"
bin_dir="$target/$profile"

# The start-up output and the functions' lines: a file made afresh each start, or stdout (`-`).
[[ -n "$log_file" ]] || log_file="$target/aws-local.log"
if [[ "$log_file" != - ]]; then
    [[ "$log_file" = /* ]] || log_file="$PWD/$log_file"
    mkdir -p "$(dirname "$log_file")"
    : >"$log_file"
fi
# Runs a command with its output in the log (a failure says so and shows the log's end).
quiet() {
    if [[ "$log_file" == - ]]; then
        "$@"
    elif ! "$@" >>"$log_file" 2>&1; then
        echo "aws-local: failed: $*; the end of $log_file:" >&2
        tail -n 20 "$log_file" >&2
        return 1
    fi
}
[[ "$log_file" == - ]] || echo "aws-local: starting; the start-up output and the functions' lines go to $log_file"

if $build; then
    flags=()
    [[ $profile == release ]] && flags+=(--release)
    echo "aws-local: building the function binaries ($profile)"
    (cd "$ROOT" && quiet cargo build "${flags[@]}" -p watcher-fn-api -p watcher-fn-timer \
        -p watcher-fn-submitter -p watcher-fn-lesson-write)
fi

stop_moto=()
answers() {
    python3 -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)" \
        "http://127.0.0.1:$1/moto-api/" >/dev/null 2>&1
}
# An emulator on `$1`: the one answering there, else one started here (and stopped at the end).
emulator_on() {
    if ! answers "$1"; then
        quiet env MOTO_PORT="$1" bash "$ROOT/infra/moto.sh"
        stop_moto+=(--stop-moto-port "$1")
    fi
}
# The IAM evaluator (infra/iam.sh: npm ci, once per lock file). Without it the stack runs with
# IAM off and says so (`--iam on` then fails; `--iam off` skips this).
if [[ " ${pass[*]-} " != *" --iam off "* ]] && ! quiet bash "$ROOT/infra/iam.sh"; then
    echo "aws-local: the IAM evaluator could not be installed (see $log_file); IAM is not enforced"
fi
echo "aws-local: starting the emulators"
emulator_on "$moto_port"
dynamodb=()
if [[ "$dynamodb_port" == shared ]]; then
    :
elif [[ -n "$dynamodb_port" ]]; then
    emulator_on "$dynamodb_port"
else
    # A free port, and an emulator of this run's own there: a port another process took
    # between the choice and the start (or an emulator already there) means another choice.
    for _ in 1 2 3 4 5; do
        dynamodb_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
        if ! answers "$dynamodb_port" && quiet env MOTO_PORT="$dynamodb_port" bash "$ROOT/infra/moto.sh"; then
            stop_moto+=(--stop-moto-port "$dynamodb_port")
            break
        fi
        dynamodb_port=
    done
    [[ -n "$dynamodb_port" ]] || { echo "aws-local: no emulator for DynamoDB could start" >&2; exit 1; }
fi
if [[ "$dynamodb_port" != shared ]]; then
    dynamodb=(--dynamodb-endpoint "http://127.0.0.1:$dynamodb_port")
fi

export PYTHONPATH="$ROOT/infra${PYTHONPATH:+:$PYTHONPATH}"
echo "aws-local: starting the functions, the HTTP API, Scheduler and the queues' event sources"
exec "$ROOT/.venv/bin/python" -u -m aws_local --bin-dir "$bin_dir" --log "$log_file" \
    --endpoint "http://127.0.0.1:$moto_port" "${dynamodb[@]}" "${stop_moto[@]}" "${pass[@]}"
