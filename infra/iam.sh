#!/usr/bin/env bash
# The IAM evaluator of the local AWS stack (infra/iam/evaluate.mjs, over @cloud-copilot/iam-simulate
# pinned in infra/iam/package.json and its package-lock.json): infra/aws_local evaluates every call
# a function makes against its role in template.yaml with it (docs/howto/aws-local.md, "IAM on the
# local stack").
#
#   bash infra/iam.sh        # `npm ci --omit=dev` into infra/iam/node_modules
#
# Idempotent (infra/npm-ci.sh does the work: once per lock file). Needs Node.js 20 or later, npm and
# the npm registry. Exit 3, after saying why, when one is missing or `npm ci` fails: the local stack
# then runs without IAM and says so (its `--iam` is off), and its tests record the skip of the IAM
# checks with that reason (A2A_SKIPPED_LOG; infra/skipped.sh).
exec bash "$(dirname "$0")/npm-ci.sh" iam infra/iam @cloud-copilot/iam-simulate
