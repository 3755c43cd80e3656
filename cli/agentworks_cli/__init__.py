"""The `agentworks` command line: the CLI client and the embedded local stack."""
