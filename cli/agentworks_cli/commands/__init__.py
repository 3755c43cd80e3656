"""The CLI's command groups: each module adds its subcommands to the parser."""
