"""AWS on-demand list prices (us-east-1, USD) the product estimates its costs with.

One table for two readers: `make bench` prices what it measures (bench/prices.py), and
`GET /v1/usage` prices what an account used (agentworks.usage.costs). Free tiers are left
out on purpose: they belong to an AWS account, not to one tenant of a deployment.
"""

from __future__ import annotations

HTTP_API_PER_MILLION_REQUESTS = 1.00
LAMBDA_PER_MILLION_REQUESTS = 0.20
LAMBDA_ARM_PER_GB_SECOND = 0.0000133334
DYNAMODB_PER_MILLION_WRITE_UNITS = 0.625
DYNAMODB_PER_MILLION_READ_UNITS = 0.125
# Standard tables; DynamoDB adds 100 bytes of overhead to every item it stores.
DYNAMODB_STORAGE_PER_GB_MONTH = 0.25
DYNAMODB_ITEM_OVERHEAD_BYTES = 100
# Standard workflows: every state entered is a billed transition (retries included).
STEP_FUNCTIONS_PER_MILLION_TRANSITIONS = 25.00
SQS_PER_MILLION_REQUESTS = 0.40
SQS_REQUESTS_PER_MESSAGE = 3

# API Gateway WebSocket APIs (push delivery, issue 10). Messages are metered in 32 KB units.
WEBSOCKET_PER_MILLION_MESSAGES = 1.00
WEBSOCKET_PER_MILLION_CONNECTION_MINUTES = 0.25
MINUTES_PER_MONTH = 30 * 24 * 60
DAYS_PER_MONTH = 30
