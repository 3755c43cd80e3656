"""The local stack: template.yaml's resources on embedded moto, the same handlers behind an
HTTP gateway, a scheduler tick and a TTL sweeper."""
