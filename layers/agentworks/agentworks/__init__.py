"""AgentWorks runtime library: domain logic, data access and models shared by every function."""
