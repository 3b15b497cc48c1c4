"""`kubegap fix`: patches that settle findings, written into the manifests as their authors wrote them.

`nodes` finds fields in a document's text; `edits` and `scripts` make targeted text edits there;
`fixers` maps each rule to its fix in `timeouts`, `variables` or `pods` (shared steps in `values`, the
finding's context in `target`); `checked` checks each patch with the engine; `files` reads and writes
files safely; `suggestions` offers each finding's patch on its own (SARIF); `count` tells `kubegap lint`
how many findings can be fixed; `command` is the CLI.
"""
