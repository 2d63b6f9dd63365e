#!/usr/bin/env bash
# Lints the SAM template (template.yaml) with cfn-lint, offline.
#
#   bash infra/lint-template.sh
#
# Installs cfn-lint into the repository's .venv (the one infra/moto.sh uses; created if missing)
# and runs it on template.yaml, informational findings included, then infra/template-timeouts.py
# (every SQS queue's visibility timeout above its consumer function's timeout). Exit 0 only when
# cfn-lint finds nothing at all and every timeout pair passes.
#
# cfn-lint transforms the template with SAM's translator first, so it checks the resources SAM
# generates (functions, roles, the HTTP API) as well as the plain ones. The version is pinned:
# later releases no longer check resources inside SAM's AWS::Serverless::* types.
set -euo pipefail

CFN_LINT_VERSION="1.51.0"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv"

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "cfn-lint: creating $VENV"
    python3 -m venv "$VENV"
fi
installed="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("cfn-lint"))' 2>/dev/null || true)"
if [[ "$installed" != "$CFN_LINT_VERSION" ]]; then
    # moto[server] (infra/moto.sh) asks only for cfn-lint>=0.40, so the pin satisfies both.
    echo "cfn-lint: installing cfn-lint==$CFN_LINT_VERSION${installed:+ (found $installed)}"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "cfn-lint==$CFN_LINT_VERSION"
fi

cd "$ROOT"
# The SAM transform needs a region; nothing is sent anywhere.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
echo "cfn-lint $CFN_LINT_VERSION: template.yaml"
"$VENV/bin/cfn-lint" --include-checks I -- template.yaml
echo "cfn-lint: no findings"
# Every queue hides a received message for longer than its consumer function may run (PyYAML
# comes with cfn-lint); the self-test shows the check fails on a template that breaks it.
"$VENV/bin/python" infra/template-timeouts.py --self-test
"$VENV/bin/python" infra/template-timeouts.py template.yaml
