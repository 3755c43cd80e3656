"""`make check-deploy`: what a first deploy would reject, found offline.

cfn-lint and `sam validate` read template.yaml before the SAM transform, where the roles,
versions, permissions and API routes SAM generates do not exist yet: a dependency cycle,
a policy over IAM's size limit or a broken state machine definition passes there and
fails the deploy. Each module checks one thing on the template as CloudFormation receives
it (`template.translate`): `lint` (cfn-lint), `cycles` (the edge to cut), `limits`
(CloudFormation, IAM, Lambda, Step Functions and CloudWatch quotas), `asl` (the state
machines through asl-validator), `build` (`sam build` and the built sizes). `__main__`
runs them all.
"""
