"""The serverless shape, runnable locally as processes: `bash infra/aws-local.sh`.

The function binaries run as they do on Lambda, each its own process behind a local Lambda
Runtime API; the resources are made in the moto emulator from `template.yaml`; and what the
emulator stores but never runs (API Gateway's HTTP API, EventBridge Scheduler's firing, the SQS
event source mappings) is stood in for here.

Written in Python rather than Rust: it drives moto, which is Python, through boto3 (which moto
brings along in `.venv`), reads the template with PyYAML (likewise), and needs only the
standard library's HTTP server and subprocess; the Rust binaries under test stay exactly the
ones deployed, with nothing linked in for local use.
"""
