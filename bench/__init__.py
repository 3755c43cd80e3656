"""`make bench`: measured DynamoDB requests and capacity, cost per million messages, cold
start, throughput and wake latency of the real handlers on in-process moto."""
