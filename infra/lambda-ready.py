#!/usr/bin/env python3
"""Start-to-ready time and size of the Lambda functions' release binaries (issue 10, item 6).

    cargo build --release -p watcher-fn-api -p watcher-fn-timer -p watcher-fn-submitter \
        -p watcher-fn-lesson-write
    MOTO_PORT=5005 bash infra/moto.sh
    .venv/bin/python infra/lambda-ready.py --bin-dir target/release [--runs 20] [--json]

For each function binary (api, timer, submitter, lesson-write) it runs the binary `--runs` times
as Lambda would on a cold start: with `AWS_LAMBDA_RUNTIME_API` pointing at a stand-in for the
Lambda Runtime API (a small HTTP server on 127.0.0.1 here), and measures from just before the
exec to the arrival of the binary's first `GET /2018-06-01/runtime/invocation/next`: everything
the function does before it can take an invocation (SDK configuration, reading the configuration
secret from Secrets Manager, building its clients and store). The request is never answered; the
process is killed and the next run starts. It prints the median, minimum and maximum of each, and
the binary's size in bytes.

Secrets Manager is moto at `AWS_ENDPOINT_URL` (default http://127.0.0.1:${MOTO_PORT:-5005}): the
script creates the configuration secret there. So the figure includes one GetSecretValue round
trip to a local emulator, not to AWS; see docs/performance.md for what that means on AWS.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3

FUNCTIONS = ["api", "timer", "submitter", "lesson-write"]
NEXT = "/2018-06-01/runtime/invocation/next"
SECRET_ID = "lambda-ready-config"
# A deployment with an operator and no agent: no card to read at cold start.
CONFIG_TOML = '[[operators]]\nid = "ops"\ntoken = "ops-token-lambda-ready"\n'


class RuntimeApi(ThreadingHTTPServer):
    """The stand-in: records when the first `invocation/next` arrives, and never answers it."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.first_next = None
        self.arrived = threading.Event()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == NEXT and not self.server.arrived.is_set():
            self.server.first_next = time.perf_counter()
            self.server.arrived.set()
        # Hold the long poll open, as the Runtime API does with no invocation waiting.
        time.sleep(30)

    def log_message(self, *args):
        pass


def environment(endpoint, runtime_api):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AWS_LAMBDA_RUNTIME_API": runtime_api,
        "AWS_LAMBDA_FUNCTION_NAME": "lambda-ready",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_ENDPOINT_URL": endpoint,
        "WATCHER_CONFIG_SECRET_ID": SECRET_ID,
        # The functions' other settings, as template.yaml gives them (names only).
        "TABLE_NAME": "watcher",
        "QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/watcher-lapses.fifo",
        "TIMER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/watcher-timers",
        "SCHEDULE_GROUP": "watcher-timers",
        "TIMER_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:watcher-timer",
        "SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/watcher-scheduler",
        "SCHEDULER_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:watcher-scheduler-dlq",
        "DEFINITIONS_TABLE_NAME": "definitions",
        "RUST_LOG": "error",
    }
    return env


def one_run(binary, endpoint):
    server = RuntimeApi()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    runtime_api = f"127.0.0.1:{server.server_address[1]}"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [binary],
        env=environment(endpoint, runtime_api),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        if not server.arrived.wait(timeout=20):
            proc.kill()
            _, err = proc.communicate()
            raise RuntimeError(
                f"{binary} never asked for an invocation within 20 s: {err.decode(errors='replace')[-2000:]}"
            )
        return (server.first_next - started) * 1000.0
    finally:
        proc.kill()
        proc.wait()
        server.shutdown()
        server.server_close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", default="target/release")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="also print one JSON line")
    args = parser.parse_args()
    endpoint = os.environ.get(
        "AWS_ENDPOINT_URL", f"http://127.0.0.1:{os.environ.get('MOTO_PORT', '5005')}"
    )
    sm = boto3.client(
        "secretsmanager",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    try:
        sm.create_secret(Name=SECRET_ID, SecretString=CONFIG_TOML)
    except sm.exceptions.ResourceExistsException:
        sm.put_secret_value(SecretId=SECRET_ID, SecretString=CONFIG_TOML)

    results = {}
    print(f"{'function':<14}{'median ms':>10}{'min ms':>9}{'max ms':>9}{'size MB':>9}  target: <= 30 ms, <= 15 MB")
    for name in FUNCTIONS:
        binary = os.path.join(args.bin_dir, name)
        if not os.path.exists(binary):
            print(f"{name:<14}missing: {binary}", file=sys.stderr)
            sys.exit(1)
        size = os.path.getsize(binary)
        one_run(binary, endpoint)  # warm the page cache: Lambda's image is local too
        times = [one_run(binary, endpoint) for _ in range(args.runs)]
        results[name] = {
            "startToReadyMsMedian": round(statistics.median(times), 2),
            "startToReadyMsMin": round(min(times), 2),
            "startToReadyMsMax": round(max(times), 2),
            "binaryBytes": size,
            "runs": args.runs,
        }
        r = results[name]
        print(
            f"{name:<14}{r['startToReadyMsMedian']:>10.2f}{r['startToReadyMsMin']:>9.2f}"
            f"{r['startToReadyMsMax']:>9.2f}{size / 1e6:>9.2f}"
        )
    if args.json:
        print(json.dumps({"lambda": results}))


if __name__ == "__main__":
    main()
