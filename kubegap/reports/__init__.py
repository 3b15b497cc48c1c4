"""Output formats: each module renders the same findings (RULES.md §4) its own way; `registry` lists them
by name for every command, and says how to add one."""
