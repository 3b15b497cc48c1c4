"""`kubegap completion bash|zsh|fish`: shell completion scripts, generated from the command-line parser.

Every command's options are read from the same parser `kubegap` runs with, so the scripts cannot drift
from the commands. zsh loads the bash script through its `bashcompinit` layer.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

SHELLS = ("bash", "zsh", "fish")


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a command, as completion offers it: its flags and the values it takes."""

    flags: tuple[str, ...]
    choices: tuple[str, ...]  # empty: free value or no value
    takes_value: bool
    help: str


def commands(parser_for: Callable[[str], argparse.ArgumentParser]) -> dict[str, list[Option]]:
    """command -> its options; `parser_for(name)` builds the parser with that command's options loaded."""
    out: dict[str, list[Option]] = {}
    for name in _names(parser_for("lint")):
        sub = _names(parser_for(name))[name]
        out[name] = [
            Option(
                tuple(a.option_strings),
                tuple(str(c) for c in a.choices or ()),
                a.nargs != 0,
                " ".join((a.help or "").split()),
            )
            for a in sub._actions
            if (a.option_strings or a.choices) and a.help != argparse.SUPPRESS
        ]  # options, and positionals with fixed words (`policies list|show`, `completion bash|zsh|fish`)
    return out


def _names(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def script(shell: str, table: dict[str, list[Option]]) -> str:
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](table)


def _bash(table: dict[str, list[Option]]) -> str:
    cases = []
    for name, options in table.items():
        flags = " ".join(f for o in options for f in o.flags)
        words = " ".join(c for o in options if not o.flags for c in o.choices)
        values = "".join(
            f"      {'|'.join(o.flags)}) "
            f"COMPREPLY=($(compgen -W '{' '.join(o.choices)}' -- \"$cur\")); return;;\n"
            for o in options
            if o.choices and o.flags
        )
        cases.append(
            f'    {name})\n      case "$prev" in\n{values}      esac\n'
            f"      opts='{flags}'; words='{words}';;\n"
        )
    return f"""# kubegap completion for bash: eval "$(kubegap completion bash)"
_kubegap() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" cmd="" opts="" words="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${{COMP_WORDS[i]}}" in -*) ;; *) cmd="${{COMP_WORDS[i]}}"; break;; esac
  done
  if [ -z "$cmd" ]; then
    COMPREPLY=($(compgen -W '{" ".join(table)} --help --version -v' -- "$cur")); return
  fi
  case "$cmd" in
{"".join(cases)}  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$words" -- "$cur") $(compgen -f -- "$cur"))
  fi
}}
complete -o filenames -F _kubegap kubegap
"""


def _zsh(table: dict[str, list[Option]]) -> str:
    return (
        '# kubegap completion for zsh: eval "$(kubegap completion zsh)"\n'
        "autoload -U +X bashcompinit && bashcompinit\n" + _bash(table).split("\n", 1)[1]
    )


def _fish(table: dict[str, list[Option]]) -> str:
    lines = ["# kubegap completion for fish: kubegap completion fish | source", "complete -c kubegap -f"]
    for name in table:
        lines.append(f"complete -c kubegap -n __fish_use_subcommand -a {name}")
    for name, options in table.items():
        for o in options:
            parts = [f"complete -c kubegap -n '__fish_seen_subcommand_from {name}'"]
            if not o.flags:
                lines.append(" ".join([*parts, f"-a '{' '.join(o.choices)}'"]))
                continue
            parts += [f"-l {f[2:]}" if f.startswith("--") else f"-s {f[1:]}" for f in o.flags]
            if o.choices:
                parts.append(f"-xa '{' '.join(o.choices)}'")
            elif o.takes_value:
                parts.append("-r -F")
            if o.help:
                parts.append("-d " + "'" + o.help[:80].replace("'", "\\'") + "'")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"
