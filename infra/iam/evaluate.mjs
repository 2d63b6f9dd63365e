// IAM policy evaluation for the local AWS stack (infra/aws_model/iam.py): a long-running
// process that reads one JSON request a line on standard input and writes one JSON answer a
// line on standard output, in the same order.
//
// Request:
//   {"id": any, "principal": "arn:aws:sts::ACCT:assumed-role/ROLE/SESSION",
//    "action": "sqs:SendMessage", "resource": "arn:aws:sqs:REGION:ACCT:QUEUE",
//    "context": {"iam:PassedToService": "scheduler.amazonaws.com", ...},
//    "policies": [{"name": "POLICY", "document": {Version, Statement}}, ...],
//    "resource_policy": {Version, Statement} (optional: a KMS key policy)}
// Answer:
//   {"id": same, "decision": "Allowed" | "ExplicitlyDenied" | "ImplicitlyDenied",
//    "allowed": bool, "statements": [{"policy": NAME, "sid": SID or 1-based index}],
//    "denied_by": [...same shape, the explicit Deny statements]}
//   or {"id": same, "error": "why the request or a policy does not validate"}.
//
// The evaluator is @cloud-copilot/iam-simulate (pinned in package.json): it evaluates identity
// policies (and a resource policy, when given) as IAM's policy evaluation logic does, every
// condition operator included, and validates the action, the resource ARN's type for that
// action and the context keys against AWS's service authorization reference (iam-data).
//
// What it does not model, or this stack does not give it:
// - authentication: no SigV4 signature is checked; the access key id alone names the role
//   (infra/aws_model/iam.py), and no session expires;
// - SCPs, RCPs, permission boundaries and session policies: the template uses none, so none is
//   given (the package models SCPs, RCPs and boundaries; it does not yet model session policies);
// - request context keys are only the ones iam.py fills in (iam:PassedToService for
//   iam:PassRole); global keys such as aws:SourceIp, aws:SecureTransport or aws:PrincipalTag
//   are absent, so a policy conditioned on them would not match here;
// - resource-based policies other than a customer KMS key's (queue, topic and secret policies:
//   the template sets none), and the trust policies of AssumeRole (the stack hands each
//   function its role's credentials without calling STS);
// - what a service itself checks beyond IAM (e.g. that a passed role's trust policy names the
//   service, KMS grants).
import { createInterface } from 'node:readline'
import { runSimulation } from '@cloud-copilot/iam-simulate'

const ACCOUNT_OF = /^arn:[^:]*:[^:]*:[^:]*:(\d{12}):/

function statementsOf(list) {
  return (list || []).map((s) => ({ policy: s.policyId, sid: s.explain?.identifier ?? null }))
}

async function answer(req) {
  const account = (ACCOUNT_OF.exec(req.principal) || [])[1] || '123456789012'
  const resourceAccount = (ACCOUNT_OF.exec(req.resource) || [])[1] || account
  const simulation = {
    identityPolicies: (req.policies || []).map((p) => ({ name: p.name, policy: p.document })),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    request: {
      action: req.action,
      principal: req.principal,
      resource: { accountId: resourceAccount, resource: req.resource },
      contextVariables: req.context || {}
    }
  }
  if (req.resource_policy) simulation.resourcePolicy = req.resource_policy
  const result = await runSimulation(simulation, {})
  if (result.resultType === 'error') {
    return { id: req.id, error: JSON.stringify(result.errors) }
  }
  const single = result.resultType === 'single' ? result.result : result.results?.[0]
  const identity = single?.analysis?.identityAnalysis
  const resource = single?.analysis?.resourceAnalysis
  return {
    id: req.id,
    decision: result.overallResult,
    allowed: result.overallResult === 'Allowed',
    statements: statementsOf(identity?.allowStatements).concat(
      statementsOf(resource?.allowStatements).map((s) => ({ ...s, policy: 'resource-policy' }))
    ),
    denied_by: statementsOf(identity?.denyStatements).concat(
      statementsOf(resource?.denyStatements).map((s) => ({ ...s, policy: 'resource-policy' }))
    )
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const line of lines) {
  if (!line.trim()) continue
  let out
  try {
    out = await answer(JSON.parse(line))
  } catch (e) {
    let id = null
    try {
      id = JSON.parse(line).id ?? null
    } catch {}
    out = { id, error: String(e?.message || e) }
  }
  process.stdout.write(JSON.stringify(out) + '\n')
}
