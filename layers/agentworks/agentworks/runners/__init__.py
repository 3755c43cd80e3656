"""Local runners (issue 10 item 6): the jobs `cli` workflow steps hand to an opted-in bridge,
which claims one, runs the coding-agent CLI on its computer and reports back."""
