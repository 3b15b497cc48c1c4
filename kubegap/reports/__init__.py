"""Output formats: each module renders the same findings (RULES.md §4) its own way."""
