"""`kubegap fix`: patches that settle findings, written into the manifests as their authors wrote them.

`nodes` finds fields in a document's text, `edits` and `scripts` make targeted text edits there,
`fixers` turns one finding into a patch, `session` checks each patch with the engine, `files` reads and
writes files safely, `command` is the CLI.
"""
