"""`kubegap fix`: patches that settle findings, written into the manifests as their authors wrote them.

`nodes` finds fields in a document's text; `edits` and `scripts` make targeted text edits there;
`fixers` maps each rule to its fix in `timeouts`, `variables` or `pods` (shared steps in `values`, the
finding's context in `target`); `checked` checks each patch with the engine; `files` reads and writes
files safely; `suggestions` offers each finding's patch on its own (SARIF); `reports` makes, in lint's
runs, the count of findings that can be fixed and those suggestions; `command` is the CLI.
"""
